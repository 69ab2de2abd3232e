"""Exact checks that must not refuse a correct rewording: numbers written another way (fractions of a
unit, sizes by binary prefix, percentages, durations in parts, NxM sizes) and negations matched by what
they govern, not counted — while a changed number or a dropped negation is still refused."""

from __future__ import annotations

import pytest

from pipeline.answers.verify import verify_request
from pipeline.answers.verify.anchors import anchors, proper_nouns
from pipeline.answers.verify.blocks import CitedBlock
from pipeline.answers.verify.sense import sense_problems


def exact(claim: str, evidence: str) -> list[str]:
    """The violations of the exact number check (the fitted model's verdict aside)."""
    out = verify_request({"answer": claim, "evidence": evidence})
    return [v for v in out["claims"][0]["violations"] if v.startswith("number ")]


@pytest.mark.parametrize(
    ("claim", "evidence"),
    [
        ("The status line is redrawn every quarter of a minute.", "The status line is redrawn every 15 seconds."),
        ("The buffer holds 16 KiB.", "The buffer holds 16384 bytes."),
        ("The buffer holds 16 KiB.", "The default buffer size is 16384."),
        ("Headers may total 16,384 bytes.", "Headers may total 16 KiB."),
        ("The log may use 512 KiB.", "The log may use 524288 bytes."),
        ("The poll interval is one minute and four seconds.", "The poll interval is 64 seconds."),
        ("Retries stop after an hour and a half.", "Retries stop after 90 minutes."),
        ("Writers block above 60 % of the limit.", "Writers block above 0.6 of the limit."),
        ("The window is 80 columns by 24 lines.", "The window is 80x24."),
        ("History before nineteen seventy is lost.", "History before 1970 is lost."),
        ("It never fails over a second time within an hour.", "It never fails over twice within one hour."),
    ],
)
def test_a_number_written_another_way_is_no_violation(claim, evidence):
    assert exact(claim, evidence) == []


@pytest.mark.parametrize(
    ("claim", "evidence"),
    [
        ("The status line is redrawn every half a minute.", "The status line is redrawn every 15 seconds."),
        ("The buffer holds 32 KiB.", "The default buffer size is 16384."),
        ("The poll interval is one minute and five seconds.", "The poll interval is 64 seconds."),
        ("Writers block above 70 % of the limit.", "Writers block above 0.6 of the limit."),
        ("The window is 80 columns by 25 lines.", "The window is 80x24."),
    ],
)
def test_a_changed_number_is_still_a_violation(claim, evidence):
    assert exact(claim, evidence)


def test_a_unit_after_its_number_is_no_name():
    assert proper_nouns("The buffer size is 16 KiB, set when HAProxy is built.") == ["haproxy"]


def _negation_flag(claim: str, evidence: str) -> bool:
    problems = sense_problems(claim, anchors(claim), [CitedBlock(evidence)])
    return any("negation differs" in p for p in problems)


EV = (
    "Switching branches will not update paths outside the checkout, and the commit command will not "
    "record paths outside it as deleted."
)


def test_negations_are_matched_by_what_they_govern_not_counted():
    assert not _negation_flag("Switching branches will not update paths outside the checkout.", EV)
    assert _negation_flag("Switching branches updates paths outside the checkout.", EV)
    failover = "The cluster does not fail over again within one hour of a recovery."
    assert _negation_flag("The cluster fails over again within one hour of a recovery.", failover)
    assert not _negation_flag("The cluster does not fail over again within an hour of a recovery.", failover)
    loaded = "Unless the module is loaded, packets will not be filtered, so not loading the module avoids it."
    assert _negation_flag("Packets are filtered even when the module is not loaded.", loaded)

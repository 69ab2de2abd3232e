"""A reworded claim's names, negations and converses read as a reader of the page reads them: a product or
component the evidence leaves implicit is a name the claim adds, not one put in the place of the
evidence's; two negations that govern the same words say the same thing; "A before B" is "B after A".
What changes the claim's sense is still caught: a name of the evidence's kind replaced, a negation added,
one logical word edited."""

from __future__ import annotations

import numpy as np
import pytest

from pipeline.answers.verify import calibrate, features, judge, logic, names, verify_request
from pipeline.answers.verify.anchors import anchors, proper_nouns
from pipeline.answers.verify.blocks import CitedBlock
from pipeline.answers.verify.polarity import differs
from pipeline.answers.verify.sense import ADDED, sense_problems
from pipeline.answers.words import content_keys


def problems(claim: str, evidence: str) -> list[str]:
    return sense_problems(claim, anchors(claim), [CitedBlock(evidence)])


def test_a_product_the_evidence_leaves_implicit_is_an_added_name_not_a_missing_one():
    evidence = "If the cache is full, the longest idle sessions will be purged despite their lifetime."
    claim = "When the cache is full, Hopper purges the longest idle sessions."
    found = problems(claim, evidence)
    assert f"name 'hopper' {ADDED}" in found
    assert not any("is not in the cited evidence" in p for p in found)
    reading = features.read(claim, [CitedBlock(evidence)])
    assert reading.x["name_extra"] == 1.0 and reading.x["name_apart"] == 0.0


def test_an_identifier_the_evidence_leaves_implicit_is_added_one_in_anothers_place_refused():
    # an entry's text says "this option"; the claim names the option the entry is about
    evidence = "This option limits the number of RCPT commands sent in one transaction. Zero disables the limit."
    reading = features.read("Setting rcpt_cap to zero removes the limit on RCPT commands.", [CitedBlock(evidence)])
    assert reading.hard == [] and reading.x["name_extra"] == 1.0
    assert any(p.startswith("identifier 'rcpt_cap'") and p.endswith(ADDED) for p in reading.soft)
    # the sentence it rests on names an identifier (or a capitalised code word) the claim leaves out: replaced
    for claim, evidence in (
        ("reload sends SIGUSR1 to the servers.", "reload - reconfigures the servers by sending the SIGHUP signal."),
        ("The names of objects to show default to 'ORIG_HEAD'.", "The names of objects to show (defaults to 'HEAD')."),
        (
            "Close the descriptor with epoll_ctl(2) when done.",
            "When done, the descriptor should be closed by close(2).",
        ),
    ):
        hard = features.read(claim, [CitedBlock(evidence)]).hard
        assert any(h.startswith("identifier") and "is not in the cited evidence" in h for h in hard), claim


def test_a_name_in_the_place_of_one_of_its_kind_in_the_evidence_is_still_refused():
    evidence = "The driver speaks ODBC to the database server."
    claim = "The driver speaks JDBC to the database server."
    assert problems(claim, evidence) == ["name 'jdbc' is not in the cited evidence"]
    reading = features.read(claim, [CitedBlock(evidence)])
    assert reading.x["name_apart"] == 1.0 and reading.x["name_extra"] == 0.0


def test_a_name_of_another_kind_left_out_is_no_name_replaced():
    # the claim leaves out the lowercase term "snat" and names the acronym NAT: no name of its kind
    sentence = "The masquerade statement is a special form of snat for dynamic addresses."
    assert names.stands_for("nat", "Masquerade is a kind of source NAT for dynamic addresses.", sentence) is None
    assert names.stands_for("odbc", "It speaks ODBC.", "It speaks JDBC.") == "jdbc"


@pytest.mark.parametrize(
    ("word", "kind"),
    [("SIGHUP", "acronym"), ("Hopper", "capitalised"), ("memfile", "term"), ("TLSv1", "code")],
)
def test_a_names_kind_is_what_it_looks_like_as_written(word, kind):
    assert names.kind(word.lower(), f"It uses {word} here.") == kind


def test_a_sentence_opening_with_a_verb_and_the_name_its_object_is_no_part_of_the_name():
    assert proper_nouns("Lowering the MTU update time makes the network converge faster.") == ["mtu"]
    assert proper_nouns("The Open Group publishes it.") == ["open group"]
    assert proper_nouns("First for Women was started first.") == ["first for women"]


def test_two_negations_governing_the_same_words_say_the_same_thing_and_one_added_still_differs():
    claim = "A soft reconfiguration does not restart protocols when filters change."
    negated = "Changes in filters do not cause the daemon to restart affected protocols."
    plain = "Changes in filters cause the daemon to restart affected protocols."
    assert not differs(claim, negated, set(content_keys(claim)))
    assert differs(claim, plain, set(content_keys(claim)))


def test_an_order_or_comparison_said_from_the_other_end_is_no_change_but_an_edit_is():
    evidence = [
        "The retry delay specifies how long the client waits.",
        "This delay should be greater than the heartbeat interval.",
    ]
    assert logic.problem("The heartbeat interval should be smaller than the retry delay.", evidence) is None
    assert logic.problem("This delay should be smaller than the heartbeat interval.", evidence) is not None
    order = ["The daemon tries inotify and kqueue before polling."]
    assert logic.problem("Polling is tried after inotify and kqueue.", order) is None
    assert logic.problem("The daemon tries inotify and kqueue after polling.", order) is not None


def test_the_same_order_comparison_or_preference_with_its_two_sides_traded_is_refused():
    evidence = [
        "full-upgrade upgrades installed packages, removing or installing packages as necessary.",
        "This command is less conservative than safe-upgrade and thus more likely to remove packages.",
    ]
    traded = logic.problem("safe-upgrade is less conservative than full-upgrade, so it removes more.", evidence)
    assert traded == "logical word changed: the two sides of 'less' trade places against the evidence"
    for kept in (
        "full-upgrade is less conservative than safe-upgrade.",  # as the evidence says it
        "safe-upgrade is more conservative than full-upgrade.",  # from the other end
        "The full-upgrade command is less conservative than safe-upgrade, so it removes more.",
    ):
        assert logic.problem(kept, evidence) is None, kept
    order = ["Run the backup before the upgrade."]
    assert logic.problem("Run the upgrade before the backup.", order) is not None
    assert logic.problem("Run the upgrade after the backup.", order) is None
    choice = ["For a clean shutdown, send the master process SIGQUIT rather than SIGTERM."]
    assert "'rather than'" in (logic.problem("Send the master process SIGTERM rather than SIGQUIT.", choice) or "")
    assert logic.problem("For a clean shutdown, send SIGQUIT to the master process instead of SIGTERM.", choice) is None
    assert logic.problem("Send the master process SIGTERM instead of SIGQUIT.", choice) is not None


def test_a_logical_word_replaced_in_its_place_is_refused_though_the_sentence_says_it_elsewhere():
    switch = ["The debug console is disabled by default; however, many examples have it enabled."]
    assert logic.problem(
        "The debug console is enabled by default; however, many examples have it enabled.", switch
    ) == ("logical word changed: 'enabled' where the evidence says 'disabled'")
    compared = ["This mode is less strict than the default and thus more likely to accept bad input."]
    edited = "This mode is more strict than the default and thus more likely to accept bad input."
    assert logic.problem(edited, compared) == "logical word changed: 'more' where the evidence says 'less'"
    order = ["The index is built before the cache is warmed, and the cache is dropped after that."]
    edited = "The index is built after the cache is warmed, and the cache is dropped after that."
    assert logic.problem(edited, order) == "logical word changed: 'after' where the evidence says 'before'"
    # a word of the same value in its place, and a comparison said from the other end, are rewordings
    assert logic.problem("The debug console is switched off by default.", switch) is None
    assert logic.problem("Memory is more expensive than disk.", ["Disk is less expensive than memory."]) is None


def test_a_quotation_with_a_logical_word_changed_outside_its_quotes_is_no_quotation():
    ev = 'The second form ("job --abort") can only be run after the job has stopped with an error.'
    out = verify_request(
        {
            "answer": 'The second form ("job --abort") can only be run before the job has stopped with an error.',
            "evidence": ev,
        }
    )
    assert not out["verified"]
    assert out["claims"][0]["violations"] == ["logical word changed: 'before' where the evidence says 'after'"]
    out = verify_request(
        {"answer": 'The second form ("job --abort") can only be run after the job has stopped.', "evidence": ev}
    )
    assert out["verified"] and out["claims"][0]["support"] == "quoted"


def test_a_threshold_is_raised_until_one_set_is_right_often_enough():
    xs = [{"a": v} for v in (0.1, 0.3, 0.5, 0.7, 0.9)]
    ys = [False, False, False, True, True]
    fitted = {**judge.fit(np.array([[x["a"]] for x in xs]), np.array(ys, float), ("a",)).dump(), "threshold": 0.2}
    model = judge.Model.load(fitted)
    assert model is not None
    needed = min(
        t
        for t in np.round(np.arange(0.2, 0.81, 0.02), 2)
        if all((model.probability(x) >= t) == y for x, y in zip(xs, ys, strict=True))
    )
    assert calibrate.raised(fitted, xs, ys, (0, 0), 1.0)["threshold"] == needed
    assert calibrate.raised(fitted, xs, ys, (0, 0), 0.0)["threshold"] == 0.2


def test_a_bare_word_identifier_looks_like_a_name_and_one_with_signs_is_code():
    assert names.names_of("Releases go out through ArgoCD.") == {"argocd": "capitalised"}
    assert names.names_of("Set max_rcpt first.")["max rcpt"] == "code"

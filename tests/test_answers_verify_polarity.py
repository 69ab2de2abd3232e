"""Polarity read as a sentence asserts it: an implicit negative ("stops X from", "leaves X alone", "lacks",
"rather than", "no longer", a negated bound, "cannot … without") says what the explicit "not" says, so a
correct rewording is not refused for a negation it does not change — and a negation changed still is."""

from __future__ import annotations

import pytest

from pipeline.answers.verify import logic
from pipeline.answers.verify.anchors import anchors
from pipeline.answers.verify.blocks import CitedBlock
from pipeline.answers.verify.polarity import asserted
from pipeline.answers.verify.sense import OTHER_SIDE, sense_problems


def negation_flag(claim: str, evidence: str) -> bool:
    problems = sense_problems(claim, anchors(claim), [CitedBlock(evidence)])
    return any("negation differs" in p for p in problems)


# (a correct rewording, its evidence, the same rewording with its polarity turned round)
CASES = [
    (  # "stops X from V-ing" is "X does not V"
        "Setting the flag to zero stops the daemon from opening its admin port.",
        "If the flag is set to 0, the daemon will not open the admin port.",
        "Setting the flag to zero makes the daemon open its admin port.",
    ),
    (  # "prevents X from V-ing"
        "The lock prevents other writers from changing the journal.",
        "While the lock is held, other writers cannot change the journal.",
        "The lock lets other writers change the journal.",
    ),
    (  # "leaves X alone" is "does not change X"; "without making changes" says it too
        "In dry-run mode the tool prints its plan and leaves the mailbox alone.",
        "In dry-run mode the tool prints its plan without making any changes to the mailbox.",
        "In dry-run mode the tool prints its plan and rewrites the mailbox.",
    ),
    (  # "lacks" is "has no", a plain negation, not a verb of failing
        "Archived pages lack an index entry.",
        "Archived pages do not have an index entry.",
        "Archived pages carry an index entry.",
    ),
    (  # "rather than Y" is "not Y"
        "Clients reach the ledger through the proxy rather than the database server.",
        "Clients connect to the ledger through the proxy, never to the database server directly.",
        "Clients reach the ledger through the database server.",
    ),
    (  # "no longer V" and "stop V-ing": each turns round a verb the other words otherwise
        "Peers that no longer answer are dropped after five polls.",
        "Peers that stop responding are dropped after five polls.",
        "Peers that answer are dropped after five polls.",
    ),
    (  # "not … with" and "without" on the same word
        "The nightly backup is not compressed with gzip.",
        "The nightly backup is written without gzip compression.",
        "The nightly backup is compressed with gzip.",
    ),
    (  # one negation a side, turning round words the other says otherwise: both deny, in other words
        "The relay closes the session when no reply arrives within the grace period.",
        "If a reply is not received within the grace period, the relay closes the session.",
        "The relay closes the session when a reply arrives within the grace period.",
    ),
    (  # the same with a verb of the claim's own: "lacks support" for "is not implemented"
        "On embedded boards the agent lacks support for sandboxing its workers.",
        "Worker sandboxing is not implemented in the agent's embedded build.",
        "On embedded boards the agent supports sandboxing its workers.",
    ),
    (  # "cannot have X without Y" says "X requires Y": two negations, none asserted
        "Having a replica requires that a primary be configured.",
        "You cannot have a replica without configuring a primary.",
        "You can have a replica without configuring a primary.",
    ),
]


@pytest.mark.parametrize(("claim", "evidence", "turned"), CASES)
def test_an_implicit_negative_matches_the_explicit_one(claim, evidence, turned):
    assert not negation_flag(claim, evidence)
    assert negation_flag(turned, evidence)


def test_a_negated_bound_is_the_converse_bound():
    evidence = "The default is 60 seconds, which means that you can't keep a message more than 60 seconds."
    assert asserted("you can't keep a message more than 60 seconds") == "you can keep a message at most 60 seconds"
    assert asserted("it does not accept fewer than 3 peers") == "it does accept at least 3 peers"
    assert not negation_flag("By default a message can be kept for at most one minute.", evidence)
    # the number's bound as the evidence asserts it: from above, as the claim's
    kept = "By default a message can be kept for at most one minute."
    assert not any(OTHER_SIDE in p for p in sense_problems(kept, anchors(kept), [CitedBlock(evidence)]))
    assert logic.problem("By default a message can be kept for at most one minute.", [evidence]) is None
    why = logic.problem("By default a message can be kept for at least one minute.", [evidence])
    assert why is not None and "'at least' where the evidence says 'at most'" in why


def test_a_claim_joining_sentences_keeps_the_negation_of_the_other_one():
    evidence = "The resolver uses the system's own facilities. It may not need any network access."
    joined = "The resolver relies on the system's facilities and may not need network access."
    assert not negation_flag(joined, evidence)
    assert negation_flag(
        "The resolver relies on the system's facilities and may not read its own facilities.", evidence
    )


def test_rewrites_stay_within_their_words():
    assert asserted("The script stops the service.") == "the script stops the service."
    assert asserted("Limits are no longer than 5 s.") == "limits are at most 5 s."
    assert asserted("It is never longer than the default.") == "it is never longer than the default."
    assert asserted("It keeps logs from the last day.") == "it keeps logs from the last day."
    # "stops anything": a pronoun after the verb, not a verb that stops
    assert asserted("Before it stops anything it checks the queue.") == "before it stops anything it checks the queue."

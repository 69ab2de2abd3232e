"""Whether a claim keeps the evidence's relations between its words (issue 45), and the gate words."""

from __future__ import annotations

from pipeline.answers.verify import logic
from pipeline.answers.verify.relations import NAMES, relations

EVIDENCE = [
    "The proxy forwards requests to the backend and writes every refusal to the audit log.",
    "Old keys stay in the cache for one day.",
]


def test_a_rewording_keeps_the_relations_a_recombination_breaks():
    kept = relations("The proxy forwards requests to the backend.", EVIDENCE)
    recombined = relations("The backend writes requests to the proxy log.", EVIDENCE)
    assert kept["span"] == 1.0 and kept["pairs"] == 1.0
    assert recombined["span"] < kept["span"] and recombined["pairs"] < kept["pairs"]


def test_cover_is_the_share_of_the_clause_the_claim_draws_on():
    # The claim says the whole first clause: cover is high though the sentence goes on.
    whole = relations("The proxy forwards requests to the backend.", EVIDENCE)["cover"]
    # Two words of it, with a relation of the claim's own between them: little of the clause.
    thin = relations("The proxy is the backend.", EVIDENCE)["cover"]
    assert whole >= 2 * thin


def test_a_passive_rewording_keeps_its_pairs_in_the_other_order():
    out = relations("Requests are forwarded to the backend by the proxy.", EVIDENCE)
    assert out["pairs"] == 1.0


def test_a_claim_without_content_words_or_evidence_is_neutral():
    neutral = {**dict.fromkeys(NAMES, 1.0), "order": 0.0}
    assert relations("It is.", EVIDENCE) == neutral
    assert relations("The proxy forwards requests.", []) == neutral


def test_a_gate_word_turned_round_is_a_logical_change_unless_a_negation_turns_it():
    assert logic.changed("The server refuses connections on port 8080.", "The server accepts connections on port 8080.")
    assert logic.changed("Root may reject the lock.", "Root may accept the lock.") == (
        "'reject' where the evidence says 'accept'"
    )
    # "does not accept" says what "rejects" says: the polarity check, not this one, compares them.
    assert logic.changed("The server rejects connections.", "The server does not accept connections.") is None
    assert logic.changed("The server allows connections.", "The server permits connections.") is None


def test_order_counts_the_claims_words_out_of_the_sentences_order_a_passive_read_actively():
    ev = ["Entries are created by the analyzer and later read by the planner."]
    assert relations("Entries are created by the analyzer and later read by the planner.", ev)["order"] == 0.0
    assert relations("Entries are created by the planner and later read by the analyzer.", ev)["order"] > 0.0
    passive = ["The archive is written by the backup job."]
    assert relations("The backup job writes the archive.", passive)["order"] == 0.0

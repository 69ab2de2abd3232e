"""The verifier's model of what a claim asserts: logical words, support and probability, the calibrated
judge's parameters file, soft alignment, and the optional NLI judge (a tiny random cross-encoder)."""

from __future__ import annotations

import json

import pytest

from pipeline.answers.model import Claim
from pipeline.answers.verify import align, calibrate, features, judge, logic, policy, verify, verify_request
from pipeline.answers.verify.audit import audit_mode

EVIDENCE = (
    "The backup must be taken before the upgrade. Old snapshots are always kept for at least 30 days. "
    "Set the option to enable compression unless the disk is slow."
)


@pytest.mark.parametrize(
    ("claim", "theirs", "mine"),
    [
        ("The backup may be taken before the upgrade.", "must", "may"),
        ("The backup must be taken after the upgrade.", "before", "after"),
        ("Old snapshots are sometimes kept for at least 30 days.", "always", "sometimes"),
        ("Old snapshots are always kept for at most 30 days.", "at least", "at most"),
        ("Set the option to disable compression unless the disk is slow.", "enable", "disable"),
        ("Set the option to enable compression if the disk is slow.", "unless", "if"),
    ],
)
def test_a_changed_logical_word_is_refused_naming_both_words(claim, theirs, mine):
    out = verify_request({"answer": claim, "evidence": EVIDENCE})
    assert not out["verified"] and out["audit_mode"] == "UNGROUNDED"
    (why,) = [v for v in out["claims"][0]["violations"] if v.startswith("logical word")]
    assert f"'{mine}' where the evidence says '{theirs}'" in why


def test_an_added_only_is_refused_and_the_unedited_sentence_is_quoted():
    out = verify_request({"answer": "Only the backup must be taken before the upgrade.", "evidence": EVIDENCE})
    assert "logical word changed: 'only', which the evidence does not say" in out["claims"][0]["violations"]
    same = verify_request({"answer": "The backup must be taken before the upgrade.", "evidence": EVIDENCE})
    assert same["audit_mode"] == "STRICT" and same["claims"][0]["support"] == "quoted"


def test_a_claim_of_all_where_the_evidence_says_only_is_refused():
    sentence = "The tool steps the clock only during its first three updates."
    why = logic.problem("The tool steps the clock at any point while it runs.", [sentence])
    assert why is not None and "'any' where the evidence says 'only'" in why
    assert logic.problem("The tool steps the clock during its first three updates.", [sentence]) is None
    assert logic.problem("Only during its first three updates does the tool step the clock.", [sentence]) is None


@pytest.mark.parametrize(
    ("claim", "sentence"),
    [
        ("You have to take the backup prior to the upgrade.", "The backup must be taken before the upgrade."),
        ("Snapshots are kept for no less than 30 days.", "Snapshots are kept for at least 30 days."),
        ("It enables compression.", "Compression is enabled by it."),
        ("The backup is taken before the upgrade.", "The backup must be taken before the upgrade."),
    ],
)
def test_words_of_one_value_stand_for_each_other_and_a_dropped_qualifier_is_no_change(claim, sentence):
    assert logic.problem(claim, [sentence]) is None


def test_the_logical_change_is_read_against_the_sentence_the_claim_is_aligned_to():
    sentences = ["Logs are rotated daily.", "The backup must be taken before the upgrade."]
    assert logic.align("The backup may be taken before the upgrade.", sentences) == sentences[1]
    assert "'may' where the evidence says 'must'" in (logic.problem("The backup may be taken first.", sentences) or "")
    # a value the evidence says elsewhere is no change: a rewording may join two of its sentences
    joined = "The backup, which may be compressed, must be taken before the upgrade."
    assert logic.problem(joined, ["Backups may be compressed.", sentences[1]]) is None
    # but not in the place of the sentence's own word: there it is the sentence edited
    edited = logic.problem("The backup may be taken first.", ["Logs may be rotated daily.", sentences[1]])
    assert edited == "logical word changed: 'may' where the evidence says 'must'"


def test_support_and_probability_are_in_every_claim_and_the_modes_follow_them():
    answer = "The backup must be taken before the upgrade. [E1]\nBackups are made ahead of upgrading. [E1]"
    v = verify(answer, {"E1": EVIDENCE})
    quoted, reworded = v.claims
    assert (quoted.support, quoted.probability, quoted.strategy) == ("quoted", None, "span")
    assert reworded.support in ("supported", "unsupported") and isinstance(reworded.probability, float)
    assert 0.0 <= reworded.probability <= 1.0
    assert reworded.verified == (reworded.support != "unsupported")
    d = reworded.as_dict()
    assert d["support"] == reworded.support and d["probability"] == reworded.probability
    assert audit_mode([quoted]) == "STRICT"
    assert audit_mode([quoted, Claim("x", ("E1",), True, "reworded", support="supported", probability=0.9)]) == "HYBRID"
    assert audit_mode([quoted, Claim("x", ("E1",), False, None, support="unsupported", probability=0.1)]) == (
        "UNGROUNDED"
    )


def test_a_claim_recorded_before_support_existed_reads_it_from_verified_and_strategy():
    assert Claim("a", ("E1",), True, "quote").support == "quoted"
    assert Claim("a", ("E1",), True, "paraphrase").support == "supported"
    assert Claim("a", ("E1",), False, None).support == "unsupported"


def test_the_parameters_file_gives_each_value_its_provenance(monkeypatch, tmp_path):
    raw = json.loads(policy.SHIPPED.read_text())
    assert raw["format"] == policy.FORMAT
    for name, rule in raw["rules"].items():
        assert rule["provenance"] and "value" in rule, name
    assert set(raw["model"]["names"]) == set(raw["model"]["weights"]) and 0 < raw["model"]["threshold"] < 1
    assert raw["model"]["provenance"]["sources"]
    assert policy.record()["params"] == policy.DIGEST[:16]
    other = tmp_path / "verifier.json"
    other.write_text(json.dumps({**raw, "model": None}))
    monkeypatch.setenv("VERIFIER_PARAMS", str(other))
    assert policy.path() == other and policy.read()[0]["model"] is None
    other.write_text("{}")
    with pytest.raises(Exception, match="unset VERIFIER_PARAMS"):
        policy.read()


def _encoder(tmp_path):
    from sentence_transformers import SentenceTransformer

    from tests.tiny_models import embedding_model

    return align.TokenEncoder(SentenceTransformer(str(embedding_model(tmp_path / "emb")), device="cpu"))


def test_soft_alignment_is_batched_cached_and_one_for_the_same_words(tmp_path):
    enc = _encoder(tmp_path)
    claim, same, other = enc.encode(["Backups expire after thirty days.", "Backups expire after thirty days.", "x"])
    # "thirty days" is one quantity, read in seconds: its unit carries the number's key
    assert claim is same and claim.keys == ("backup", "expir", "#2.592e+06", "#2.592e+06")
    recall, weakest = align.scores(claim, [same])
    assert recall == pytest.approx(1.0) and weakest == pytest.approx(1.0)
    low, _ = align.scores(enc.encode(["Snapshots vanish quickly."])[0], [claim])
    assert low < 1.0
    assert align.scores(claim, [other]) == (0.0, 0.0)


def test_an_nli_judge_enters_the_calibrated_model_as_a_feature(tmp_path):
    """A tiny randomly initialised cross-encoder with NLI labels: the plumbing, not the accuracy."""
    from sentence_transformers import CrossEncoder
    from transformers import BertForSequenceClassification

    from tests.tiny_models import _bert

    path = tmp_path / "nli"
    labels = {0: "contradiction", 1: "entailment", 2: "neutral"}
    cfg = _bert(path, 0, 512, num_labels=3, id2label=labels, label2id={v: k for k, v in labels.items()})
    BertForSequenceClassification(cfg).save_pretrained(path)
    nli = judge.NliJudge(CrossEncoder(str(path), device="cpu"))
    assert nli.entail == 1
    rows = [
        ("Backups are made ahead of upgrading.", True),
        ("Snapshots are deleted on the first day.", False),
        ("Compression is switched on except on slow disks.", True),
        ("Nothing about the weather is kept.", False),
    ]
    align.use(_encoder(tmp_path))
    try:
        seen = calibrate.examine([(c, EVIDENCE) for c, _ in rows], nli)
        kept = [(e.x, y) for e, (_, y) in zip(seen, rows, strict=True) if e.x is not None]
        assert kept and all(0.0 <= x["nli"] <= 1.0 for x, _ in kept)
        names = (*features.BASE, "nli")
        fitted = calibrate.fit_model([x for x, _ in kept] * 2, [True, False] * len(kept), names)
        judge.use(judge.Model.load({**fitted, "threshold": 0.5}), judge.Model.load({**fitted, "threshold": 0.5}))
        judge.use_nli(nli)
        v = verify("Backups are made ahead of upgrading. [E1]", {"E1": EVIDENCE})
        assert v.claims[0].probability is not None or v.claims[0].support == "quoted"
    finally:
        judge.use(None, None)
        judge.use_nli(None)
        align.use(None)

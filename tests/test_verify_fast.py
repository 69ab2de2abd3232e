"""The verifier's fast paths change no verdict: word vectors from ONNX Runtime are torch's, a claim whose
every word its evidence holds skips the model with the scores the model would give, cached sentences are
what encoding them again gives, and a sentence's vectors do not depend on what it is batched with. And
`docforge verify` says its throughput."""

from __future__ import annotations

import json

import numpy as np
import pytest

from pipeline.answers.verify import align, verify_request

EVIDENCE = (
    "The backup must be taken before the upgrade. Old snapshots are always kept for at least 30 days. "
    "Set the option to enable compression unless the disk is slow."
)
CLAIMS = [
    "The backup must be taken before the upgrade.",  # quoted: no model
    "Snapshots that are old are kept for at least 30 days.",  # every word held: (1, 1) without the model
    "Backups are made ahead of upgrading.",  # reworded: the model
    "Compression is switched on except on slow disks.",
    "Old snapshots are deleted after a day.",  # wrong: refused by an exact check or the model
    "The disk is slow, so set the option to enable compression.",
    "Keep old snapshots at least 30 days, always.",
    "Nothing about the weather is kept.",
]


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    from tests.tiny_models import embedding_model

    return embedding_model(tmp_path_factory.mktemp("emb") / "emb")


def _full(enc: align.TokenEncoder, pairs) -> list[tuple[float, float]]:
    """The scores with the model for every claim (no lexical shortcut)."""
    out = []
    for s, ev in pairs:
        claim, *sents = enc.encode([s, *ev])
        out.append(align.scores(claim, sents))
    return out


def test_onnx_word_vectors_are_torchs(model, tmp_path):
    pytest.importorskip("onnxruntime")
    from sentence_transformers import SentenceTransformer

    from pipeline.config import EmbeddingConfig
    from pipeline.embed import Embedder

    onnx = align.from_embedder(Embedder(EmbeddingConfig(model=str(model), device="cpu"), cache_dir=tmp_path))
    torch = align.TokenEncoder(SentenceTransformer(str(model), device="cpu"))
    texts = [*CLAIMS, *EVIDENCE.split(". "), "x", "A much longer sentence, " * 30]  # cut at MAX_TOKENS
    for a, b in zip(onnx.encode(texts), torch.encode(texts), strict=True):
        assert a.keys == b.keys and np.abs(a.vectors - b.vectors).max(initial=0.0) <= 1e-4


def test_the_lexical_shortcut_and_the_cache_give_the_models_scores(model):
    from sentence_transformers import SentenceTransformer

    sentences = EVIDENCE.split(". ")
    pairs = [(c, sentences) for c in CLAIMS] + [("x", sentences), ("Backups expire.", ["x"])]
    enc = align.TokenEncoder(SentenceTransformer(str(model), device="cpu"))
    fast = enc.align(pairs)
    assert fast.count((1.0, 1.0)) >= 3  # the quote, the claim in the evidence's words, no content words
    assert fast == _full(align.TokenEncoder(SentenceTransformer(str(model), device="cpu")), pairs)
    assert enc.align(pairs) == fast  # from the cache
    assert enc.encode(CLAIMS[:1])[0] is enc.encode(CLAIMS[:1])[0]


def test_verdicts_and_probabilities_are_the_same_without_the_fast_paths(model, monkeypatch):
    from sentence_transformers import SentenceTransformer

    def verdicts() -> list[dict]:
        align.use(align.TokenEncoder(SentenceTransformer(str(model), device="cpu")))  # nothing cached
        try:
            return [verify_request({"answer": c, "evidence": EVIDENCE}) for c in CLAIMS]
        finally:
            align.use(None)

    fast = verdicts()
    monkeypatch.setattr(align.TokenEncoder, "align", _full)
    slow = verdicts()
    assert fast == slow  # the marks, the reasons and the probabilities, exactly
    assert any(c["probability"] is not None for v in fast for c in v["claims"])  # the model judged some


def test_a_sentences_vectors_do_not_depend_on_its_batch(model, tmp_path):
    """Sentences are batched by length across every claim of a run: a sentence's vectors are the ones it
    gets alone, to the bit (ONNX Runtime), whatever shares its batch and whatever its padding."""
    pytest.importorskip("onnxruntime")
    from pipeline.config import EmbeddingConfig
    from pipeline.embed import Embedder

    emb = Embedder(EmbeddingConfig(model=str(model), device="cpu"), cache_dir=tmp_path)
    texts = [*CLAIMS, *EVIDENCE.split(". "), "Short one.", "A rather longer sentence than the others, " * 3]
    together = align.from_embedder(emb).encode(texts)
    for text, enc in zip(texts, together, strict=True):
        alone = align.from_embedder(emb).encode([text])[0]  # a new encoder: nothing cached
        assert alone.keys == enc.keys and np.array_equal(alone.vectors, enc.vectors)
    lengths = [len(t.ids) for t in align.from_embedder(emb).tokens(texts)]
    for batch in align.like_length(align.from_embedder(emb).tokens(texts)):
        assert len(batch) <= align.BATCH and min(lengths[i] for i in batch) >= align.SLACK * max(
            lengths[i] for i in batch
        )
    assert sorted(i for b in align.like_length(align.from_embedder(emb).tokens(texts)) for i in b) == list(
        range(len(texts))
    )


def test_verify_says_its_throughput_in_80_columns(tmp_path):
    from click.testing import CliRunner

    from docforge.cli import main
    from docforge.cli.verify import throughput

    said = throughput(12_345, 123.45, 1.5)
    assert said[0] == "verified 12,345 answers in 123.45 s: 100 answers/s"
    assert said[1] == "  of which 1.50 s starting (process, verifier, model): 101 answers/s after"
    assert throughput(1, 0.9, 0.0) == ["verified 1 answer in 0.90 s"]  # no start measured, no rate for one
    assert throughput(3, 0.9, 0.8) == [
        "verified 3 answers in 0.90 s",
        "  of which 0.80 s starting (process, verifier, model)",
    ]
    assert (
        throughput(600, 6.0, 1.0, model=False)[1]
        == "  of which 1.00 s starting (process, verifier): 120 answers/s after"
    )
    assert throughput(0, 0.5, 0.4) == ["verified 0 answers in 0.50 s"]
    assert all(len(line) <= 80 for line in throughput(10**7, 99_999.99, 9_999.99))
    path = tmp_path / "in.jsonl"
    path.write_text(json.dumps({"answer": "The backup must be taken before the upgrade.", "evidence": EVIDENCE}) + "\n")
    res = CliRunner().invoke(main, ["verify", str(path)])
    assert res.exit_code == 0 and res.stderr.startswith("verified 1 answer in ")
    assert all(len(line) <= 80 for line in res.stderr.splitlines())

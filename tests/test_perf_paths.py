"""Fast correctness checks for the performance paths (issue: performance).

Pre-tokenised encoding equals sentence-transformers' own; the ONNX exports stay
close to torch and are cached; the cold bulk load and the row-by-row swap give
the same index (indexes included); the vector writer surfaces its errors; the
progress display prints what a user needs and nothing when not installed.
"""

from __future__ import annotations

import io

import numpy as np
import psycopg
import pytest

from docforge.cli import progress as terminal
from pipeline import progress
from pipeline.config import EmbeddingConfig, load_settings
from pipeline.embed import Embedder
from pipeline.embed.backends import batches
from pipeline.errors import StoreError
from pipeline.ingest import IngestContext, ingest_source

TEXTS = [
    "short",
    "",
    "A somewhat longer sentence about deploying the docs site. " * 3,
    "# Heading\n\nSome `code` and a [link](https://example.com) — ünïcödé.",
    "x " * 400,
]


def test_pretokenised_encode_equals_sentence_transformers(embedder):
    got = embedder.encode(TEXTS)
    want = embedder.reference_encode(TEXTS)
    assert got.shape == (len(TEXTS), embedder.dimension) and got.dtype == np.float32
    np.testing.assert_allclose(got, want, atol=2e-5)  # same ids, same order; batch padding only
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)


def test_encode_ids_keeps_input_order(embedder):
    ids = [e.ids for e in embedder.encoder_tokenizer.encode_batch(TEXTS)]
    assert max(len(i) for i in ids) == embedder.max_seq_length  # the long text is truncated to the window
    one_by_one = np.stack([embedder.encode_ids([i])[0] for i in ids])
    np.testing.assert_allclose(embedder.encode_ids(ids), one_by_one, atol=2e-5)


def test_a_batch_is_closed_before_a_text_under_half_its_longest():
    lengths = [128, 60, 58, 40, 31, 30, 29, 12, 9, 3]
    order = list(range(len(lengths)))  # longest first, as encode_ids sorts them
    assert list(batches(order, lengths, 32)) == [[0], [1, 2, 3, 4, 5], [6], [7, 8], [9]]
    assert list(batches(order, lengths, 2)) == [[0], [1, 2], [3, 4], [5, 6], [7, 8], [9]]
    assert list(batches(list(range(40)), [256] * 40, 32)) == [list(range(32)), list(range(32, 40))]


@pytest.mark.parametrize("backend, min_cos", [("onnx", 0.99999), ("onnx-int8", 0.97)])
def test_onnx_backends_track_torch_and_are_cached(backend, min_cos, embedder, tmp_path):
    pytest.importorskip("onnxruntime")
    emb = Embedder(EmbeddingConfig(backend=backend), cache_dir=tmp_path)
    torch = Embedder(EmbeddingConfig(backend="torch"))
    cos = np.sum(emb.encode(TEXTS) * torch.encode(TEXTS), axis=1)
    assert cos.min() >= min_cos
    files = {p.name: p.stat().st_mtime_ns for p in tmp_path.rglob("*.onnx")}
    assert "model.onnx" in files and ("model_int8.onnx" in files) == (backend == "onnx-int8")
    again = Embedder(EmbeddingConfig(backend=backend), cache_dir=tmp_path)
    again.encode(["cached"])
    assert {p.name: p.stat().st_mtime_ns for p in tmp_path.rglob("*.onnx")} == files  # not re-exported


def test_queries_embed_with_onnx_on_a_cpu_or_fall_back_to_torch(embedder, monkeypatch, tmp_path):
    pytest.importorskip("onnxruntime")
    from pipeline.embed import onnx, query_embedder

    monkeypatch.setenv("DOCFORGE_MODEL_CACHE", str(tmp_path))
    emb = query_embedder(EmbeddingConfig(device="cpu"))
    assert emb.backend == "onnx" and emb.model_id == embedder.model_id  # same model for the store's guard
    assert np.sum(emb.encode(TEXTS) * embedder.encode(TEXTS), axis=1).min() >= 0.99999
    assert query_embedder(EmbeddingConfig(device="cpu", query_backend="torch")).backend == "torch"
    assert query_embedder(EmbeddingConfig(backend="onnx-int8")).backend == "onnx-int8"

    def broken(*_):
        raise RuntimeError("export failed")

    monkeypatch.setenv("DOCFORGE_MODEL_CACHE", str(tmp_path / "empty"))
    monkeypatch.setattr(onnx, "model_file", broken)
    assert query_embedder(EmbeddingConfig(device="cpu")).backend == "torch"


def _index_defs(url: str) -> set[str]:
    with psycopg.connect(url) as conn:
        return {
            r[0]
            for r in conn.execute(
                "SELECT indexdef FROM pg_indexes WHERE tablename IN ('chunks', 'bm25_postings', 'vectors_1')"
            )
        }


def _chunks(url: str) -> list[tuple]:
    with psycopg.connect(url) as conn:
        return conn.execute(
            "SELECT c.id, c.doc_key, c.text, v.embedding::text FROM chunks c "
            "LEFT JOIN vectors_1 v ON v.seq = c.seq ORDER BY c.id"
        ).fetchall()  # generation 1


def _new_database(pg_server, name: str) -> str:
    with psycopg.connect(pg_server.get_uri(), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}"')
    return pg_server.get_uri(name)


def test_cold_bulk_load_equals_row_by_row(make_repo, write_config, database_url, embedder, pg_server):
    files = {
        "README.md": "# Guide\n\nHow to deploy.\n\n## Steps\n\n" + "Run the thing. " * 80,
        "docs/a.md": "# A\n\nAlpha text.",
        "docs/b.md": "# B\n\nBeta text.\n\n## More\n\nGamma.",
    }
    repo = make_repo(files)
    one = write_config([{"name": "one", "type": "git", "repo": str(repo)}])
    rows_url = _new_database(pg_server, "perf_rows")
    with IngestContext(load_settings(one), url=rows_url, embedder=embedder).store():
        fresh_defs = _index_defs(rows_url)  # the indexes as the migrations define them

    cold = ingest_source(IngestContext(load_settings(one), url=database_url, embedder=embedder), "one")
    assert cold.chunks_indexed == len(_chunks(database_url)) > 0
    assert _index_defs(database_url) == fresh_defs  # HNSW, GIN and postings rebuilt exactly as defined

    # The same content into a non-empty table goes row by row and must give the same rows.
    seed = write_config(
        [{"name": "seed", "type": "git", "repo": str(make_repo({"x.md": "# X\n\nx"}, "seed"))}],
        path=repo.parent / "seed.yml",
    )
    ingest_source(IngestContext(load_settings(seed), url=rows_url, embedder=embedder), "seed")
    rows = ingest_source(IngestContext(load_settings(one), url=rows_url, embedder=embedder), "one")
    assert rows.as_dict() | {"seconds": {}} == cold.as_dict() | {"seconds": {}}
    assert [r for r in _chunks(rows_url) if r[1].startswith("one:")] == _chunks(database_url)
    assert _postings(rows_url, "one:") == _postings(database_url, "one:") != []


def _postings(url: str, prefix: str) -> list[tuple]:
    with psycopg.connect(url) as conn:
        return conn.execute(
            "SELECT c.id, t.term, p.tf, p.dl FROM bm25_postings p JOIN chunks c ON c.seq = p.seq "
            "JOIN bm25_terms t ON t.id = p.term_id WHERE c.doc_key LIKE %s ORDER BY 1, 2",
            (prefix + "%",),
        ).fetchall()


def test_vector_writer_surfaces_database_errors():
    from pipeline.ingest.embeddings import _VectorWriter

    writer = _VectorWriter("postgresql://nobody@127.0.0.1:1/none?connect_timeout=1")
    with pytest.raises(StoreError):
        for _ in range(5):  # the writer fails at connect; put or close raises it here
            writer.put(["h"], np.zeros((1, 3), dtype=np.float32))
        writer.close()


def test_line_display_throttles_and_reports_rate():
    clock = iter([0.0, 1.0, 2.0, 10.0, 12.0]).__next__
    out = io.StringIO()
    show = terminal.LineDisplay(out, interval_s=5, clock=clock)
    show.begin_source("docs")
    for done in (0, 100, 200, 1000, 1200):
        show("embeddings", done, 1200)
    lines = out.getvalue().splitlines()
    # The source is named as one: a source called `git` or `docs` does not read as a type or a stage.
    assert lines[0] == "docforge: source 'docs', embeddings 0/1200 chunks (0%)"
    assert lines[1] == "docforge: source 'docs', embeddings 1000/1200 chunks (83%), 100.0 chunks/s, eta 2s"
    assert lines[2] == "docforge: source 'docs', embeddings 1200/1200 chunks (100%), 100.0 chunks/s"
    assert len(lines) == 3  # 100 and 200 fell inside the interval


def test_showing_installs_a_display_only_for_its_duration():
    out = io.StringIO()
    progress.report("chunks", 1, 2)  # nothing installed: silently ignored
    with terminal.showing(out):
        progress.begin_source("s")
        progress.report("chunks", 2, 2)
    progress.report("chunks", 2, 2)
    assert out.getvalue() == "docforge: source 's', chunks 2/2 docs (100%)\n"


def test_bar_display_on_a_terminal():
    class Tty(io.StringIO):
        def isatty(self):
            return True

    out = Tty()
    with terminal.showing(out) as display:
        assert isinstance(display, terminal.BarDisplay)
        for done in range(0, 101, 25):
            progress.report("embeddings", done, 100)
    assert "embeddings" in out.getvalue() and "100/100" in out.getvalue()

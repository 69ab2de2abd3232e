"""Large models done right, with small random-weight models built locally: fallbacks on a load failure,
a 2,560-wide output stored as halfvec and searched through HNSW, Matryoshka truncation, the model's own
query / document prompts, and chunks capped below a long window."""

from __future__ import annotations

import logging

import numpy as np
import psycopg
import pytest
from psycopg import sql

from pipeline.config import ChunkingConfig, EmbeddingConfig, load_settings
from pipeline.embed import Embedder, load_embedder, query_embedder
from pipeline.errors import EmbedError
from pipeline.ingest import IngestContext, ingest_source
from pipeline.query import Searcher
from pipeline.query.statements import Reading, statement
from pipeline.store import generations
from tests.tiny_models import embedding_model

PROMPTS = {"query": "Instruct: find the passage that answers\nQuery: ", "document": "passage: "}
DOCS = {
    "docs/deploy.md": "# Deploying\n\nReleases go out blue-green.\n\n## Rollback\n\nSwitch traffic back.\n",
    "docs/secrets.md": "# Secrets\n\nVault holds them; passwords rotate every 90 days.\n",
    "docs/refunds.md": "# Refunds\n\nIssue a refund from the payments console.\n",
}


@pytest.fixture(scope="module")
def wide(tmp_path_factory):
    """Qwen3-Embedding-4B's shape in miniature: 2,560 wide, an instruction prompt on the query side."""
    return embedding_model(tmp_path_factory.mktemp("models") / "wide-2560", width=2560, prompts=PROMPTS, seed=3)


def st(path, **kw):
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(path), device="cpu", **kw)


def test_fallbacks_are_tried_on_a_load_failure_not_by_what_is_on_disk(tmp_path, caplog):
    broken = tmp_path / "broken-model"  # on disk, with its files, but it cannot load
    broken.mkdir()
    (broken / "config.json").write_text("{not json")
    (broken / "modules.json").write_text("[]")
    cfg = EmbeddingConfig(model=str(broken), fallbacks=[str(tmp_path / "absent"), "all-MiniLM-L6-v2"], device="cpu")
    with caplog.at_level(logging.WARNING):
        emb = load_embedder(cfg)
    assert emb.model_id == "sentence-transformers/all-MiniLM-L6-v2" and emb.loaded
    failed = [r.getMessage() for r in caplog.records if "failed to load" in r.getMessage()]
    assert len(failed) == 2 and "broken-model" in failed[0] and "absent" in failed[1]  # in order, with reasons
    with pytest.raises(EmbedError, match="no embedding model could be loaded"):
        load_embedder(cfg.model_copy(update={"fallbacks": []}))


def test_a_new_store_is_built_with_the_first_model_that_loads(tmp_path, make_repo, write_config, database_url):
    config = write_config(
        [{"name": "docs", "type": "git", "repo": str(make_repo(DOCS))}],
        embedding={"model": str(tmp_path / "no-such-model"), "fallbacks": ["all-MiniLM-L6-v2"]},
    )
    ingest_source(IngestContext(load_settings(config), url=database_url), "docs")
    with psycopg.connect(database_url) as conn:
        gen = generations.live(conn)
    assert gen is not None and (gen.model, gen.dimension) == ("sentence-transformers/all-MiniLM-L6-v2", 384)


def test_prompts_go_on_their_side_and_truncation_renormalises(wide):
    texts = ["how do I roll back?", "Secrets > Vault\n\nVault holds them."]
    model = st(wide)
    emb = Embedder(EmbeddingConfig(model=str(wide), device="cpu"))
    assert emb.prompts == PROMPTS and emb.dimension == 2560
    q = emb.encode(texts, kind="query")
    np.testing.assert_allclose(q, model.encode_query(texts, normalize_embeddings=True), atol=1e-5)
    d = emb.encode(texts, kind="document")
    np.testing.assert_allclose(d, model.encode_document(texts, normalize_embeddings=True), atol=1e-5)
    assert np.abs(q - d).max() > 1e-3  # the two sides differ only by their prompts
    short = Embedder(EmbeddingConfig(model=str(wide), device="cpu", dimensions=1024))
    got = short.encode(texts, kind="query")
    want = st(wide, truncate_dim=1024).encode_query(texts, normalize_embeddings=True)
    assert got.shape == (2, 1024) and short.dimension == 1024
    np.testing.assert_allclose(got, want, atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
    with pytest.raises(EmbedError, match="truncation only shortens"):
        _ = Embedder(EmbeddingConfig(model=str(wide), dimensions=3000)).dimension


def test_a_2560_wide_model_is_stored_and_searched_through_hnsw(wide, make_repo, write_config, database_url):
    config = write_config(
        [{"name": "docs", "type": "git", "repo": str(make_repo(DOCS))}], embedding={"model": str(wide), "device": "cpu"}
    )
    settings = load_settings(config)
    stats = ingest_source(IngestContext(settings, url=database_url), "docs")
    assert stats.files_failed == 0 and stats.chunks_indexed >= 3
    with psycopg.connect(database_url) as conn:
        gen = generations.live(conn)
        assert gen is not None and (gen.dimension, gen.vector_type) == (2560, "halfvec")
        assert (
            conn.execute(
                "SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = "
                "'vectors_1'::regclass AND attname = 'embedding'"
            ).fetchone()[0]
            == "halfvec(2560)"
        )
        prefix, text, stored = conn.execute(
            "SELECT c.embed_prefix, c.text, v.embedding::vector::text FROM chunks c JOIN vectors_1 v "
            "ON v.seq = c.seq WHERE c.doc_key = 'docs:docs/secrets.md'"
        ).fetchone()
    document = st(wide).encode_document([prefix + text], normalize_embeddings=True)[0]
    np.testing.assert_allclose(np.array(stored.strip("[]").split(","), dtype=np.float32), document, atol=2e-3)
    with Searcher(settings, url=database_url, reranker=None) as s:
        hits = s.search("where do the passwords live?", mode="dense", limit=3)
        assert len(hits) == 3 and all(0 <= h.score <= 1 for h in hits)
        q = "where do the passwords live?"
        r = Reading.first(q, 3, False, s.config, s.embedder.encode([q], kind="query")[0])
        with s.connection() as conn, conn.transaction():
            # 3 rows: the planner would rather scan and sort them than walk a graph
            conn.execute("SET LOCAL enable_seqscan = off; SET LOCAL enable_sort = off")
            plan = "\n".join(
                r[0] for r in conn.execute(sql.SQL("EXPLAIN ") + statement("dense", r, sql.SQL("TRUE"), gen), r.binds())
            )
    assert "Index Scan using vectors_1_hnsw on vectors_1" in plan


def test_chunks_are_capped_below_a_long_window(tmp_path, make_repo, write_config, database_url):
    long_window = embedding_model(tmp_path / "long-window", window=2048, seed=5)
    body = "\n\n".join(
        f"Paragraph {i}: " + "the deployment pipeline promotes a release candidate " * 12 for i in range(30)
    )
    repo = make_repo({"docs/big.md": f"# Big\n\n{body}\n"})
    config = write_config(
        [{"name": "docs", "type": "git", "repo": str(repo)}], embedding={"model": str(long_window), "device": "cpu"}
    )
    ctx = IngestContext(load_settings(config), url=database_url)
    assert ChunkingConfig().max_tokens == 512 and ctx.embedder.max_seq_length == 2048
    ingest_source(ctx, "docs")
    with psycopg.connect(database_url) as conn:
        n, longest = conn.execute("SELECT count(*), max(token_count) FROM chunks").fetchone()
    assert n > 3 and 256 < longest <= 512


def test_the_onnx_backend_refuses_a_dense_head(wide):
    with pytest.raises(EmbedError, match="Dense"):
        Embedder(EmbeddingConfig(model=str(wide), backend="onnx")).encode(["x"])
    auto = query_embedder(EmbeddingConfig(model=str(wide), device="cpu"))  # auto: stays on torch, and works
    assert auto.encode(["x"], kind="query").shape == (1, 2560)

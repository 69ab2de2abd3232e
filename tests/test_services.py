"""The model sidecars on real HTTP servers (127.0.0.1): the embedder service and its client
(pipeline.embed.remote), and the reranker sidecar behind the existing rerank client."""

from __future__ import annotations

import logging
import socket
import subprocess
import threading

import httpx
import numpy as np
import pytest

from docforge.servers import embedder as embedder_service
from docforge.servers import reranker as reranker_service
from docforge.servers.sidecar import require_token
from pipeline.config import EmbeddingConfig, ServiceConfig, load_settings
from pipeline.embed import RemoteEmbedder, connect
from pipeline.errors import ConfigError, EmbedError
from pipeline.query import Searcher
from pipeline.query.rerank import CrossEncoderReranker, RemoteReranker, passage
from tests.helpers import ServerThread
from tests.test_mcp import DOCFORGE
from tests.tiny_models import cross_encoder

TOKEN = "emb-s3cret"
TEXTS = ["how do I roll back a release?", "", "Refunds settle in five to ten business days. " * 20, "ünïcödé — ✓"]
LIMITS = ServiceConfig(max_items=8, max_item_chars=2000, max_body_bytes=64 * 1024)


@pytest.fixture(scope="module")
def service(embedder):
    with ServerThread(embedder_service.create_app(embedder, TOKEN, LIMITS)) as srv:
        yield srv


def call(service, path: str, body: dict | None = None, token: str | None = TOKEN, **kw) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    if body is None and "content" not in kw:
        return httpx.get(service.url + path, headers=headers, timeout=30)
    if body is None:
        return httpx.post(service.url + path, headers=headers, timeout=30, **kw)
    return httpx.post(service.url + path, json=body, headers=headers, timeout=30, **kw)


def test_health_is_open_and_everything_else_needs_the_token(service):
    assert call(service, "/health", token=None).json()["status"] == "ok"
    for path, body in (("/info", None), ("/tokenizer", None), ("/embed", {"texts": ["x"]})):
        assert call(service, path, body, token=None).status_code == 401
        assert call(service, path, body, token="wrong").status_code == 401
        assert call(service, path, body).status_code == 200


def test_info_describes_the_model(service, embedder):
    info = call(service, "/info").json()
    assert info["model"] == embedder.model_id and info["dimension"] == embedder.dimension == 384
    assert info["max_seq_length"] == embedder.max_seq_length and info["normalized"] is True
    assert info["prompts"] == {"query": "", "document": ""} and info["limits"]["max_items"] == LIMITS.max_items


@pytest.mark.parametrize("kind", ["query", "document"])
def test_vectors_equal_in_process_ones_in_both_encodings(service, embedder, kind):
    want = embedder.encode(TEXTS, kind=kind)
    floats = call(service, "/embed", {"texts": TEXTS, "kind": kind}).json()
    np.testing.assert_allclose(np.array(floats["vectors"], dtype=np.float32), want, atol=1e-6)
    remote = RemoteEmbedder(service.url, TOKEN)
    np.testing.assert_allclose(remote.encode(TEXTS, kind), want, atol=1e-6)  # base64 on the wire
    assert remote.model_id == embedder.model_id and remote.dimension == embedder.dimension


def test_the_client_splits_at_the_service_limit(service, embedder):
    texts = [f"text number {i}" for i in range(3 * LIMITS.max_items + 1)]
    np.testing.assert_allclose(RemoteEmbedder(service.url, TOKEN).encode(texts), embedder.encode(texts), atol=1e-6)


def test_limits_give_clear_413_and_422(service):
    too_many = call(service, "/embed", {"texts": ["x"] * (LIMITS.max_items + 1)})
    assert too_many.status_code == 422 and "DOCFORGE_SERVICE_MAX_ITEMS" in too_many.json()["detail"]
    too_long = call(service, "/embed", {"texts": ["ok", "y" * (LIMITS.max_item_chars + 1)]})
    assert too_long.status_code == 422 and "texts[1]" in too_long.json()["detail"]
    big = call(service, "/embed", {"texts": ["z" * 1000] * 70})  # ~70 kB: over the body limit
    assert big.status_code == 413 and "DOCFORGE_SERVICE_MAX_BODY_BYTES" in big.json()["detail"]

    def chunks():  # no Content-Length: counted as it streams
        for _ in range(80):
            yield b"x" * 1024

    streamed = call(service, "/embed", content=chunks())
    assert streamed.status_code == 413
    assert call(service, "/embed", {"texts": []}).status_code == 422
    assert call(service, "/embed", {"texts": ["x"], "kind": "passage"}).status_code == 422
    with pytest.raises(EmbedError, match="over the embedder service's limit"):
        RemoteEmbedder(service.url, TOKEN).encode(["w" * (LIMITS.max_item_chars + 1)])


class _Gated:
    """An embedder whose first encode waits for a gate: requests sent meanwhile queue up."""

    def __init__(self, inner):
        self.inner, self.gate, self.calls = inner, threading.Event(), []

    def encode(self, texts, kind="document"):
        self.calls.append(len(texts))
        if len(self.calls) == 1:
            self.gate.wait(30)
        return self.inner.encode(texts, kind=kind)


@pytest.mark.parametrize(
    "body",
    [
        b'{"texts": ["a"], "n": NaN}',
        b'{"texts": ["a", Infinity]}',
        b'{"texts": ["a"], "kind": "query", "x": 1e999}',
        rb'{"texts": ["fine", "bad \ud800 text"]}',
        rb'{"texts": "\udc00"}',
    ],
)
def test_non_finite_numbers_and_lone_surrogates_are_422(service, body):
    resp = httpx.post(
        f"{service.url}/embed",
        content=body,
        headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"},
        timeout=60,
    )
    assert resp.status_code == 422, resp.text
    resp.json()  # valid JSON, whatever the input held
    assert httpx.post(
        f"{service.url}/embed", json={"texts": ["still up"]}, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60
    ).is_success


def test_concurrent_requests_share_a_forward_pass(embedder):
    gated = _Gated(embedder)
    batcher = embedder_service.Batcher(gated, max_batch=64, wait_s=0.0)
    first = batcher.submit(["the first"], "query")
    while not gated.calls:  # the worker holds the first job, inside encode
        threading.Event().wait(0.01)
    later = [batcher.submit([f"text {i}", f"more {i}"], "document") for i in range(5)]
    gated.gate.set()
    got = [f.result(30) for f in later]
    batcher.close()
    assert gated.calls == [1, 10]  # five requests, one forward pass
    np.testing.assert_allclose(first.result(30), embedder.encode(["the first"], kind="query"), atol=1e-6)
    for i, vecs in enumerate(got):
        np.testing.assert_allclose(vecs, embedder.encode([f"text {i}", f"more {i}"]), atol=1e-5)


def test_a_model_error_reaches_every_request_of_its_batch():
    class Broken:
        def encode(self, texts, kind="document"):
            raise RuntimeError("CUDA out of memory")

    batcher = embedder_service.Batcher(Broken(), max_batch=8, wait_s=0.0)
    with pytest.raises(RuntimeError, match="out of memory"):
        batcher.submit(["x"], "query").result(10)
    batcher.close()


def test_search_through_the_service_equals_in_process_search(service, corpus, embedder, monkeypatch):
    monkeypatch.setenv("EMBEDDER_URL", service.url)
    monkeypatch.setenv("EMBEDDER_TOKEN", TOKEN)
    settings = load_settings(corpus.config)
    with (
        Searcher(settings, url=corpus.url, reranker=None) as remote,
        Searcher(corpus.settings, url=corpus.url, embedder=embedder, reranker=None) as local,
    ):
        assert isinstance(remote.embedder.inner, RemoteEmbedder)  # behind the shared forward passes
        for q in ("how do I undo a bad release?", "rotate the database password", "refund a charge"):
            for mode in ("dense", "hybrid"):
                got = [(h.chunk_id, h.score) for h in remote.search(q, limit=5, mode=mode)]
                want = [(h.chunk_id, h.score) for h in local.search(q, limit=5, mode=mode)]
                assert [c for c, _ in got] == [c for c, _ in want]
                assert [s for _, s in got] == pytest.approx([s for _, s in want], abs=1e-5)


def test_a_service_with_another_model_is_refused_naming_both(service, embedder):
    cfg = EmbeddingConfig(url=service.url, token=TOKEN)
    assert connect(cfg, embedder.model_id, 384).model_id == embedder.model_id
    with pytest.raises(EmbedError) as e:
        connect(cfg, "Qwen/Qwen3-Embedding-4B", 1024)
    assert "Qwen/Qwen3-Embedding-4B" in str(e.value) and embedder.model_id in str(e.value)
    with pytest.raises(EmbedError, match="dimension 1024"):
        connect(cfg, embedder.model_id, 1024)  # same model, other width: other vectors


def test_a_store_pinned_to_another_model_refuses_the_service(service, corpus, monkeypatch):
    monkeypatch.setenv("EMBEDDER_URL", service.url)
    monkeypatch.setenv("EMBEDDER_TOKEN", TOKEN)
    with corpus_connection(corpus) as conn:
        conn.execute("UPDATE generations SET model = 'org/other-model' WHERE state = 'live'")
    try:
        with Searcher(load_settings(corpus.config), url=corpus.url, reranker=None) as s:
            with pytest.raises(EmbedError) as e:
                s.search("deploy", mode="dense")
            assert "org/other-model" in str(e.value) and "all-MiniLM-L6-v2" in str(e.value)
            assert s.search("deploy", mode="keyword")  # keyword search needs no model
    finally:
        with corpus_connection(corpus) as conn:
            conn.execute("UPDATE generations SET model = 'sentence-transformers/all-MiniLM-L6-v2' WHERE state = 'live'")


def corpus_connection(corpus):
    import psycopg

    return psycopg.connect(corpus.url, autocommit=True)


def test_a_dead_service_is_a_clear_error_not_a_hang(caplog):
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{s.getsockname()[1]}"
    remote = RemoteEmbedder(url, TOKEN, timeout_s=2, max_retries=2)
    with caplog.at_level(logging.WARNING), pytest.raises(EmbedError) as e:
        remote.encode(["x"])
    assert "unreachable" in str(e.value) and "after 3 attempt(s)" in str(e.value) and url in str(e.value)
    assert caplog.text.count("retrying") == 2


def test_a_wrong_token_is_named(service):
    with pytest.raises(EmbedError, match="refused the token .* EMBEDDER_TOKEN"):
        RemoteEmbedder(service.url, "wrong").encode(["x"])


def test_a_sidecar_refuses_to_run_open_off_loopback():
    assert require_token("t", "0.0.0.0", False, "EMBEDDER_TOKEN") == "t"
    assert require_token(None, "127.0.0.1", True, "EMBEDDER_TOKEN") is None
    with pytest.raises(ConfigError, match="set EMBEDDER_TOKEN"):
        require_token(None, "127.0.0.1", False, "EMBEDDER_TOKEN")
    with pytest.raises(ConfigError, match="loopback"):
        require_token(None, "0.0.0.0", True, "EMBEDDER_TOKEN")


@pytest.mark.parametrize("flag, env", [("--embedder", "EMBEDDER_TOKEN"), ("--reranker", "RERANKER_API_KEY")])
def test_the_cli_exits_1_without_a_token(tmp_path, flag, env):
    res = subprocess.run(
        [DOCFORGE, "serve", flag, "--host", "0.0.0.0", "-c", str(tmp_path / "none.yml")],
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "HF_HUB_OFFLINE": "1"},
    )
    assert res.returncode == 1 and env in res.stderr


# --- the reranker sidecar ----------------------------------------------------------------------------

KEY = "rr-k3y"


@pytest.fixture(scope="module")
def tiny_cross_encoder(tmp_path_factory):
    return cross_encoder(tmp_path_factory.mktemp("models") / "tiny-cross-encoder")


@pytest.fixture(scope="module")
def rerank_sidecar(tiny_cross_encoder):
    app = reranker_service.create_app(CrossEncoderReranker(str(tiny_cross_encoder), device="cpu"), KEY, LIMITS)
    with ServerThread(app) as srv:
        yield srv


def test_the_rerank_client_reranks_through_the_sidecar(rerank_sidecar, tiny_cross_encoder, corpus, embedder):
    with Searcher(corpus.settings, url=corpus.url, embedder=embedder, reranker=None) as s:
        candidates = s.search("how are refunds recorded?", limit=8)
    got = RemoteReranker(rerank_sidecar.url, api_key=KEY).rerank("how are refunds recorded?", candidates, 3)
    local = CrossEncoderReranker(str(tiny_cross_encoder), device="cpu")
    want = local.rerank("how are refunds recorded?", candidates, 3)
    assert [h.chunk_id for h in got] == [h.chunk_id for h in want]
    assert [h.rerank_score for h in got] == pytest.approx([h.rerank_score for h in want], abs=1e-5)
    assert got[0].rerank_score is not None and passage(got[0])


def test_the_reranker_sidecar_guards_itself(rerank_sidecar):
    body = {"query": "q", "documents": ["a", "b", "c"], "top_n": 2}
    assert httpx.get(rerank_sidecar.url + "/health").json()["status"] == "ok"
    assert httpx.post(rerank_sidecar.url + "/rerank", json=body).status_code == 401
    ok = httpx.post(rerank_sidecar.url + "/rerank", json=body, headers={"Authorization": f"Bearer {KEY}"})
    results = ok.json()["results"]
    assert ok.status_code == 200 and len(results) == 2
    assert results[0]["relevance_score"] >= results[1]["relevance_score"]
    many = httpx.post(
        rerank_sidecar.url + "/rerank",
        json={"query": "q", "documents": ["d"] * 9},
        headers={"Authorization": f"Bearer {KEY}"},
    )
    assert many.status_code == 422 and "DOCFORGE_SERVICE_MAX_ITEMS" in many.json()["detail"]


# --- ingest through the service ----------------------------------------------------------------------


def _rows(url):
    import psycopg

    with psycopg.connect(url) as conn:
        return conn.execute(
            "SELECT c.id, c.token_count, v.embedding::vector::text FROM chunks c "
            "JOIN vectors_1 v ON v.seq = c.seq ORDER BY c.id"
        ).fetchall()  # generation 1


def test_ingest_embeds_through_the_service_with_its_tokenizer(
    service, embedder, make_repo, write_config, database_url, pg_server, monkeypatch
):
    import psycopg

    from pipeline.ingest import IngestContext, ingest_source

    docs = {f"docs/page{i}.md": f"# Page {i}\n\nHow team {i} deploys, rolls back and rotates." for i in range(12)}
    repo = make_repo({"README.md": "# Handbook\n\n" + "How the platform team deploys and rolls back. " * 60, **docs})
    config = write_config([{"name": "docs", "type": "git", "repo": str(repo)}])
    local_url = pg_server.get_uri("remote_ingest_local")
    with psycopg.connect(pg_server.get_uri(), autocommit=True) as conn:
        conn.execute('DROP DATABASE IF EXISTS "remote_ingest_local"')
        conn.execute('CREATE DATABASE "remote_ingest_local"')
    ingest_source(IngestContext(load_settings(config), url=local_url, embedder=embedder), "docs")

    monkeypatch.setenv("EMBEDDER_URL", service.url)
    monkeypatch.setenv("EMBEDDER_TOKEN", TOKEN)
    monkeypatch.setenv("EMBEDDER_INGEST", "true")
    ctx = IngestContext(load_settings(config), url=database_url)
    stats = ingest_source(ctx, "docs")
    assert isinstance(ctx.embedder, RemoteEmbedder) and stats.chunks_embedded > LIMITS.max_items  # several requests
    remote, local = _rows(database_url), _rows(local_url)
    assert [(i, n) for i, n, _ in remote] == [(i, n) for i, n, _ in local]  # the same chunks, token for token
    for (_, _, a), (_, _, b) in zip(remote, local, strict=True):
        np.testing.assert_allclose(
            np.array(a.strip("[]").split(","), dtype=np.float32),
            np.array(b.strip("[]").split(","), dtype=np.float32),
            atol=2e-3,
        )

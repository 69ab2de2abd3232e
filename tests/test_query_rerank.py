"""Reranking: a real HTTP rerank service on 127.0.0.1, a real CrossEncoder from a local path,
and failures that must keep the fused order."""

from __future__ import annotations

import logging

import pytest
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from pipeline.config import load_settings
from pipeline.errors import QueryError
from pipeline.query import Searcher
from pipeline.query.rerank import CrossEncoderReranker, RemoteReranker, RerankConfig, load_reranker, passage
from tests.helpers import ServerThread

QUERY = "how are refunds recorded?"


def rerank_service(word: str, shape: str = "jina", fail: bool = False, token: str | None = None) -> FastAPI:
    """Scores each document by how often `word` occurs in it (so the expected order is known)."""
    app = FastAPI()

    @app.post("/rerank")
    async def rerank(request: Request):
        if fail:
            return JSONResponse({"error": "model crashed"}, status_code=500)
        if token and request.headers.get("authorization") != f"Bearer {token}":
            return JSONResponse({"error": "unauthorised"}, status_code=401)
        body = await request.json()
        scores = [doc.lower().count(word) for doc in body["documents"]]
        items = sorted(({"index": i, "score": float(s)} for i, s in enumerate(scores)), key=lambda x: -x["score"])
        if shape == "tei":
            return items
        return {"results": [{"index": x["index"], "relevance_score": x["score"]} for x in items]}

    return app


def searcher_for(corpus, embedder, monkeypatch, **env) -> Searcher:
    for k in ("RERANK_ENABLED", "RERANKER_URL", "RERANKER_MODEL", "RERANKER_API_KEY"):
        monkeypatch.delenv(k, raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    # Settings are read once, where a surface starts: read them again now that the environment changed.
    return Searcher(load_settings(corpus.config), url=corpus.url, embedder=embedder)


@pytest.mark.parametrize("shape", ["jina", "tei"])
def test_remote_reranker_reorders_and_keeps_scores(corpus, embedder, monkeypatch, shape):
    with (
        ServerThread(rerank_service("deploy", shape)) as svc,
        searcher_for(corpus, embedder, monkeypatch, RERANK_ENABLED="true", RERANKER_URL=svc.url) as s,
    ):
        assert isinstance(s.reranker, RemoteReranker)
        fused = {h.chunk_id: h for h in s.search(QUERY, limit=50, rerank=False)}
        hits = s.search(QUERY, limit=3)
    assert hits[0].doc_key == "handbook:docs/deploy.md" and hits[0].rerank_score == 2.0
    assert [h.rerank_score for h in hits] == sorted((h.rerank_score for h in hits), reverse=True)
    assert all(h.score == fused[h.chunk_id].score for h in hits)  # score stays the fused score
    assert len(hits) == 3


def test_remote_reranker_sends_its_api_key(corpus, embedder, monkeypatch):
    with (
        ServerThread(rerank_service("refund", token="k3y")) as svc,
        searcher_for(
            corpus, embedder, monkeypatch, RERANK_ENABLED="true", RERANKER_URL=svc.url, RERANKER_API_KEY="k3y"
        ) as s,
    ):
        assert s.search(QUERY, limit=2)[0].rerank_score is not None


@pytest.mark.parametrize("broken", ["500", "unreachable", "bad model path"])
def test_failing_reranker_keeps_fused_order(corpus, embedder, monkeypatch, caplog, broken, tmp_path):
    with ServerThread(rerank_service("x", fail=True)) as svc:
        url = svc.url
        env = {"RERANK_ENABLED": "true"}
        if broken == "bad model path":
            env["RERANKER_MODEL"] = str(tmp_path / "no-such-model")
        else:
            env["RERANKER_URL"] = url
        if broken == "unreachable":
            svc.__exit__()  # the port is closed now
        with searcher_for(corpus, embedder, monkeypatch, **env) as s, caplog.at_level(logging.WARNING):
            fused = s.search(QUERY, limit=4, rerank=False)
            hits = s.search(QUERY, limit=4)
    assert [h.chunk_id for h in hits] == [h.chunk_id for h in fused]
    assert all(h.rerank_score is None for h in hits)
    assert "keeping the fused order" in caplog.text


def test_rerank_is_opt_in(corpus, embedder, monkeypatch):
    with searcher_for(corpus, embedder, monkeypatch, RERANKER_URL="http://127.0.0.1:9") as s:
        assert s.reranker is None  # configured but not enabled
        with pytest.raises(QueryError, match="RERANK_ENABLED=true"):
            s.search(QUERY, rerank=True)
        assert s.search(QUERY, limit=1)[0].rerank_score is None
    monkeypatch.delenv("RERANKER_URL")
    assert load_reranker(RerankConfig(enabled=True)) is None  # enabled, nothing configured


def test_cross_encoder_from_a_local_directory(corpus, embedder, monkeypatch, tmp_path):
    """A real sentence-transformers CrossEncoder, built offline from the packaged MiniLM weights
    (its scoring head is untrained: this checks the plumbing, not the ranking quality)."""
    import torch
    from sentence_transformers import CrossEncoder

    torch.manual_seed(0)
    path = tmp_path / "cross-encoder"
    CrossEncoder(str(embedder.path), num_labels=1, device="cpu").save(str(path))
    with searcher_for(corpus, embedder, monkeypatch, RERANK_ENABLED="true", RERANKER_MODEL=str(path)) as s:
        assert isinstance(s.reranker, CrossEncoderReranker)
        candidates = s.search(QUERY, limit=50, rerank=False)
        hits = s.search(QUERY, limit=3)
        expected = s.reranker.model.predict([(QUERY, passage(h)) for h in candidates])
    best = sorted(expected, reverse=True)[:3]
    assert [h.rerank_score for h in hits] == pytest.approx([float(x) for x in best], abs=1e-5)

"""The reranker sidecar, `docforge serve --reranker`: a cross-encoder behind `POST /rerank`.

It speaks the protocol pipeline.query.rerank's RemoteReranker speaks (the Jina /
Cohere / infinity shape), so an API replica with `RERANK_ENABLED=true` and
`RERANKER_URL` pointing here reranks without loading a model:

    GET  /health   open: {"status": "ok", "model"}
    GET  /info     the model and the limits
    POST /rerank   {"query", "documents": [...], "top_n"?, "return_documents"?}
                   → {"model", "results": [{"index", "relevance_score", "document"?}]}, best first

The model is a sentence-transformers CrossEncoder from a local path or a model
id already in the local cache (`RERANKER_MODEL`, or `--model`; on a GPU node,
e.g. BAAI/bge-reranker-v2-m3). Every route but /health needs `Authorization:
Bearer $RERANKER_API_KEY` (the key the API replicas send); body, document count
and document length limits as the embedder service's (`Settings.service`).
"""

from __future__ import annotations

import logging
import threading

from fastapi import FastAPI, HTTPException
from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool
from starlette.types import ASGIApp

from docforge.servers import strict_json
from docforge.servers.sidecar import SidecarGate, check_items, limits_info
from pipeline import __version__
from pipeline.config import ServiceConfig
from pipeline.query.rerank import CrossEncoderReranker

log = logging.getLogger("docforge.servers.reranker")


class RerankRequest(BaseModel):
    model_config = ConfigDict(extra="ignore")  # other clients' fields (model, max_chunks_per_doc...) are theirs

    query: str = Field(min_length=1)
    documents: list[str] = Field(min_length=1)
    top_n: int | None = Field(default=None, ge=1)
    return_documents: bool = False


def create_app(reranker: CrossEncoderReranker, token: str | None, limits: ServiceConfig) -> ASGIApp:
    """The sidecar over a cross-encoder (loaded here, before the first request)."""
    model = reranker.model  # load now: a bad path fails the start, not the first search
    lock = threading.Lock()  # one forward pass at a time: the model's memory is bounded
    app = FastAPI(title="docforge reranker", version=__version__, docs_url=None, redoc_url=None, openapi_url=None)
    strict_json.install(app)  # NaN, Infinity, text with no UTF-8 form: 422
    name = str(reranker.path)

    @app.get("/health")
    def health() -> dict:
        return {"status": "ok", "model": name}

    @app.get("/info")
    def info() -> dict:
        return {"model": name, "limits": limits_info(limits)}

    @app.post("/rerank")
    async def rerank(req: RerankRequest) -> dict:
        named = [("the query", req.query), *((f"documents[{i}]", d) for i, d in enumerate(req.documents))]
        check_items(limits, len(req.documents), "documents", named)

        def score() -> list[float]:
            with lock:
                pairs = [(req.query, d) for d in req.documents]
                return [float(s) for s in model.predict(pairs, batch_size=reranker.batch_size, show_progress_bar=False)]

        try:
            scores = await run_in_threadpool(score)
        except Exception as e:  # noqa: BLE001 (the model's fault: the client keeps the fused order)
            log.exception("reranking failed")
            raise HTTPException(500, f"the model failed: {type(e).__name__}: {e}") from None
        order = sorted(range(len(scores)), key=lambda i: -scores[i])[: req.top_n or len(scores)]
        results = [
            {
                "index": i,
                "relevance_score": scores[i],
                **({"document": {"text": req.documents[i]}} if req.return_documents else {}),
            }
            for i in order
        ]
        return {"model": name, "results": results}

    return SidecarGate(app, token=token, max_body_bytes=limits.max_body_bytes, service="reranker")

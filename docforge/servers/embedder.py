"""The embedder service, `docforge serve --embedder`: one model, loaded once, for every API replica.

    GET  /health     open: {"status": "ok", "model"}
    GET  /info       model id, dimension, window, normalisation, prompts, limits (pipeline.embed.Embedder.info)
    GET  /tokenizer  the model's tokenizer.json (remote ingest chunks with it)
    POST /embed      {"texts": [...], "kind": "query" | "document", "encoding": "float" | "base64"}
                     → {"model", "dimension", "count", "vectors": [[...]]} or {..., "base64": "<float32 LE>"}

Every route but /health needs `Authorization: Bearer $EMBEDDER_TOKEN`
(docforge.servers.sidecar). Limits (`Settings.service`): a body over
`max_body_bytes` gets 413; more than `max_items` texts, or a text over
`max_item_chars`, gets 422 naming the limit. Concurrent requests are merged:
one worker thread owns the model and takes whatever is queued (waiting
`batch_wait_ms` for company, up to `max_batch` texts), encodes each kind in one
call and hands every request its rows, so N small requests cost about one
forward pass, not N. The client is pipeline.embed.remote.
"""

from __future__ import annotations

import asyncio
import base64
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Literal

import numpy as np
from fastapi import FastAPI, HTTPException
from fastapi.responses import JSONResponse, PlainTextResponse
from pydantic import BaseModel, ConfigDict, Field
from starlette.types import ASGIApp

from docforge.servers import strict_json
from docforge.servers.sidecar import SidecarGate, check_items, limits_info
from pipeline import __version__
from pipeline.config import ServiceConfig
from pipeline.embed import Batcher, Embedder

log = logging.getLogger("docforge.servers.embedder")


class EmbedRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    texts: list[str] = Field(min_length=1, description="Texts to embed, in order.")
    kind: Literal["query", "document"] = Field(
        default="document", description="Which side's prompt the model puts before each text."
    )
    encoding: Literal["float", "base64"] = Field(
        default="float", description="base64: count × dimension little-endian float32."
    )


def create_app(embedder: Embedder, token: str | None, limits: ServiceConfig) -> ASGIApp:
    """The service over a loaded `embedder`; `token` None only where `require_token` allowed it."""
    batcher = Batcher(embedder, limits.max_batch or embedder.batch_size, limits.batch_wait_ms / 1000)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        yield
        batcher.close()

    app = FastAPI(
        title="docforge embedder",
        version=__version__,
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
        lifespan=lifespan,
    )
    strict_json.install(app)  # NaN, Infinity, text with no UTF-8 form: 422
    info = {
        **embedder.info(),
        "device": embedder.device,
        "limits": limits_info(limits),
    }

    @app.get("/health")
    def health() -> dict:
        return {"status": "ok", "model": embedder.model_id}

    @app.get("/info")
    def get_info() -> dict:
        return {**info, "batches": batcher.batches}

    @app.get("/tokenizer")
    def tokenizer() -> PlainTextResponse:
        return PlainTextResponse(embedder.tokenizer.to_str(), media_type="application/json")

    @app.post("/embed")
    async def embed(req: EmbedRequest) -> JSONResponse:
        named = ((f"texts[{i}]", t) for i, t in enumerate(req.texts))
        check_items(limits, len(req.texts), "texts", named, hint=": send them in several requests")
        try:
            vectors = await asyncio.wrap_future(batcher.submit(req.texts, req.kind))
        except Exception as e:  # noqa: BLE001 (the model's fault: a 500 the client may retry)
            log.exception("embedding failed")
            raise HTTPException(500, f"the model failed: {type(e).__name__}: {e}") from None
        out = {"model": embedder.model_id, "dimension": int(vectors.shape[1]), "count": len(req.texts)}
        if req.encoding == "base64":
            out["base64"] = base64.b64encode(np.ascontiguousarray(vectors, dtype="<f4").tobytes()).decode()
        else:
            out["vectors"] = vectors.tolist()
        return JSONResponse(out)

    return SidecarGate(app, token=token, max_body_bytes=limits.max_body_bytes, service="embedder")

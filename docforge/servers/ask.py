"""Asking over the serving surfaces: the request shape shared by `POST /ask` and the MCP tool
`ask_documentation`, and the two ways to answer it (this machine's store, or a hosted API)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Literal

import httpx
from pydantic import BaseModel, ConfigDict, Field

from pipeline.answers import Answer, Answerer
from pipeline.errors import AnswerError, DocforgeError
from pipeline.redact import redact, register

log = logging.getLogger("docforge.servers")


class Turn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    role: Literal["user", "assistant"]
    content: str = Field(max_length=8000)


class AskRequest(BaseModel):
    """One question, as the HTTP API and the MCP tool take it."""

    model_config = ConfigDict(extra="forbid")

    question: str = Field(min_length=1, max_length=4000, description="The question, in natural language.")
    user_name: str | None = Field(default=None, max_length=200, description="Who asks (logged).")
    team_name: str | None = Field(default=None, max_length=200, description="Their team (logged; boosts tags).")
    area_name: str | None = Field(default=None, max_length=200, description="Their area (logged; boosts tags).")
    filters: dict[str, Any] | None = Field(default=None, description="Filter expression, see docs/query.md.")
    filter_repo: str | None = Field(
        default=None, max_length=500, description="Only repositories whose path or URL contains this."
    )
    mode: Literal["dense", "keyword", "hybrid"] = "hybrid"
    rerank: bool | None = None
    max_iterations: int | None = Field(default=None, ge=1, le=10)
    history: list[Turn] | None = Field(default=None, max_length=20, description="Prior turns, oldest first.")
    no_cache: bool = False
    trace: bool = False


AskFn = Callable[[AskRequest], Answer]


def log_ask(surface: str, req: AskRequest, who: str | None = None) -> None:
    log.info(
        "%s ask by user=%r team=%r area=%r%s question=%r",
        surface,
        req.user_name,
        req.team_name,
        req.area_name,
        f" principal={who!r}" if who else "",
        req.question,
    )


class LocalAsk:
    """AskFn over an Answerer on this machine's store."""

    def __init__(self, answerer: Answerer):
        self.answerer = answerer

    def __call__(self, req: AskRequest) -> Answer:
        return self.answerer.ask(
            req.question,
            filters=req.filters,
            filter_repo=req.filter_repo,
            mode=req.mode,
            rerank=req.rerank,
            boost_tags=[t for t in (req.team_name, req.area_name) if t],
            history=[t.model_dump() for t in req.history] if req.history else None,
            max_iterations=req.max_iterations,
            use_cache=False if req.no_cache else None,
            trace=req.trace,
        )


class RemoteAsk:
    """AskFn that asks a hosted docforge API (`POST {url}/ask`) with a bearer token."""

    def __init__(self, url: str, token: str | None, timeout_s: float = 300.0):
        self.url = url.rstrip("/") + "/ask"
        register(token)  # an error quoting it back never shows it
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.client = httpx.Client(headers=headers, timeout=timeout_s)

    def __call__(self, req: AskRequest) -> Answer:
        try:
            resp = self.client.post(self.url, json=req.model_dump(exclude_none=True))
        except httpx.HTTPError as e:
            raise DocforgeError(f"the docforge API at {self.url} is unreachable: {type(e).__name__}") from None
        if resp.status_code == 401:
            raise DocforgeError(f"the docforge API at {self.url} refused the token (401): set DOCFORGE_API_TOKEN")
        if resp.status_code >= 400:
            raise AnswerError(f"the docforge API at {self.url} answered {resp.status_code}: {redact(resp.text, 300)}")
        return Answer(**resp.json())

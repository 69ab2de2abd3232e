"""Asking over the serving surfaces: the request shape shared by `POST /ask` and the MCP tool
`ask_documentation`, and the two ways to answer it (this machine's store, or a hosted API)."""

from __future__ import annotations

import logging
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, field_validator

from docforge.servers.remote import RemoteRoute
from docforge.servers.search import Caller
from pipeline.access import FULL_ACCESS, Principal
from pipeline.answers import Answer, Answerer
from pipeline.answers.loop import MAX_QUESTION
from pipeline.errors import AnswerError
from pipeline.query import Mode
from pipeline.query.filters import with_repo

log = logging.getLogger("docforge.servers")


class Turn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    role: Literal["user", "assistant"]
    content: str = Field(max_length=8000)


class AskRequest(Caller):
    """One question, as the HTTP API and the MCP tool take it."""

    question: str = Field(min_length=1, max_length=MAX_QUESTION, description="The question, in natural language.")
    mode: Mode = "hybrid"
    rerank: bool | None = None
    max_iterations: int | None = Field(default=None, ge=1, le=10)
    history: list[Turn] | None = Field(default=None, max_length=20, description="Prior turns, oldest first.")
    no_cache: bool = False
    trace: bool = False

    @field_validator("filters")
    @classmethod
    def _no_nul(cls, v: dict[str, Any] | None) -> dict[str, Any] | None:
        """A NUL in a filter's key or value: refused (422), as no stored text can hold one."""
        todo: list[Any] = [v]
        while todo:  # iterative: the body's depth is bounded already (pipeline/json_strict.py)
            node = todo.pop()
            if isinstance(node, dict):
                todo += [*node.keys(), *node.values()]
            elif isinstance(node, list):
                todo += node
            elif isinstance(node, str) and "\x00" in node:
                raise ValueError("a filter's text may not hold NUL (U+0000)")
        return v


class AskFn(Protocol):
    """An answer for `reader`, from what it may read (a remote API: as its token allows)."""

    def __call__(self, req: AskRequest, reader: Principal = FULL_ACCESS) -> Answer: ...


def log_ask(surface: str, req: AskRequest, who: str | None = None) -> None:
    log.info("%s ask by %s question=%r", surface, req.asker(who), req.question)


class LocalAsk:
    """AskFn over an Answerer on this machine's store."""

    def __init__(self, answerer: Answerer):
        self.answerer = answerer

    def __call__(self, req: AskRequest, reader: Principal = FULL_ACCESS) -> Answer:
        return self.answerer.ask(
            req.question,
            filters=with_repo(req.filters, req.filter_repo),
            mode=req.mode,
            rerank=req.rerank,
            boost_tags=[t for t in (req.team_name, req.area_name) if t],
            history=[t.model_dump() for t in req.history] if req.history else None,
            max_iterations=req.max_iterations,
            use_cache=False if req.no_cache else None,
            trace=req.trace,
            reader=reader,
        )


class RemoteAsk(RemoteRoute):
    """AskFn that asks a hosted docforge API (`POST {url}/ask`) with the caller's own bearer token: the API
    answers from what that token may read (a local `reader` adds nothing to it)."""

    def __init__(self, url: str, token: str | None, timeout_s: float = 300.0):
        super().__init__(url, "/ask", token, timeout_s, error=AnswerError)

    def __call__(self, req: AskRequest, reader: Principal = FULL_ACCESS) -> Answer:
        return Answer(**self.post(req.model_dump(exclude_none=True)))

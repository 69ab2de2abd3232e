"""The search both serving surfaces (the MCP server and the HTTP API) share.

Both take a `SearchFn`: `LocalSearch` (a Searcher on this machine's store) or,
for the MCP server, `RemoteSearch` (a hosted docforge API). Requests and hits
have one shape everywhere: `SearchRequest` in, a list of citation dicts out.
"""

from __future__ import annotations

import logging
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, Field

from pipeline.access import FULL_ACCESS, Principal
from pipeline.errors import DocforgeError
from pipeline.query import Hit, Mode, Searcher
from pipeline.query.filters import with_repo

log = logging.getLogger("docforge.servers")
HEALTH_TIMEOUT_S = 2.0  # a health probe's wait for a store connection (Kubernetes probes time out at 1-5 s)


class Caller(BaseModel):
    """What a search and an ask both take: who asks (logged; their team and area boost tags) and which
    documents to read (a filter expression, repositories by path)."""

    model_config = ConfigDict(extra="forbid")

    user_name: str | None = Field(default=None, max_length=200, description="Who asks (logged).")
    team_name: str | None = Field(default=None, max_length=200, description="Their team (logged; boosts tags).")
    area_name: str | None = Field(default=None, max_length=200, description="Their area (logged; boosts tags).")
    filters: dict[str, Any] | None = Field(default=None, description="Filter expression, see docs/query.md.")
    filter_repo: str | None = Field(
        default=None, max_length=500, description="Only repositories whose path or URL contains this."
    )

    def asker(self, who: str | None = None) -> str:
        """Who asks, as the request log says it (`who`: the principal, when it is not the full-access one)."""
        return f"user={self.user_name!r} team={self.team_name!r} area={self.area_name!r}" + (
            f" principal={who!r}" if who else ""
        )


class SearchRequest(Caller):
    """One search, as the HTTP API and the MCP tool take it."""

    query: str = Field(min_length=1, max_length=4000, description="A natural-language question or keywords.")
    limit: int = Field(default=10, ge=1, le=50)
    mode: Mode = "hybrid"
    rerank: bool | None = Field(default=None, description="Rerank (None: as the server is configured).")
    per_doc: int | None = Field(
        default=None,
        ge=0,
        le=50,
        description="At most this many chunks of one document (0: no limit; None: as the server is "
        "configured, 2 by default).",
    )


class SearchFn(Protocol):
    """A search for `reader`: what it may read, and no more (a remote API: as its token allows)."""

    def __call__(self, req: SearchRequest, reader: Principal = FULL_ACCESS) -> list[dict]: ...


class SearchHit(BaseModel):
    """One search hit as the API and MCP return it, with what is needed to quote and cite it (not an
    answer's `Citation`, pipeline.answers.model: the evidence block one of its claims points to)."""

    title: str
    section: str
    url: str
    doc_key: str = Field(description="The document's key, '<source>:<path or page id>'.")
    source: str = Field(description="The source's name in sources.yml.")
    type: str
    chunk_index: int
    page: int | None = None
    score: float
    rerank_score: float | None = None
    text: str


HIT_KEYS = tuple(SearchHit.model_fields)


class SearchResponse(BaseModel):
    """Hits for one query, best first."""

    query: str
    hits: list[SearchHit]


def search_hit(hit: Hit) -> dict:
    """What a caller needs to quote and cite one hit."""
    d = hit.as_dict()
    return {k: d[k] for k in HIT_KEYS}


def log_request(surface: str, req: SearchRequest, who: str | None = None) -> None:
    log.info("%s search by %s mode=%s limit=%d query=%r", surface, req.asker(who), req.mode, req.limit, req.query)


class LocalSearch:
    """SearchFn over a Searcher (thread-safe: concurrent searches run on the Searcher's pooled connections)."""

    def __init__(self, searcher: Searcher):
        self.searcher = searcher

    def __call__(self, req: SearchRequest, reader: Principal = FULL_ACCESS) -> list[dict]:
        filters = with_repo(req.filters, req.filter_repo)
        boost = [t for t in (req.team_name, req.area_name) if t]
        hits = self.searcher.search(
            req.query,
            req.limit,
            req.mode,
            filters=filters,
            boost_tags=boost,
            rerank=req.rerank,
            per_doc=req.per_doc,
            reader=reader,
        )
        return [search_hit(h) for h in hits]

    def health(self) -> bool:
        """Whether the store answers within HEALTH_TIMEOUT_S (a probe must not hang on a down database)."""
        try:
            return self.searcher.ping(min(HEALTH_TIMEOUT_S, self.searcher.config.pool_timeout_s))
        except DocforgeError as e:
            log.warning("health: %s", e)
            return False

    def warm(self) -> None:
        """Load the model now rather than on the first question."""
        self.searcher.embedder.encode(["warm up"])

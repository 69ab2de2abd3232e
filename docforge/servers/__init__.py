"""Serving surfaces over `pipeline.query`: an MCP server (stdio) and an HTTP API; the search
request and hit shapes both share are in docforge.servers.search."""

from __future__ import annotations

from docforge.servers.search import (
    HIT_KEYS,
    LocalSearch,
    SearchFn,
    SearchHit,
    SearchRequest,
    SearchResponse,
    log_request,
    search_hit,
)

__all__ = [
    "HIT_KEYS",
    "LocalSearch",
    "SearchFn",
    "SearchHit",
    "SearchRequest",
    "SearchResponse",
    "log_request",
    "search_hit",
]

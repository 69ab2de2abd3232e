"""Optional second stage: a reranker reorders the fused candidates of a search.

Opt-in, as the design says: on only when `RERANK_ENABLED=true` and a reranker
is configured (`Settings.rerank`, see pipeline.config), either

- `RERANKER_MODEL`: a local directory holding a sentence-transformers
  CrossEncoder (never downloaded: this runs offline), or
- `RERANKER_URL`: a service answering `POST {url}/rerank` in the Jina / Cohere /
  infinity shape (`{"query", "documents", "top_n"}` → `{"results": [{"index",
  "relevance_score"}]}`) or the TEI shape (a list of `{"index", "score"}`);
  `RERANKER_API_KEY`, if set, is sent as a bearer token.

A reranker that fails (unreachable, bad answer, model error) never fails the
search: the fused order is kept and a warning logged.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import replace
from functools import cached_property
from typing import Protocol

from pipeline.config import RerankConfig
from pipeline.errors import ConfigError, RerankError
from pipeline.query.hits import Hit
from pipeline.redact import redact

log = logging.getLogger(__name__)


class Reranker(Protocol):
    """Scores (query, candidate) pairs; returns the best `top_n` with `rerank_score` set, best first."""

    def rerank(self, query: str, candidates: Sequence[Hit], top_n: int) -> list[Hit]: ...


def load_reranker(cfg: RerankConfig) -> Reranker | None:
    """The configured reranker (`Settings.rerank`), or None when reranking is not enabled or nothing is configured."""
    if not cfg.enabled:
        return None
    if cfg.model:
        return CrossEncoderReranker(cfg.model)
    if cfg.url:
        key = cfg.api_key.get_secret_value() if cfg.api_key else None
        return RemoteReranker(cfg.url, api_key=key, timeout_s=cfg.timeout_s)
    log.warning("RERANK_ENABLED=true but neither RERANKER_MODEL nor RERANKER_URL is set: not reranking")
    return None


def passage(hit: Hit) -> str:
    """What a reranker reads: where the chunk sits, then its text."""
    where = hit.section if hit.section.startswith(hit.title) else " > ".join(p for p in (hit.title, hit.section) if p)
    return f"{where}\n\n{hit.text}" if where else hit.text


def ordered(candidates: Sequence[Hit], scores: Sequence[float], top_n: int) -> list[Hit]:
    """Candidates sorted by score (stable for ties), the best top_n, scores attached."""
    if len(scores) != len(candidates):
        raise ValueError(f"reranker returned {len(scores)} scores for {len(candidates)} candidates")
    order = sorted(range(len(candidates)), key=lambda i: -float(scores[i]))[:top_n]
    return [
        replace(candidates[i], rerank_score=round(float(scores[i]), 6) if math.isfinite(scores[i]) else None)
        for i in order
    ]


def rerank_or_keep(reranker: Reranker, query: str, hits: list[Hit], top_n: int) -> list[Hit]:
    """Rerank, or on any failure keep the fused order (a search must not fail for its reranker)."""
    if not hits:
        return hits
    try:
        return reranker.rerank(query, hits, top_n)
    except Exception as e:  # noqa: BLE001 — any reranker fault degrades to the fused order
        log.warning("reranker %s failed, keeping the fused order: %s", type(reranker).__name__, e)
        return hits[:top_n]


class CrossEncoderReranker:
    """A sentence-transformers CrossEncoder loaded from a local directory."""

    def __init__(self, path: str, device: str | None = None, batch_size: int = 32):
        self.path, self.device, self.batch_size = path, device, batch_size

    @cached_property
    def model(self):
        from sentence_transformers import CrossEncoder

        try:
            return CrossEncoder(self.path, device=self.device, local_files_only=True)
        except Exception as e:  # the library's many kinds, mapped once here to what the user can fix
            raise ConfigError(f"cannot load the cross-encoder at {self.path!r} (RERANKER_MODEL): {e}") from e

    def rerank(self, query: str, candidates: Sequence[Hit], top_n: int) -> list[Hit]:
        pairs = [(query, passage(h)) for h in candidates]
        scores = self.model.predict(pairs, batch_size=self.batch_size, show_progress_bar=False)
        return ordered(candidates, [float(s) for s in scores], top_n)


class RemoteReranker:
    """A rerank service over HTTP (`POST {url}/rerank`). Not retried: a search waits on no reranker,
    it keeps the fused order instead (`rerank_or_keep`)."""

    def __init__(self, url: str, api_key: str | None = None, timeout_s: float = 10.0):
        from pipeline import http  # httpx only when a rerank service is configured

        self.url = url.rstrip("/") + "/rerank"
        self.service = http.Service(
            "the rerank service",
            RerankError,
            timeout_s=timeout_s,
            auth=http.bearer(api_key),
            retry=http.RetryPolicy(attempts=1),
            hints={401: "refused the key sent: set RERANKER_API_KEY to the service's key"},
            setting="RERANKER_URL",
        )

    def close(self) -> None:
        self.service.close()

    def rerank(self, query: str, candidates: Sequence[Hit], top_n: int) -> list[Hit]:
        body = {
            "query": query,
            "documents": [passage(h) for h in candidates],
            "top_n": len(candidates),
            "return_documents": False,
        }
        resp = self.service.request("POST", self.url, json=body)
        return ordered(
            candidates, _scores(self.service.json(resp, self.service.where(self.url)), len(candidates)), top_n
        )


def _scores(data, n: int) -> list[float]:
    """Per-candidate scores from a Jina/Cohere (`results`) or TEI (list) answer; unranked ones last."""
    items = data.get("results") if isinstance(data, dict) else data
    if not isinstance(items, list):
        raise ValueError(f"unexpected rerank answer: {redact(str(data), 200)}")
    scores = [float("-inf")] * n
    for item in items:
        score = item.get("relevance_score", item.get("score"))
        scores[int(item["index"])] = float(score)
    return scores

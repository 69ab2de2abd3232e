"""Retrieval for the answer layer: hybrid search, accumulated into numbered, deduplicated evidence."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pipeline.access import FULL_ACCESS, Principal
from pipeline.answers.model import Evidence, text_hash
from pipeline.query import Hit, Searcher


@dataclass(frozen=True)
class Scope:
    """What a request may search: part of the cache key. `reader`: who asks; only what it may read is
    retrieved, and the key holds its access fingerprint, so an answer is never served to a caller who
    may not read its evidence."""

    filters: dict[str, Any] | None = None  # a surface's `filter_repo` is already in here (with_repo)
    mode: str = "hybrid"
    rerank: bool | None = None
    boost_tags: tuple[str, ...] = ()
    reader: Principal = FULL_ACCESS

    def as_dict(self) -> dict[str, Any]:
        return {
            "filters": self.filters,
            "mode": self.mode,
            "rerank": self.rerank,
            "boost_tags": sorted(self.boost_tags),
            "access": self.reader.fingerprint,
        }


def search(searcher: Searcher, query: str, scope: Scope, limit: int, per_doc: int | None = None) -> list[Hit]:
    kwargs: dict[str, Any] = {
        "filters": scope.filters,
        "boost_tags": scope.boost_tags,
        "rerank": scope.rerank,
        "reader": scope.reader,
    }
    if per_doc:
        kwargs["per_doc"] = per_doc  # the answer layer wants context: several chunks of a good document
    return searcher.search(query, limit, scope.mode, **kwargs)  # type: ignore[arg-type]


@dataclass
class EvidencePool:
    """Evidence across iterations: one pointer per distinct text, numbered in the order found."""

    limit: int
    items: list[Evidence] = field(default_factory=list)
    _ids: set[str] = field(default_factory=set)

    def add(self, hits: list[Hit]) -> int:
        """Add hits not seen before (by content); returns how many were new."""
        new = 0
        for h in hits:
            if len(self.items) >= self.limit:
                break
            eid = text_hash(h.text)
            if eid in self._ids or not h.text.strip():
                continue
            self._ids.add(eid)
            self.items.append(
                Evidence(
                    pointer=f"E{len(self.items) + 1}",
                    evidence_id=eid,
                    chunk_id=h.chunk_id,
                    text=h.text,
                    title=h.title,
                    section=h.section,
                    url=h.url,
                    doc_key=h.doc_key,
                    source=h.source,
                    chunk_index=h.chunk_index,
                    score=h.score,
                    page=h.page,
                    rerank_score=h.rerank_score,
                    blocks=tuple(getattr(h, "blocks", None) or ()),  # Hit.blocks: stores with typed blocks
                    chunk_ids=tuple(h.chunk_ids),
                )
            )
            new += 1
        return new

    @property
    def texts(self) -> dict[str, str]:
        return {e.pointer: e.text for e in self.items}

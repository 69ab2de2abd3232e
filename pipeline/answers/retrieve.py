"""Retrieval for the answer layer: hybrid search, accumulated into numbered, deduplicated evidence."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from psycopg import sql

from pipeline import access
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


_LEADS_SQL = """
SELECT doc.key, doc.title, string_agg(c.text, E'\\n\\n' ORDER BY c.ordinal)
FROM documents doc JOIN chunks c ON c.doc_key = doc.key
WHERE doc.key = ANY(%(keys)s) AND c.ordinal < 2 AND {access}
GROUP BY doc.key, doc.title
"""


def leads(conn, keys: list[str], reader: Principal = FULL_ACCESS) -> dict[str, tuple[str, str]]:
    """(title, opening text) of each document: its first two chunks, where a document says what it is
    about (a proposal's summary, a page's first paragraph)."""
    if not keys:
        return {}
    may_read, binds = access.predicate(reader)
    stmt = sql.SQL(_LEADS_SQL).format(access=may_read)
    rows = conn.execute(stmt, {"keys": keys, **binds}).fetchall()
    return {key: (title or "", text or "") for key, title, text in rows}

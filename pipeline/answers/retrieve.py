"""Retrieval for the answer layer: hybrid search, accumulated into numbered, deduplicated evidence."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import psycopg
from psycopg.rows import dict_row

from pipeline.access import FULL_ACCESS, Principal, predicate
from pipeline.answers.model import Evidence, text_hash
from pipeline.query import Hit, Searcher
from pipeline.query.hits import deep_url, joined
from pipeline.query.statements import hits as hits_statement


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
    if per_doc is not None:
        kwargs["per_doc"] = per_doc  # the answer layer wants context: several chunks of a good document
    return searcher.search(query, limit, scope.mode, **kwargs)  # type: ignore[arg-type]


def evidence(conn: psycopg.Connection, hits: list[Hit], reader: Principal = FULL_ACCESS) -> list[Evidence]:
    """What the extractive answerer (and its fit) reads of a search's `hits`: each a numbered evidence
    block, a hit that joins chunks of several sections split at their edges (`by_section`)."""
    parts = by_section(conn, hits, reader)
    pool = EvidencePool(len(parts))
    pool.add(parts)
    return pool.items


def by_section(conn: psycopg.Connection, hits: list[Hit], reader: Principal = FULL_ACCESS) -> list[Hit]:
    """`hits` with each one that joins neighbouring chunks of more than one section (search's passages,
    pipeline.query.fusion.passages) split at its sections' edges: each run of chunks of one section a
    hit of its own, with its section, anchor and blocks and the hit's score, the run holding the best
    chunk first and then the others in document order. A whole manual's pages are long and their
    sections short, so a joined hit spans several, and a line of a neighbour would be cited under the
    best chunk's heading (an option's text under another option's name); chunks of one section stay
    joined (the rest of the section is what completes its best line). What `reader` may not read, or
    what was deleted since the search, is left out."""
    ids = [i for h in hits if len(h.chunk_ids) > 1 for i in h.chunk_ids]
    if not ids:
        return hits
    may_read, binds = predicate(reader)
    with conn.cursor(row_factory=dict_row) as cur:
        rows = {r["chunk_id"]: r for r in cur.execute(hits_statement(may_read), {"ids": ids, **binds}).fetchall()}
    out: list[Hit] = []
    for h in hits:
        parts = [rows[i] for i in h.chunk_ids if i in rows]
        if len({r["section"] for r in parts}) < 2:
            out.append(h)
            continue
        runs: list[list[dict]] = []
        for r in parts:  # document order: a run is consecutive chunks of one section
            if runs and runs[-1][0]["section"] == r["section"]:
                runs[-1].append(r)
            else:
                runs.append([r])
        runs.sort(key=lambda run: all(r["chunk_id"] != h.chunk_id for r in run))  # the best chunk's first
        out += [_run_hit(h, run) for run in runs]
    return out


def _run_hit(h: Hit, run: list[dict]) -> Hit:
    """The part of hit `h` that is the chunks `run` (one section's, in document order)."""
    text, blocks = joined([r["text"] for r in run], [r["blocks"] for r in run])
    ids = tuple(r["chunk_id"] for r in run)
    first = run[0]
    return replace(
        h,
        chunk_id=h.chunk_id if h.chunk_id in ids else first["chunk_id"],
        section=first["section"],
        chunk_index=first["chunk_index"],
        text=text,
        page=first["page"],
        blocks=blocks,
        anchor=first["anchor"],
        url=deep_url(first["url"], first["anchor"]),
        span=(first["chunk_index"], run[-1]["chunk_index"]) if len(run) > 1 else None,
        chunk_ids=ids,
    )


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

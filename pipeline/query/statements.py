"""The searcher's SQL: each statement is one complete file beside this module, with typed parameters.

- `sql/dense.sql`: the dense leg (HNSW over the live generation's vectors);
- `sql/keyword.sql`: the keyword leg (Okapi BM25 from the posting lists, bm25_* tables);
- `sql/centroids.sql`: hybrid: the dense score of each candidate document as a whole;
- `sql/hits.sql`: the citation fields and text of the chunks a search returns.

Every one of them reads only what the caller may (pipeline.access): its access condition is ANDed
into the filter of the legs, and is the `{access}` of centroids.sql and hits.sql.

A hybrid search runs both legs and centroids.sql, then `hits.sql`. The files hold bind parameters
(`%(name)s`, the fields of `Reading`) and a few `{placeholders}` that psycopg.sql
fills: the compiled filter (pipeline.query.filters, `TRUE` without one), the
live generation's table and vector type, and the read depths as literals (a
cached plan then still knows its LIMITs). `statement()` composes one;
docs/query.md shows how to EXPLAIN it.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from functools import cache
from importlib.resources import files
from typing import Any, Literal

from psycopg import sql

from pipeline.access import EVERYONE
from pipeline.config import SearchConfig
from pipeline.store.generations import Generation

Leg = Literal["dense", "keyword"]


@dataclass(frozen=True)
class Reading:
    """How deep one pass of a search reads, and what its statements bind."""

    q: str  # the query text (the keyword leg's lexemes come from it)
    k: int  # candidates each leg returns
    pool: int  # keyword: listed chunks scored exactly (at least k)
    per_term: int  # keyword: postings read per query term, best first
    filtered: bool  # a filter is set: listed chunks are tested against it
    exhaustive: bool  # keyword: score every chunk the filter keeps that holds a query term
    k1: float
    b: float
    heading_extra: float  # BM25F: w - 1, so 0 is plain BM25
    prune_df: int
    prune_idf: float
    vec: Any = None  # the query vector (dense)

    @classmethod
    def first(cls, q: str, k: int, filtered: bool, cfg: SearchConfig, vec: Any = None) -> Reading:
        """The first pass: the configured depths, at least `k`."""
        return cls(
            q=q,
            k=k,
            pool=max(cfg.bm25_pool, k),
            per_term=cfg.bm25_per_term,
            filtered=filtered,
            exhaustive=False,
            k1=cfg.bm25_k1,
            b=cfg.bm25_b,
            heading_extra=cfg.bm25_heading_weight - 1.0,
            prune_df=cfg.bm25_prune_df,
            prune_idf=cfg.bm25_prune_idf,
            vec=vec,
        )

    def binds(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


@cache
def text(name: str) -> str:
    """The SQL text of `sql/<name>.sql` (package data)."""
    return files("pipeline.query").joinpath("sql", f"{name}.sql").read_text(encoding="utf-8")


def statement(
    leg: Leg, r: Reading, where: sql.Composable, gen: Generation | None = None, access: sql.Composable = EVERYONE
) -> sql.Composed:
    """A leg's statement at the depths of `r`, with the filter `where` (and, dense, `gen`'s vectors);
    keyword: its statistics those of what the access condition `access` (over `doc`) may read."""
    depths = {"k": sql.Literal(r.k), "pool": sql.Literal(r.pool), "per_term": sql.Literal(r.per_term)}
    if leg == "dense":
        if gen is None:
            raise ValueError("the dense leg reads a generation's vectors: pass `gen`")
        return sql.SQL(text("dense")).format(filter=where, vectors=gen.table, vtype=gen.column_type, k=depths["k"])
    restricted = sql.Literal(access is not EVERYONE)
    return sql.SQL(text("keyword")).format(filter=where, access=access, restricted=restricted, **depths)


def centroids(gen: Generation, access: sql.Composable = EVERYONE) -> sql.Composed:
    """sql/centroids.sql over `gen`'s vectors, for a caller with the access condition `access` (over `doc`;
    full access reads no documents row); binds `vec` and `docs` (and the condition's parameters)."""
    readable = access if access is EVERYONE else _readable(access)
    return sql.SQL(text("centroids")).format(vectors=gen.table, access=readable)


def _readable(access: sql.Composable) -> sql.Composed:
    return sql.SQL("EXISTS (SELECT FROM documents doc WHERE doc.key = c.doc_key AND {})").format(access)


def hits(access: sql.Composable = EVERYONE) -> sql.Composed:
    """sql/hits.sql, for a caller with the access condition `access`; binds `ids` (and the condition's)."""
    return sql.SQL(text("hits")).format(access=access)

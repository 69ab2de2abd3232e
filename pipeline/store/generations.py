"""Model generations: each model's vectors in a table of their own, exactly one generation live.

A generation is a model at a dimension (migration 0007, docs/generations.md). Its
vectors live in `vectors_<id>` (chunk seq → vector, deleted with their chunk),
indexed by HNSW, as `halfvec` (half precision; up to 4,000 dimensions, pgvector's
index limit; `vector_type`). States: building → live → retired → dropped.

Locks, so that search never mixes generations and no chunk is left without a
vector of the live one:
- a writer of chunks (the ingest's swap) holds its generation's row `FOR SHARE`
  (`lock_for_write`) for its transaction, and refuses when it is no longer live;
- the switch (`switch`) updates both rows first, so it waits for every such
  writer, then checks the new table covers every chunk, all in one transaction;
- a search reads one generation's table in one statement and learns, in the same
  snapshot, whether it was still live (pipeline.query.search).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal

import psycopg
from psycopg import sql
from psycopg.rows import class_row

from pipeline.config import MAX_DIMENSIONS
from pipeline.errors import StoreError
from pipeline.store.db import lock_id, scalar

VECTOR_MAX = 2000  # pgvector's HNSW limit for `vector`; above it, `halfvec` (up to MAX_DIMENSIONS)
HNSW = "WITH (m = 16, ef_construction = 64)"  # as migration 0001 built chunks_embedding
State = Literal["building", "live", "retired", "dropped"]
_COLUMNS = "id, model, name, dimension, vector_type, state, created_at, live_at, retired_at"
# A chunk of a page indexed for keyword search only (an index page: pipeline.ingest.embeddings) has no
# vector in any generation; whatever counts chunks without one leaves them out. `d`: the chunk's document.
KEYWORD_ONLY = "coalesce((d.meta->>'keyword_only')::boolean, false)"


@dataclass(frozen=True)
class Generation:
    id: int
    model: str  # the model's id
    name: str  # as configured when it was built: how to load it again
    dimension: int
    vector_type: str  # "vector" | "halfvec"
    state: str
    created_at: datetime | None = None
    live_at: datetime | None = None
    retired_at: datetime | None = None

    @property
    def table(self) -> sql.Identifier:
        return sql.Identifier(f"vectors_{self.id}")

    @property
    def table_name(self) -> str:
        return f"vectors_{self.id}"

    @property
    def column_type(self) -> sql.Composable:
        """The vectors' SQL type, e.g. vector(384) or halfvec(2560): what a query vector is cast to."""
        return sql.SQL(f"{self.vector_type}({int(self.dimension)})")

    def same_vectors(self, other: Generation) -> bool:
        """True when other's vectors are this one's: the same model at the same dimension."""
        return (self.model, self.dimension) == (other.model, other.dimension)


class GenerationChanged(StoreError):
    """The generation a writer embedded for stopped being live (a reindex switched): embed again."""


def vector_type(dimension: int) -> str:
    """The one place a generation's vector type is decided: `halfvec` at every width. Half the bytes of
    `vector`, table and HNSW index, for recall@10 within the graph's own noise on real vectors
    (docs/performance.md); migration 0008 converted the live generations of older stores. `vector`
    (float32) remains a valid type of a generation made before."""
    if dimension > MAX_DIMENSIONS:
        raise StoreError(
            f"{dimension} dimensions is over pgvector's HNSW limit ({MAX_DIMENSIONS}, as halfvec): "
            "set embedding.dimensions (Matryoshka truncation) to at most that"
        )
    return "halfvec"


def _rows(conn: psycopg.Connection, where: str, params: tuple = ()) -> list[Generation]:
    if not scalar(conn, "SELECT to_regclass('generations')"):
        return []
    with conn.cursor(row_factory=class_row(Generation)) as cur:
        return cur.execute(f"SELECT {_COLUMNS} FROM generations WHERE {where} ORDER BY id", params).fetchall()


def live(conn: psycopg.Connection) -> Generation | None:
    """The generation search reads and ingest writes, or None for an empty store."""
    rows = _rows(conn, "state = 'live'")
    return rows[0] if rows else None


def building(conn: psycopg.Connection) -> Generation | None:
    rows = _rows(conn, "state = 'building'")
    return rows[0] if rows else None


def every(conn: psycopg.Connection) -> list[Generation]:
    return _rows(conn, "true")


def get(conn: psycopg.Connection, gen_id: int) -> Generation | None:
    rows = _rows(conn, "id = %s", (gen_id,))
    return rows[0] if rows else None


def create(conn: psycopg.Connection, model: str, name: str, dimension: int, state: State) -> Generation:
    """A new generation with its empty, indexed table (one transaction)."""
    kind = vector_type(dimension)
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (lock_id("generations"),))  # one new id at a time
        gen_id = scalar(conn, "SELECT coalesce(max(id), 0) + 1 FROM generations")
        gen = Generation(gen_id, model, name, dimension, kind, state)
        conn.execute(
            "INSERT INTO generations (id, model, name, dimension, vector_type, state, live_at) "
            "VALUES (%s, %s, %s, %s, %s, %s, CASE WHEN %s = 'live' THEN now() END)",
            (gen_id, model, name, dimension, kind, state, state),
        )
        conn.execute(
            sql.SQL(
                "CREATE TABLE {} (seq bigint PRIMARY KEY REFERENCES chunks (seq) ON DELETE CASCADE, "
                "embedding {} NOT NULL)"
            ).format(gen.table, gen.column_type)
        )
        conn.execute(
            sql.SQL("CREATE INDEX {} ON {} USING hnsw (embedding {}) " + HNSW).format(
                sql.Identifier(f"{gen.table_name}_hnsw"), gen.table, sql.Identifier(f"{kind}_cosine_ops")
            )
        )
    return gen


def lock_for_write(conn: psycopg.Connection, gen: Generation) -> None:
    """In the caller's transaction: hold `gen` live until commit, or raise GenerationChanged."""
    state = conn.execute("SELECT state FROM generations WHERE id = %s FOR SHARE", (gen.id,)).fetchone()
    if state is None or state[0] != "live":
        raise GenerationChanged(
            f"generation {gen.id} ({gen.model}) is no longer live: a reindex switched models while this run embedded"
        )


def _count(conn: psycopg.Connection, query: sql.Composed | sql.SQL) -> int:
    row = conn.execute(query).fetchone()
    return int(row[0]) if row else 0


def missing(conn: psycopg.Connection, gen: Generation) -> int:
    """Chunks that should have a vector of `gen` and have none."""
    return _count(
        conn,
        sql.SQL(
            "SELECT count(*) FROM chunks c LEFT JOIN documents d ON d.key = c.doc_key "
            f"WHERE NOT {KEYWORD_ONLY} AND NOT EXISTS (SELECT 1 FROM {{}} v WHERE v.seq = c.seq)"
        ).format(gen.table),
    )


def coverage(conn: psycopg.Connection, gen: Generation) -> tuple[int, int]:
    """(chunks with a vector of `gen`, chunks that should have one): a building generation's progress."""
    chunks = _count(
        conn,
        sql.SQL(f"SELECT count(*) FROM chunks c LEFT JOIN documents d ON d.key = c.doc_key WHERE NOT {KEYWORD_ONLY}"),
    )
    return (0 if gen.state == "dropped" else _count(conn, sql.SQL("SELECT count(*) FROM {}").format(gen.table))), chunks


class _Incomplete(Exception):
    def __init__(self, n: int):
        self.n = n


def switch(conn: psycopg.Connection, new: Generation, also: str | None = None, params: dict | None = None) -> int:
    """Make the building generation `new` live in one transaction, unless chunks lack its vectors: then
    nothing changes and their number is returned (embed them, switch again); 0 once switched. `also`
    runs in the same transaction (the ledger's update)."""
    try:
        with conn.transaction():
            # Both rows first: this waits for every writer holding the live row (lock_for_write), and a
            # writer that comes after waits for this transaction, then finds its generation retired.
            conn.execute("SELECT id FROM generations WHERE state = 'live' OR id = %s ORDER BY id FOR UPDATE", (new.id,))
            state = scalar(conn, "SELECT state FROM generations WHERE id = %s", (new.id,))
            if state != "building":
                raise StoreError(f"generation {new.id} is {state}, not building: was the reindex cancelled?")
            conn.execute("LOCK TABLE chunks IN SHARE MODE")  # and any writer that knows no generations
            if n := missing(conn, new):
                raise _Incomplete(n)
            conn.execute("UPDATE generations SET state = 'retired', retired_at = now() WHERE state = 'live'")
            conn.execute("UPDATE generations SET state = 'live', live_at = now() WHERE id = %s", (new.id,))
            if also is not None:
                conn.execute(also, params)
    except _Incomplete as e:
        return e.n
    return 0


def drop(conn: psycopg.Connection, gen: Generation) -> None:
    """Drop a retired (or cancelled building) generation's table; the row stays, as history.
    DROP waits for searches still reading the table; one that starts after finds the live one."""
    if gen.state == "live":
        raise StoreError(f"generation {gen.id} is live: it cannot be dropped")
    with conn.transaction():
        conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(gen.table))
        conn.execute("UPDATE generations SET state = 'dropped' WHERE id = %s", (gen.id,))

"""The `answers` table (migration 0005): stored answers, found by their cache key, and the store's state
that key reads.

What goes into a key is the answer layer's (pipeline.answers.cache); this module runs the statements:
`state` (what an answer depends on in the store, one round trip), `lookup` (the newest answer under a
key, served only while every chunk its evidence joins is unchanged), `get`, `insert`, `purge`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from pipeline.store.db import scalar

# The documents' digest: XOR and sum of two differently seeded 64-bit hashes of (key, content hash, access):
# order-free, so no sort, and one pass (0.3-0.5 ms at 650 documents where an md5 over the sorted
# rows took 3); keys are unique, so no two rows cancel out in the XOR.
_STATE = """
SELECT (SELECT count(*) || ':' || coalesce(bit_xor(hashtextextended(x.line, 0)), 0)
               || ':' || coalesce(sum(hashtextextended(x.line, 1)::numeric), 0)
          FROM documents d
          CROSS JOIN LATERAL (SELECT d.key || ':' || d.content_hash || coalesce(d.access::text, '') AS line) x
          WHERE %(all)s OR d.source = ANY(%(sources)s)),
       (SELECT coalesce(string_agg(DISTINCT chunker, ',' ORDER BY chunker), '') FROM ledger),
       (SELECT max(version) FROM schema_migrations),
       (SELECT coalesce(string_agg(key || '=' || value, ',' ORDER BY key), '') FROM docforge_meta)
           || ';generation=' || coalesce((SELECT id::text FROM generations WHERE state = 'live'), '')  -- 0007
"""


def state(conn: psycopg.Connection, sources: list[str] | None) -> dict[str, Any]:
    """What the answer depends on in the store (one round trip)."""
    row = conn.execute(_STATE, {"all": sources is None, "sources": sources or []}).fetchone()
    assert row is not None  # an aggregate always returns a row
    return {"documents": row[0], "chunkers": row[1], "schema": row[2], "meta": row[3], "sources": sources}


@dataclass(frozen=True)
class Stored:
    id: str
    cache_key: str
    question: str
    model: str
    audit_mode: str
    dag_root: str
    answer: dict[str, Any]
    stages: list[dict[str, Any]]
    created_at: Any
    hits: int
    fresh: bool = True  # its evidence is what the store holds now (`lookup`; `get` does not look)


_COLS = "id, cache_key, question, model, audit_mode, dag_root, answer, stages, created_at, hits"

# The newest answer under a key, whether every evidence block of it is still what its chunks hold (their
# texts now, joined as the search joined them, hash to the block's recorded hash; a block recorded with
# one chunk id is read as that chunk), and a hit counted only when it is. Each chunk is read by its key
# (a subquery per id): joined, the planner guessed 100 ids per JSON array and hashed the whole chunks
# table on every lookup, which a cold store reads from disk (seconds on a large index).
_LOOKUP = f"""
WITH newest AS (
    SELECT {_COLS} FROM answers WHERE cache_key = %(key)s ORDER BY created_at DESC LIMIT 1
), blocks AS (
    SELECT b.value AS block, b.ordinality AS n
    FROM newest,
         LATERAL (SELECT s->'payload' AS p FROM jsonb_array_elements(newest.stages) s
                  WHERE s->>'stage' = 'evidence') ev,
         LATERAL jsonb_array_elements(CASE WHEN jsonb_typeof(ev.p) = 'array' THEN ev.p ELSE '[]' END)
             WITH ORDINALITY b
), changed AS (
    SELECT count(*) AS n FROM (
        SELECT bl.block->>'text_hash' AS recorded,
               encode(sha256(convert_to(string_agg(part.text, %(join)s ORDER BY part.i), 'UTF8')), 'hex') AS now,
               count(part.text) AS found, count(*) AS wanted
        FROM blocks bl
        CROSS JOIN LATERAL (
            SELECT p.i, (SELECT c.text FROM chunks c WHERE c.id = p.id) AS text  -- by its key, one at a time
            FROM jsonb_array_elements_text(
                CASE WHEN jsonb_typeof(bl.block->'chunk_ids') = 'array'
                          AND jsonb_array_length(bl.block->'chunk_ids') > 0
                     THEN bl.block->'chunk_ids' ELSE jsonb_build_array(bl.block->'chunk_id') END
            ) WITH ORDINALITY p(id, i)
        ) part
        GROUP BY bl.n, bl.block->>'text_hash'
    ) b WHERE b.found < b.wanted OR b.now IS DISTINCT FROM b.recorded
), counted AS (
    UPDATE answers a SET hits = a.hits + 1, last_hit_at = now()
    FROM newest, changed WHERE a.id = newest.id AND changed.n = 0
    RETURNING a.hits
)
SELECT {_COLS.replace("hits", "coalesce((SELECT hits FROM counted), newest.hits)")}, changed.n = 0
FROM newest, changed
"""


def lookup(conn: psycopg.Connection, key: str, join: str) -> Stored | None:
    """The newest answer stored under `key`, counted as a hit when its evidence is unchanged; one whose
    evidence changed comes back with `fresh` False and uncounted (the caller answers afresh). `join`:
    what the search put between the texts of the chunks a block joins (pipeline.query.hits.JOIN)."""
    row = conn.execute(_LOOKUP, {"key": key, "join": join}).fetchone()
    return Stored(*row) if row else None


def get(conn: psycopg.Connection, answer_id: str) -> Stored | None:
    row = conn.execute(f"SELECT {_COLS} FROM answers WHERE id = %s", (answer_id,)).fetchone()
    return Stored(*row) if row else None


def insert(
    conn: psycopg.Connection,
    *,
    answer_id: str,
    key: str,
    question: str,
    model: str,
    audit_mode: str,
    dag_root: str,
    answer: dict[str, Any],
    stages: list[dict[str, Any]],
) -> None:
    conn.execute(
        "INSERT INTO answers (id, cache_key, question, model, audit_mode, dag_root, answer, stages) "
        "VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
        (answer_id, key, question, model, audit_mode, dag_root, Jsonb(answer), Jsonb(stages)),
    )


def recorded(conn: psycopg.Connection) -> bool:
    """The store has the `answers` table (migration 0005 applied)."""
    return bool(scalar(conn, "SELECT to_regclass('answers')"))


def purge(conn: psycopg.Connection) -> int:
    """Delete every stored answer; returns how many there were."""
    if not recorded(conn):
        return 0
    return conn.execute("DELETE FROM answers").rowcount

"""Store upkeep outside an ingest run: purge a removed source, check the index's invariants.

Dagster-free: the sources-sync sensor and the asset checks call these, and a
CLI command could too. Every check takes a partition (a sources.yml name) or
None for the whole store, and returns a `Finding`: how many rows break the
invariant and a sample of their ids.
"""

from __future__ import annotations

from dataclasses import dataclass

import psycopg

from pipeline.errors import StoreError
from pipeline.store.db import lock_id
from pipeline.store.schema import store_model

SAMPLE = 50  # offending ids reported per check; the count is always exact


@dataclass(frozen=True)
class Purged:
    """Rows deleted for one removed source."""

    sources: int = 0
    chunks: int = 0
    ledger: int = 0
    staged: int = 0
    failures: int = 0

    @property
    def deleted(self) -> int:
        return self.sources + self.chunks + self.ledger + self.staged + self.failures


@dataclass(frozen=True)
class Finding:
    """Rows that break one invariant: the exact count and up to SAMPLE of their ids."""

    count: int = 0
    ids: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return self.count == 0


def has_schema(conn: psycopg.Connection) -> bool:
    return conn.execute("SELECT to_regclass('chunks') IS NOT NULL").fetchone()[0]


def stored_partitions(conn: psycopg.Connection) -> set[str]:
    """Every partition with any row in the store (indexed, staged or failed)."""
    if not has_schema(conn):
        return set()
    rows = conn.execute("SELECT partition FROM sources UNION SELECT partition FROM ledger "
                        "UNION SELECT partition FROM staged_documents UNION SELECT partition FROM failures")
    return {r[0] for r in rows}


def purge_partition(conn: psycopg.Connection, name: str) -> Purged:
    """Delete every row of source `name` in one transaction.

    Takes the partition's advisory lock without waiting: a run ingesting the
    source right now would re-insert what we delete, so we refuse instead and
    the caller retries later.
    """
    if not has_schema(conn):
        return Purged()
    key = lock_id(f"partition:{name}")
    if not conn.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()[0]:
        raise StoreError(f"source {name!r} is being ingested right now; purge it again once that run ends")
    try:
        with conn.transaction():
            return _delete_rows(conn, name)
    finally:
        conn.execute("SELECT pg_advisory_unlock(%s)", (key,))


def _delete_rows(conn: psycopg.Connection, name: str) -> Purged:
    p = {"p": name}
    # Chunks first, counted apart from the FK cascade; orphans (no sources row) go by key prefix.
    chunks = conn.execute(
        "DELETE FROM chunks c WHERE c.source_key IN (SELECT key FROM sources WHERE partition = %(p)s) "
        "OR (left(c.source_key, length(%(p)s) + 1) = %(p)s || ':' "
        "    AND NOT EXISTS (SELECT 1 FROM sources s WHERE s.key = c.source_key))", p).rowcount
    return Purged(
        chunks=chunks,
        sources=conn.execute("DELETE FROM sources WHERE partition = %(p)s", p).rowcount,
        ledger=conn.execute("DELETE FROM ledger WHERE partition = %(p)s", p).rowcount,
        staged=conn.execute("DELETE FROM staged_documents WHERE partition = %(p)s", p).rowcount,
        failures=conn.execute("DELETE FROM failures WHERE partition = %(p)s", p).rowcount,
    )


def _finding(conn: psycopg.Connection, sql: str, params: dict) -> Finding:
    """Run `sql` (one id column) and return the exact count plus a sorted sample."""
    rows = conn.execute(f"SELECT id, count(*) OVER () FROM ({sql}) q ORDER BY id LIMIT {SAMPLE}", params).fetchall()
    return Finding(rows[0][1], tuple(r[0] for r in rows)) if rows else Finding()


_IN_PARTITION = "(%(p)s::text IS NULL OR s.partition = %(p)s)"


def chunks_without_embedding(conn: psycopg.Connection, partition: str | None) -> Finding:
    """Chunks whose vector is missing, of another dimension, or from another model than the store's."""
    model = store_model(conn) if has_schema(conn) else None
    if model is None:
        return Finding()
    return _finding(conn, f"""
        SELECT c.id FROM chunks c JOIN sources s ON s.key = c.source_key WHERE {_IN_PARTITION}
        AND (c.embedding IS NULL OR vector_dims(c.embedding) <> %(dim)s OR c.model <> %(model)s)""",
                    {"p": partition, "dim": model[1], "model": model[0]})


def orphan_chunks(conn: psycopg.Connection, partition: str | None) -> Finding:
    """Chunks whose document has no `sources` row (search could return them, nothing deletes them)."""
    if not has_schema(conn):
        return Finding()
    return _finding(conn, """
        SELECT c.id FROM chunks c WHERE NOT EXISTS (SELECT 1 FROM sources s WHERE s.key = c.source_key)
        AND (%(p)s::text IS NULL OR left(c.source_key, length(%(p)s) + 1) = %(p)s || ':')""", {"p": partition})


def ledger_mismatches(conn: psycopg.Connection, partition: str | None) -> Finding:
    """Document keys where the ledger and the index disagree.

    A ledger row without a `sources` row (or the reverse), or one whose
    partition, content hash or chunk count differs from what is stored: the
    next run would then skip a document that is not really indexed.
    """
    if not has_schema(conn):
        return Finding()
    return _finding(conn, f"""
        WITH s AS (SELECT key, partition, content_hash FROM sources s WHERE {_IN_PARTITION}),
             l AS (SELECT source_key, partition, content_hash, chunk_count FROM ledger
                   WHERE %(p)s::text IS NULL OR partition = %(p)s),
             n AS (SELECT source_key, count(*) AS n FROM chunks
                   WHERE source_key IN (SELECT key FROM s UNION SELECT source_key FROM l) GROUP BY source_key)
        SELECT coalesce(l.source_key, s.key) AS id
        FROM l FULL JOIN s ON s.key = l.source_key LEFT JOIN n ON n.source_key = coalesce(l.source_key, s.key)
        WHERE l.source_key IS NULL OR s.key IS NULL OR l.partition <> s.partition
           OR l.content_hash <> s.content_hash OR l.chunk_count <> coalesce(n.n, 0)""", {"p": partition})


def oversized_chunks(conn: psycopg.Connection, partition: str | None, window: int) -> Finding:
    """Chunks longer than the model's window (the model would silently truncate them)."""
    if not has_schema(conn):
        return Finding()
    return _finding(conn, f"""
        SELECT c.id FROM chunks c JOIN sources s ON s.key = c.source_key
        WHERE {_IN_PARTITION} AND c.token_count > %(window)s""", {"p": partition, "window": window})

"""Store upkeep outside an ingest run: purge a removed source, check the index's invariants.

Orchestrator-free: the sources-sync sensor and the asset checks call these, and
a CLI command could too. Every check takes a source (a sources.yml name) or
None for the whole store, and returns a `Finding`: how many rows break the
invariant and a sample of their ids.
"""

from __future__ import annotations

from dataclasses import dataclass

import psycopg
from psycopg import sql
from psycopg.rows import dict_row

from pipeline.access import Principal, predicate
from pipeline.errors import StoreError
from pipeline.store import generations
from pipeline.store.db import lock_id, scalar, source_lock
from pipeline.store.schema import upgrade_built

SAMPLE = 50  # offending ids reported per check; the count is always exact


@dataclass(frozen=True)
class Purged:
    """Rows deleted for one removed source."""

    documents: int = 0
    chunks: int = 0
    ledger: int = 0
    staged: int = 0
    failures: int = 0

    @property
    def deleted(self) -> int:
        return self.documents + self.chunks + self.ledger + self.staged + self.failures


@dataclass(frozen=True)
class Finding:
    """Rows that break one invariant: the exact count and up to SAMPLE of their ids."""

    count: int = 0
    ids: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return self.count == 0


def has_schema(conn: psycopg.Connection) -> bool:
    """True for a built store, its schema brought up to date first."""
    return upgrade_built(conn) is not None


def stored_sources(conn: psycopg.Connection) -> set[str]:
    """Every source with any row in the store (indexed, staged or failed)."""
    if not has_schema(conn):
        return set()
    rows = conn.execute(
        "SELECT source FROM documents UNION SELECT source FROM ledger "
        "UNION SELECT source FROM staged_documents UNION SELECT source FROM failures"
    )
    return {source for (source,) in rows}


def purge_source(conn: psycopg.Connection, name: str) -> Purged:
    """Delete every row of source `name` in one transaction.

    Takes the source's advisory lock without waiting: a run ingesting the
    source right now would re-insert what we delete, so we refuse instead and
    the caller retries later.
    """
    if not has_schema(conn):
        return Purged()
    key = lock_id(source_lock(name))
    if not scalar(conn, "SELECT pg_try_advisory_lock(%s)", (key,)):
        raise StoreError(f"source {name!r} is being ingested right now; purge it again once that run ends")
    try:
        with conn.transaction():
            return _delete_rows(conn, name)
    finally:
        conn.execute("SELECT pg_advisory_unlock(%s)", (key,))


def _delete_rows(conn: psycopg.Connection, name: str) -> Purged:
    p = {"p": name}
    if scalar(conn, "SELECT to_regclass('furniture')"):  # what its pages repeat (migration 0017)
        conn.execute("DELETE FROM furniture WHERE source = %(p)s", p)
    # Chunks first, counted apart from the FK cascade; orphans (no documents row) go by key prefix.
    chunks = conn.execute(
        "DELETE FROM chunks c WHERE c.doc_key IN (SELECT key FROM documents WHERE source = %(p)s) "
        "OR (left(c.doc_key, length(%(p)s) + 1) = %(p)s || ':' "
        "    AND NOT EXISTS (SELECT 1 FROM documents d WHERE d.key = c.doc_key))",
        p,
    ).rowcount
    return Purged(
        chunks=chunks,
        documents=conn.execute("DELETE FROM documents WHERE source = %(p)s", p).rowcount,
        ledger=conn.execute("DELETE FROM ledger WHERE source = %(p)s", p).rowcount,
        staged=conn.execute("DELETE FROM staged_documents WHERE source = %(p)s", p).rowcount,
        failures=conn.execute("DELETE FROM failures WHERE source = %(p)s", p).rowcount,
    )


def _finding(conn: psycopg.Connection, sql: str, params: dict) -> Finding:
    """Run `sql` (one id column) and return the exact count plus a sorted sample."""
    with conn.cursor(row_factory=dict_row) as cur:
        rows = cur.execute(
            f"SELECT id, count(*) OVER () AS total FROM ({sql}) q ORDER BY id LIMIT {SAMPLE}", params
        ).fetchall()
    return Finding(rows[0]["total"], tuple(r["id"] for r in rows)) if rows else Finding()


_IN_SOURCE = "(%(p)s::text IS NULL OR d.source = %(p)s)"


def chunks_without_embedding(conn: psycopg.Connection, source: str | None) -> Finding:
    """Chunks without a vector of the live generation (the model search embeds queries with)."""
    if upgrade_built(conn) is None or (gen := generations.live(conn)) is None:
        return Finding()
    return _finding(
        conn,
        sql.SQL(f"""
        SELECT c.id FROM chunks c JOIN documents d ON d.key = c.doc_key WHERE {_IN_SOURCE}
        AND NOT {generations.KEYWORD_ONLY} AND NOT EXISTS (SELECT 1 FROM {{}} v WHERE v.seq = c.seq)""")
        .format(gen.table)
        .as_string(conn),
        {"p": source},
    )


def orphan_chunks(conn: psycopg.Connection, source: str | None) -> Finding:
    """Chunks whose document has no `documents` row (search could not cite them, nothing deletes them)."""
    if not has_schema(conn):
        return Finding()
    return _finding(
        conn,
        """
        SELECT c.id FROM chunks c WHERE NOT EXISTS (SELECT 1 FROM documents d WHERE d.key = c.doc_key)
        AND (%(p)s::text IS NULL OR left(c.doc_key, length(%(p)s) + 1) = %(p)s || ':')""",
        {"p": source},
    )


def ledger_mismatches(conn: psycopg.Connection, source: str | None) -> Finding:
    """Document keys where the ledger and the index disagree.

    A ledger row without a `documents` row (or the reverse), or one whose
    source, content hash or chunk count differs from what is stored: the
    next run would then skip a document that is not really indexed.
    """
    if not has_schema(conn):
        return Finding()
    return _finding(
        conn,
        f"""
        WITH d AS (SELECT key, source, content_hash FROM documents d WHERE {_IN_SOURCE}),
             l AS (SELECT doc_key, source, content_hash, chunk_count FROM ledger
                   WHERE %(p)s::text IS NULL OR source = %(p)s),
             n AS (SELECT doc_key, count(*) AS n FROM chunks
                   WHERE doc_key IN (SELECT key FROM d UNION SELECT doc_key FROM l) GROUP BY doc_key)
        SELECT coalesce(l.doc_key, d.key) AS id
        FROM l FULL JOIN d ON d.key = l.doc_key LEFT JOIN n ON n.doc_key = coalesce(l.doc_key, d.key)
        WHERE l.doc_key IS NULL OR d.key IS NULL OR l.source <> d.source
           OR l.content_hash <> d.content_hash OR l.chunk_count <> coalesce(n.n, 0)""",
        {"p": source},
    )


def oversized_chunks(conn: psycopg.Connection, source: str | None, window: int) -> Finding:
    """Chunks longer than the model's window (the model would silently truncate them)."""
    if not has_schema(conn):
        return Finding()
    return _finding(
        conn,
        f"""
        SELECT c.id FROM chunks c JOIN documents d ON d.key = c.doc_key
        WHERE {_IN_SOURCE} AND c.token_count > %(window)s""",
        {"p": source, "window": window},
    )


# Counted from the documents the reader may read ({} its access condition over `doc`); `stored`: any at all.
_PER_SOURCE = """
SELECT doc.source, count(DISTINCT doc.key) FILTER (WHERE {0}) AS documents, count(c.id) FILTER (WHERE {0}) AS chunks,
       max(doc.last_crawled_at) FILTER (WHERE {0}) AS last_indexed
FROM documents doc LEFT JOIN chunks c ON c.doc_key = doc.key GROUP BY doc.source
"""


def per_source(
    conn: psycopg.Connection, configured: list[str], built: bool = True, reader: Principal | None = None
) -> list[dict]:
    """Each source's documents, chunks, last ingest and failures: the configured ones first, then any the
    store still holds (`docforge status`, the HTTP API's GET /sources). With a `reader`: counted from what
    it may read, and `stored` says whether the store holds any document of the source at all."""
    may_read, binds = predicate(reader)
    with conn.cursor(row_factory=dict_row) as cur:
        rows = {r["source"]: r for r in cur.execute(sql.SQL(_PER_SOURCE).format(may_read), binds)} if built else {}
    fails: dict[str, int] = {}
    if built:
        fails = dict(conn.execute("SELECT source, count(*) FROM failures GROUP BY source").fetchall())
    names = list(dict.fromkeys(configured + list(rows)))
    none = {"documents": 0, "chunks": 0, "last_indexed": None}
    return [
        {
            "name": n,
            "configured": n in configured,
            "documents": rows.get(n, none)["documents"],
            "chunks": rows.get(n, none)["chunks"],
            "last_indexed": last.isoformat() if (last := rows.get(n, none)["last_indexed"]) else None,
            "failures": fails.get(n, 0),
        }
        | ({"stored": n in rows} if reader is not None else {})
        for n in names
    ]

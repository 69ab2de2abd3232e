"""Versioned migrations and the one-model-per-store guard.

Migrations are `migrations/NNNN_name.sql`, applied in order under an advisory
lock and recorded in `schema_migrations`. `docforge_meta` records the model and
dimension the store was built for; opening it with another model is refused.
"""

from __future__ import annotations

from importlib import resources

import psycopg

from pipeline.errors import StoreError
from pipeline.store.db import advisory_lock, scalar

_META = "CREATE TABLE IF NOT EXISTS docforge_meta (key text PRIMARY KEY, value text NOT NULL)"
_MIGRATIONS = ("CREATE TABLE IF NOT EXISTS schema_migrations "
               "(version text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())")


def migrations() -> list[tuple[str, str]]:
    files = resources.files("pipeline.store") / "migrations"
    return sorted((f.name.removesuffix(".sql"), f.read_text()) for f in files.iterdir() if f.name.endswith(".sql"))


def store_model(conn: psycopg.Connection) -> tuple[str, int] | None:
    """(model, dimension) the store was built for, or None for an empty store."""
    if not scalar(conn, "SELECT to_regclass('docforge_meta')"):
        return None
    rows: dict[str, str] = dict(conn.execute("SELECT key, value FROM docforge_meta").fetchall())
    return (rows["model"], int(rows["dimension"])) if "model" in rows else None


def is_current(conn: psycopg.Connection) -> bool:
    """True when every migration has been applied (a cheap check for readers)."""
    if not scalar(conn, "SELECT to_regclass('schema_migrations')"):
        return False
    done = {version for (version,) in conn.execute("SELECT version FROM schema_migrations")}
    return all(version in done for version, _ in migrations())


def ensure_schema(conn: psycopg.Connection, model: str, dim: int) -> None:
    """Create or upgrade the schema for `model`; refuse a store built for another model."""
    current = store_model(conn)
    if current and current != (model, dim):
        raise StoreError(
            f"this store was built for embedding model {current[0]!r} (dimension {current[1]}), "
            f"but the configured model is {model!r} (dimension {dim}); vectors of the two cannot be mixed. "
            "Point DATABASE_URL/DOCFORGE_HOME at a new store, or run `docforge db reset --yes` to re-index.")
    with advisory_lock(conn, "schema"), conn.transaction():
        conn.execute(_META)
        conn.execute(_MIGRATIONS)
        done = {version for (version,) in conn.execute("SELECT version FROM schema_migrations")}
        for version, sql in migrations():
            if version not in done:
                conn.execute(sql.replace("{dim}", str(int(dim))))
                conn.execute("INSERT INTO schema_migrations (version) VALUES (%s)", (version,))
        conn.execute("INSERT INTO docforge_meta VALUES ('model', %s), ('dimension', %s) ON CONFLICT DO NOTHING",
                     (model, str(dim)))


def open_built(conn: psycopg.Connection) -> tuple[str, int] | None:
    """The store's (model, dimension) with its schema brought up to date, or None for an empty store.

    For readers and upkeep (search, status, checks, purge): they never create a
    store, but must not meet an older store's table and column names.
    """
    built = store_model(conn)
    if built and not is_current(conn):
        ensure_schema(conn, *built)
    return built


def drop_all(conn: psycopg.Connection) -> None:
    """Remove every docforge table (for `docforge db reset`)."""
    with conn.transaction():
        # "sources": the documents table's name before migration 0004
        for t in ("staged_chunks", "staged_documents", "failures", "chunks", "ledger", "documents", "sources",
                  "bm25_postings", "bm25_terms", "bm25_stats", "answers", "schema_migrations", "docforge_meta"):
            conn.execute(f"DROP TABLE IF EXISTS {t} CASCADE")

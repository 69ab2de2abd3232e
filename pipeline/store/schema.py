"""Versioned migrations, and the store's live model generation.

Migrations are `migrations/NNNN_name.sql`, applied in order under an advisory
lock and recorded in `schema_migrations`. The model a store's vectors come from
is its live generation's (pipeline.store.generations, migration 0008); before
0008, `docforge_meta` recorded the one model a store was built for.
"""

from __future__ import annotations

from importlib import resources

import psycopg

from pipeline.store import generations
from pipeline.store.db import advisory_lock, scalar

_META = "CREATE TABLE IF NOT EXISTS docforge_meta (key text PRIMARY KEY, value text NOT NULL)"
_MIGRATIONS = (
    "CREATE TABLE IF NOT EXISTS schema_migrations "
    "(version text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())"
)


def migrations() -> list[tuple[str, str]]:
    files = resources.files("pipeline.store") / "migrations"
    return sorted((f.name.removesuffix(".sql"), f.read_text()) for f in files.iterdir() if f.name.endswith(".sql"))


def store_model(conn: psycopg.Connection) -> tuple[str, int] | None:
    """(model, dimension) of the store's live generation, or None for an empty store."""
    if gen := generations.live(conn):
        return gen.model, gen.dimension
    if not scalar(conn, "SELECT to_regclass('docforge_meta')"):
        return None
    rows: dict[str, str] = dict(conn.execute("SELECT key, value FROM docforge_meta").fetchall())
    return (rows["model"], int(rows["dimension"])) if "model" in rows else None  # a store before 0008


def is_current(conn: psycopg.Connection) -> bool:
    """True when every migration has been applied (a cheap check for readers)."""
    if not scalar(conn, "SELECT to_regclass('schema_migrations')"):
        return False
    done = {version for (version,) in conn.execute("SELECT version FROM schema_migrations")}
    return all(version in done for version, _ in migrations())


def ensure_schema(conn: psycopg.Connection, model: str, dim: int, name: str | None = None) -> None:
    """Create or upgrade the schema; a store without a live generation gets one for `model`
    (`name`: how to load it, default the id). A store already built keeps its live generation,
    whatever `model` is: `docforge reindex` changes it (ingest and search follow it)."""
    with advisory_lock(conn, "schema"), conn.transaction():
        conn.execute(_META)
        conn.execute(_MIGRATIONS)
        done = {version for (version,) in conn.execute("SELECT version FROM schema_migrations")}
        for version, sql in migrations():
            if version not in done:
                # {dim}: migrations 0001-0007 shaped chunks.embedding, which 0008 moves into generation 1's
                # own table (a new store's generation is made below, at any width up to halfvec's limit).
                conn.execute(sql.replace("{dim}", str(min(int(dim), generations.VECTOR_MAX))))
                conn.execute("INSERT INTO schema_migrations (version) VALUES (%s)", (version,))
        if generations.live(conn) is None:
            generations.create(conn, model, name or model, int(dim), "live")


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
        # "sources": the documents table's name before migration 0004; bm25_blocks before bm25_postings,
        # a view of it since migration 0009 (a table before)
        # vectors_<n>: the generations' tables (migration 0008)
        vectors = [
            t
            for (t,) in conn.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = current_schema() AND tablename ~ '^vectors_[0-9]+$'"
            )
        ]
        for t in (
            *vectors,
            "generations",
            "generation_overflow",
            "staged_chunks",
            "staged_documents",
            "failures",
            "chunks",
            "ledger",
            "documents",
            "sources",
            "bm25_blocks",
            "bm25_docs",
            "bm25_postings",
            "bm25_terms",
            "bm25_stats",
            "answers",
            "sentence_vectors",
            "deliveries",
            "schema_migrations",
            "docforge_meta",
        ):
            conn.execute(f"DROP TABLE IF EXISTS {t} CASCADE")

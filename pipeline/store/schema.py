"""Versioned migrations, and the store's live model generation.

Migrations are `migrations/NNNN_name.sql`, applied in order under an advisory
lock and recorded in `schema_migrations`. Writers apply them (ingest, reindex,
upkeep, `docforge db migrate`: `ensure_schema`, `upgrade_built`); readers (search,
ask, status, the API) never do: `open_built` refuses an older store with
`OutdatedStore`, which says to run `docforge db migrate`. The model a store's vectors come from
is its live generation's (pipeline.store.generations, migration 0007); before
0007, `docforge_meta` recorded the one model a store was built for.
"""

from __future__ import annotations

from importlib import resources

import psycopg

from pipeline.errors import OutdatedStore
from pipeline.store import generations
from pipeline.store.db import advisory_lock, scalar

_META = "CREATE TABLE IF NOT EXISTS docforge_meta (key text PRIMARY KEY, value text NOT NULL)"
_MIGRATIONS = (
    "CREATE TABLE IF NOT EXISTS schema_migrations "
    "(version text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())"
)

# The names stores recorded before the migrations were numbered without gaps or twins: rewritten
# in schema_migrations (under the schema lock, before pending ones are chosen), so nothing re-runs.
RENAMED = {
    "0006_answers": "0005_answers",
    "0007_pages": "0006_pages",
    "0008_generations": "0007_generations",
    "0009_compact_index": "0008_compact_index",
    "0010_faster_postings": "0009_faster_postings",
    "0015_deliveries": "0010_deliveries",
    "0016_access": "0011_access",
    "0017_may_read_inline": "0012_may_read_inline",
    "0017_staged_access_hash": "0013_staged_access_hash",
}


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
    return (rows["model"], int(rows["dimension"])) if "model" in rows else None  # a store before 0007


def applied(conn: psycopg.Connection) -> set[str]:
    """The migrations a store records as applied, by today's names (a read: nothing is rewritten)."""
    if not scalar(conn, "SELECT to_regclass('schema_migrations')"):
        return set()
    recorded: list[str] = [v for (v,) in conn.execute("SELECT version FROM schema_migrations")]
    return {RENAMED.get(v, v) for v in recorded}


def pending(conn: psycopg.Connection) -> list[str]:
    """The migrations not applied yet, in order."""
    done = applied(conn)
    return [version for version, _ in migrations() if version not in done]


def is_current(conn: psycopg.Connection) -> bool:
    """True when every migration has been applied (a cheap check for readers)."""
    return not pending(conn)


def _rename_recorded(conn: psycopg.Connection) -> None:
    for old, new in RENAMED.items():
        conn.execute(
            "UPDATE schema_migrations SET version = %(new)s WHERE version = %(old)s"
            " AND NOT EXISTS (SELECT FROM schema_migrations WHERE version = %(new)s)",
            {"old": old, "new": new},
        )


def ensure_schema(conn: psycopg.Connection, model: str, dim: int, name: str | None = None) -> None:
    """Create or upgrade the schema; a store without a live generation gets one for `model`
    (`name`: how to load it, default the id). A store already built keeps its live generation,
    whatever `model` is: `docforge reindex` changes it (ingest and search follow it)."""
    with advisory_lock(conn, "schema"), conn.transaction():
        conn.execute(_META)
        conn.execute(_MIGRATIONS)
        _rename_recorded(conn)
        done = applied(conn)
        for version, sql in migrations():
            if version not in done:
                # {dim}: migrations 0001-0006 shaped chunks.embedding, which 0007 moves into generation 1's
                # own table (a new store's generation is made below, at any width up to halfvec's limit).
                conn.execute(sql.replace("{dim}", str(min(int(dim), generations.VECTOR_MAX))))
                conn.execute("INSERT INTO schema_migrations (version) VALUES (%s)", (version,))
        if generations.live(conn) is None:
            generations.create(conn, model, name or model, int(dim), "live")


def open_built(conn: psycopg.Connection) -> tuple[str, int] | None:
    """The store's (model, dimension), or None for an empty store; an older store's schema is refused.

    For readers (search, ask, status, the API): they never change the schema, and must not meet an
    older store's table and column names.
    """
    built = store_model(conn)
    if built and not is_current(conn):
        raise OutdatedStore(
            f"the store's schema is older than this docforge ({len(pending(conn))} migrations to apply):"
            " run `docforge db migrate`"
        )
    return built


def upgrade_built(conn: psycopg.Connection) -> tuple[str, int] | None:
    """The store's (model, dimension) with its schema brought up to date, or None for an empty store.

    For writers and upkeep (ingest, reindex, checks, purge, `docforge db migrate`): they never create
    a store, and bring an older one up to date first.
    """
    built = store_model(conn)
    if built and not is_current(conn):
        ensure_schema(conn, *built)
    return built


def migrate(conn: psycopg.Connection) -> list[str] | None:
    """`docforge db migrate`: the migrations applied now (old names rewritten too), None for an empty store."""
    built = store_model(conn)
    if built is None:
        return None
    todo = pending(conn)
    ensure_schema(conn, *built)
    return todo


def drop_all(conn: psycopg.Connection) -> None:
    """Remove every docforge table (for `docforge db reset`)."""
    with conn.transaction():
        # "sources": the documents table's name before migration 0004; bm25_blocks before bm25_postings,
        # a view of it since migration 0008 (a table before)
        # vectors_<n>: the generations' tables (migration 0007)
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
            "deliveries",
            "schema_migrations",
            "docforge_meta",
        ):
            conn.execute(f"DROP TABLE IF EXISTS {t} CASCADE")

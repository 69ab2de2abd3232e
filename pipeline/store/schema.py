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

import re
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
        n = len(pending(conn))
        raise OutdatedStore(
            f"the store's schema is older than this docforge ({n} migration{'s' * (n != 1)} to apply):"
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


# The names a migration creates or renames a table or view to: what `drop_all` looks for in the catalog.
_CREATES = re.compile(
    r"\b(?:CREATE\s+(?:OR\s+REPLACE\s+)?(?:UNLOGGED\s+)?(?:MATERIALIZED\s+)?(?:TABLE|VIEW)(?:\s+IF\s+NOT\s+EXISTS)?"
    r"|ALTER\s+TABLE\s+(?:IF\s+EXISTS\s+)?\w+\s+RENAME\s+TO)\s+(\w+)",
    re.IGNORECASE,
)
_PREFIX = "docforge_"  # every function and type a migration makes is named so (and the meta table)


def created_relations() -> set[str]:
    """Every table or view name the migrations (and this module) ever create, read from their text, so a new
    migration's tables are known without a list to keep; a generation's own tables are `vectors_<n>`."""
    texts = [sql for _, sql in migrations()] + [_META, _MIGRATIONS]
    return {name.lower() for text in texts for name in _CREATES.findall(text)}


def drop_all(conn: psycopg.Connection) -> None:
    """Remove everything the migrations created (for `docforge db reset`), found in the catalog: the tables
    and views they name, the generations' `vectors_<n>` tables, every `docforge_*` function, procedure and
    type; an ingest after it builds the store as new. The `vector` extension stays (others may use it)."""
    relations = created_relations()
    with conn.transaction():
        rows = conn.execute(
            "SELECT c.oid::regclass::text, c.relkind FROM pg_class c "
            "WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind IN ('r', 'p', 'v', 'm', 'f') "
            "AND (c.relname = ANY(%s) OR c.relname ~ '^vectors_[0-9]+$' OR c.relname LIKE %s) "
            "AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.objid = c.oid AND d.deptype = 'e')",
            (sorted(relations), _PREFIX + "%"),
        ).fetchall()
        kinds = {"v": "VIEW", "m": "MATERIALIZED VIEW", "f": "FOREIGN TABLE"}
        for name, kind in sorted(rows, key=lambda r: r[1] != "v"):  # views first: a table's drop takes its views
            conn.execute(f"DROP {kinds.get(kind, 'TABLE')} IF EXISTS {name} CASCADE")
        routines = conn.execute(
            "SELECT p.oid::regprocedure::text, p.prokind FROM pg_proc p "
            "WHERE p.pronamespace = current_schema()::regnamespace AND p.proname LIKE %s "
            "AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.objid = p.oid AND d.deptype = 'e')",
            (_PREFIX + "%",),
        ).fetchall()
        kinds = {"p": "PROCEDURE", "a": "AGGREGATE"}
        for sig, kind in routines:
            conn.execute(f"DROP {kinds.get(kind, 'FUNCTION')} IF EXISTS {sig} CASCADE")
        types = conn.execute(
            "SELECT t.oid::regtype::text FROM pg_type t WHERE t.typnamespace = current_schema()::regnamespace "
            "AND t.typname LIKE %s AND t.typtype IN ('c', 'd', 'e', 'r', 'm') AND t.typrelid = 0 "
            "AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.objid = t.oid AND d.deptype = 'e')",
            (_PREFIX + "%",),
        ).fetchall()
        for (name,) in types:
            conn.execute(f"DROP TYPE IF EXISTS {name} CASCADE")

"""Which sources an ingest is running for now, from any process: the run lock each holds
(pipeline.store.db.one_run_of) as Postgres lists it, so a first ingest in progress is said as such."""

from __future__ import annotations

from collections.abc import Sequence

import psycopg

_HELD = "SELECT classid::bigint, objid::bigint FROM pg_locks WHERE locktype = 'advisory' AND granted"


def ingesting(conn: psycopg.Connection, sources: Sequence[str]) -> list[str]:
    """The sources of `sources` an ingest holds the run lock of right now."""
    from pipeline.store.db import lock_id

    held = {(c, o) for c, o in conn.execute(_HELD).fetchall()}
    out = []
    for name in sources:
        key = lock_id(f"run:{name}") & 0xFFFFFFFFFFFFFFFF  # a bigint key is two 32-bit halves in pg_locks
        if (key >> 32, key & 0xFFFFFFFF) in held:
            out.append(name)
    return out


def holders(conn: psycopg.Connection, sources: Sequence[str]) -> dict[str, str]:
    """{source: who holds its run lock, since when} for the sources of `sources` an ingest runs now."""
    from pipeline.store.db import lock_id
    from pipeline.store.locks import holder

    return {name: holder(conn, lock_id(f"run:{name}")) for name in ingesting(conn, sources)}


def in_progress_line(names: Sequence[str]) -> str:
    """What to say while a first ingest runs."""
    shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
    return f"an ingest of {shown} is in progress: `docforge status` shows what is indexed so far"

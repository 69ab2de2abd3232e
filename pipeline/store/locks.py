"""Every wait for an advisory lock says what it waits for (issue 48).

Ingest runs take Postgres advisory locks: a source's run lock for a whole `docforge ingest`
(`one_run_of`), its rows' lock for each stage (`source_lock`), the schema's and a reindex's. Taking one
another session holds used to block in `pg_advisory_lock` without a word, for as long as the holder
lived: a stopped first ingest (SIGSTOP, a debugger) kept the second one waiting in silence, for ever.

`acquire` tries the lock, and while another session holds it polls once a second, and says on the log
(stderr in the CLI) what it waits for, who holds it and since when: the holder's process id (each
docforge connection names its process in `application_name`; else the server's backend pid) and when
its connection opened; at once, then every SAY_EVERY_S. With a limit (`schedule.lock_wait_s`,
DOCFORGE_SCHEDULE__LOCK_WAIT_S; 0: none) it gives up with a StoreError naming the holder. Ctrl-C
(KeyboardInterrupt, or SIGTERM made one) ends the wait at once, with a line saying so: nothing was
taken, nothing is left held (the pool wait of orchestration/liveness.py behaves the same).
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime

import psycopg

from pipeline.errors import StoreError

log = logging.getLogger(__name__)
POLL_S = 1.0  # a freed lock is taken within a second: the same pace as the pool wait
SAY_EVERY_S = 10.0  # one line per this many seconds of waiting: visible, not a flood

_HOLDER = """
SELECT a.application_name, a.pid, a.backend_start
FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
WHERE l.locktype = 'advisory' AND l.granted AND l.classid = %s AND l.objid = %s AND l.objsubid = 1
LIMIT 1
"""


def app_name() -> str:
    """This process's `application_name` (computed per call: a forked worker has a pid of its own)."""
    return f"docforge pid {os.getpid()}"


def acquire(
    conn: psycopg.Connection,
    key: int,
    what: str,
    limit_s: float | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> None:
    """Take the session advisory lock `key` on `conn` (autocommit), saying while it waits that it waits
    for `what` and who holds it; StoreError after `limit_s` seconds (None or 0: no limit)."""
    if _try(conn, key):
        return
    since, next_say = clock(), 0.0
    try:
        with _sigterm_interrupts():
            while True:
                waited = clock() - since
                if waited >= next_say:
                    log.warning("waiting %.0f s for %s (Ctrl-C stops):\n  %s", waited, what, holder(conn, key))
                    next_say = waited + SAY_EVERY_S
                if limit_s and waited >= limit_s:
                    raise StoreError(
                        f"gave up after {limit_s:.0f} s waiting for {what}, {holder(conn, key)}: let it finish "
                        "or stop it, or raise schedule.lock_wait_s (DOCFORGE_SCHEDULE__LOCK_WAIT_S; 0: no limit)"
                    )
                time.sleep(POLL_S)
                if _try(conn, key):
                    return
    except KeyboardInterrupt:
        log.warning("stopped while waiting for %s:\n  nothing of this run was written", what)
        raise


@contextmanager
def _sigterm_interrupts() -> Iterator[None]:
    """SIGTERM ends a wait as Ctrl-C does (a KeyboardInterrupt), where a handler can be set (the main
    thread); the handler before is put back after."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    before = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, before)


def holder(conn: psycopg.Connection, key: int) -> str:
    """Who holds `key`: "held by docforge pid 4242 since 02:31:05 UTC", or why that is unknown."""
    k = key & 0xFFFFFFFFFFFFFFFF  # a bigint key is two 32-bit halves in pg_locks
    row = conn.execute(_HOLDER, (k >> 32, k & 0xFFFFFFFF)).fetchone()
    if row is None:
        return "its holder just let go (or is not visible to this database user)"
    name, backend, start = row
    who = name if name.startswith("docforge pid ") else f"Postgres backend {backend}" + (f" ({name})" if name else "")
    when = start.astimezone().strftime("%H:%M:%S %Z") if isinstance(start, datetime) else "?"
    return f"held by {who} since {when}"


def _try(conn: psycopg.Connection, key: int) -> bool:
    row = conn.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()
    return bool(row and row[0])

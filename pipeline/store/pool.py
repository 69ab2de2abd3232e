"""A pool of store connections for long-lived readers (the HTTP API, the MCP server).

Concurrent searches run on separate connections, at most `max_size` at once. A
connection is checked as it is handed out, so one the database dropped (a
restart, a failover) is replaced on the next request instead of failing every
later one. A restart drops every connection at once, so the first dead one
found has all idle ones checked there and then (not one per request, each after
the pool's own back-off of a second or more, which left a pool of 8 dead
connections answering "busy" for seconds); while the database is down, reconnection is retried in the
background (1, 2, 4 … s apart for `RECONNECT_S`, then afresh on the next
request) and each request waits at most `timeout_s` before a StoreError.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import psycopg
from psycopg_pool import ConnectionPool, PoolTimeout

from pipeline import metrics
from pipeline.errors import StoreDown
from pipeline.redact import redact

RECONNECT_S = 10.0  # one reconnection's retries: short, so a recovered database is found again within seconds
_PROBE_S = 2  # connect_timeout of the probe that says why no connection came


def open_pool(
    url: str,
    *,
    name: str,
    max_size: int,
    timeout_s: float,
    configure: Callable[[psycopg.Connection], None] | None = None,
) -> ConnectionPool:
    """An open pool (connecting in the background) of autocommit connections, `configure`d as they open."""
    pool: ConnectionPool = ConnectionPool(
        url,
        name=name,
        min_size=1,
        max_size=max_size,
        timeout=timeout_s,
        kwargs={"autocommit": True},
        configure=configure,
        reconnect_timeout=RECONNECT_S,
        open=False,
    )
    pool.open(wait=False)
    return pool


@contextmanager
def checkout(pool: ConnectionPool, timeout_s: float | None = None) -> Iterator[psycopg.Connection]:
    """A connection from the pool; StoreDown (a StoreError) when none comes in time or the one given is lost."""
    waited = pool.timeout if timeout_s is None else timeout_s
    try:
        conn = _checked(pool, waited)
    except PoolTimeout:
        metrics.count(metrics.STORE_ERRORS)
        raise StoreDown(f"the store is unavailable: no connection within {waited:g} s ({_why(pool)})") from None
    except (psycopg.OperationalError, psycopg.InterfaceError) as e:
        metrics.count(metrics.STORE_ERRORS)
        raise StoreDown(f"the store is unavailable: {redact(_first_line(e))}") from None
    try:
        yield conn
    except psycopg.errors.QueryCanceled:
        raise  # a statement time limit, not a lost store: the caller says which limit
    except (psycopg.OperationalError, psycopg.InterfaceError) as e:
        metrics.count(metrics.STORE_ERRORS)
        raise StoreDown(f"the store is unavailable: {redact(_first_line(e))}") from None
    finally:
        pool.putconn(conn)  # a broken one is closed and replaced


def _checked(pool: ConnectionPool, timeout_s: float) -> psycopg.Connection:
    """A connection that answers: the pool's next one, or, when that one is dead, a new one once every
    idle connection has been checked (see module doc)."""
    deadline = time.monotonic() + timeout_s
    conn = pool.getconn(timeout_s)
    try:
        ConnectionPool.check_connection(conn)
        return conn
    except psycopg.Error:
        pool.putconn(conn)
    pool.check()
    return pool.getconn(max(0.01, deadline - time.monotonic()))


def _why(pool: ConnectionPool) -> str:
    """Why the pool has no connection to give: the database's own answer to a fresh connection."""
    try:
        psycopg.connect(str(pool.conninfo), connect_timeout=_PROBE_S).close()
    except psycopg.Error as e:
        return redact(_first_line(e))
    return f"all {pool.max_size} connections are busy"


def _first_line(e: BaseException) -> str:
    return (str(e).strip().splitlines() or [type(e).__name__])[0]

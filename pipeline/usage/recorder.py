"""Writing usage records off the request path: a bounded queue and one writer thread per store.

`record` never blocks and never raises: a full queue drops the record and counts it (the metric
`usage_dropped`); a store that fails a write loses that batch, counted as a store error, and the next
batch tries a fresh connection. The writer inserts whatever has queued up in one statement.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable

from pipeline import metrics
from pipeline.config import UsageConfig
from pipeline.redact import redact
from pipeline.store.db import connect
from pipeline.usage.record import COLUMNS, UsageRecord

log = logging.getLogger("docforge.usage")
BATCH = 256  # records per INSERT at most: one round trip for a burst
# How long the writer waits after a record for more before it writes: under load one transaction per
# burst rather than one per request (each commit costs the store's CPU, which the requests share);
# only `flush` and a crash see the wait, and a clean `close` writes what is queued at once.
LINGER_S = 0.05
WARN_EVERY_S = 60.0  # a store that stays down is said once a minute, not once per batch
_INSERT = f"INSERT INTO usage_events ({COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"


class Recorder:
    def __init__(self, url: str, cfg: UsageConfig):
        self.url, self.cfg = url, cfg
        self.dropped = self.written = self.failed = 0
        self._queue: queue.Queue[UsageRecord | None] = queue.Queue(maxsize=cfg.queue_size)
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._warned = -WARN_EVERY_S  # when the last failure was logged (time.monotonic)

    def record(self, event: UsageRecord) -> None:
        """Queue `event` for the writer (started on first use); drop it when the queue is full."""
        if not self.cfg.enabled:
            return
        try:
            if self._thread is None:
                with self._lock:
                    if self._thread is None:
                        self._thread = threading.Thread(target=self._run, name="docforge-usage", daemon=True)
                        self._thread.start()
            self._queue.put_nowait(event)
        except queue.Full:
            self.dropped += 1
            metrics.count(metrics.USAGE_DROPPED)
        except Exception as e:  # noqa: BLE001 (a record must never fail the request it describes)
            log.warning("usage record lost: %s", redact(str(e)))

    def flush(self, timeout_s: float = 5.0) -> bool:
        """Wait until every queued record is written (or lost); False when `timeout_s` passed first."""
        deadline = time.monotonic() + timeout_s
        while self._queue.unfinished_tasks and time.monotonic() < deadline:
            time.sleep(0.005)
        return not self._queue.unfinished_tasks

    def close(self, timeout_s: float = 5.0) -> None:
        """Write what is queued (at most `timeout_s`), then stop the writer."""
        if self._thread is None:
            return
        self.flush(timeout_s)
        try:
            self._queue.put(None, timeout=timeout_s)
        except queue.Full:
            return
        self._thread.join(timeout_s)
        self._thread = None

    def _run(self) -> None:
        conn = None
        while (first := self._queue.get()) is not None:
            batch = [first]
            stop = False
            until = time.monotonic() + LINGER_S
            while len(batch) < BATCH:
                try:
                    nxt = self._queue.get(timeout=max(0.0, until - time.monotonic()))
                except queue.Empty:
                    break
                if nxt is None:
                    stop = True
                    break
                batch.append(nxt)
            try:
                if conn is None:
                    conn = connect(self.url, vector=False)
                    # Best effort by design: no fsync wait per batch (a crash may lose the last few records).
                    conn.execute("SET synchronous_commit = off")
                with conn.transaction(), conn.cursor() as cur:  # one commit per batch, not per record
                    cur.executemany(_INSERT, [e.row() for e in batch])
                self.written += len(batch)
            except Exception as e:  # noqa: BLE001 (the store down, a store before migration 0016)
                self.failed += len(batch)
                metrics.count(metrics.STORE_ERRORS)
                if time.monotonic() - self._warned >= WARN_EVERY_S:
                    self._warned = time.monotonic()
                    why = redact(str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__)
                    log.warning("usage: %d record(s) not written so far: %s", self.failed, why)
                if conn is not None:
                    conn.close()
                conn = None
            finally:
                for _ in batch:
                    self._queue.task_done()
            if stop:
                self._queue.task_done()
                break
        else:
            self._queue.task_done()
        if conn is not None:
            conn.close()


_recorders: dict[tuple[str, UsageConfig], Recorder] = {}
_recorders_lock = threading.Lock()


def recorder(url: str, cfg: UsageConfig) -> Recorder:
    """The process's one Recorder for a store (and settings): every surface in it shares the writer."""
    with _recorders_lock:
        if (url, cfg) not in _recorders:
            _recorders[(url, cfg)] = Recorder(url, cfg)
        return _recorders[(url, cfg)]


def record_once(url: str, cfg: UsageConfig, make: Callable[[UsageConfig], UsageRecord]) -> None:
    """A short-lived process's one record (the CLI): written before it returns (at most a second), never
    raising."""
    if not cfg.enabled:
        return
    rec = recorder(url, cfg)
    try:
        rec.record(make(cfg))
    except Exception as e:  # noqa: BLE001 (a record must never fail the command it describes)
        log.warning("usage record lost: %s", redact(str(e)))
    rec.close(timeout_s=1.0)


def prune(conn, days: int) -> int:
    """Delete the records older than `days` days; how many."""
    if not conn.execute("SELECT to_regclass('usage_events')").fetchone()[0]:
        return 0
    return conn.execute("DELETE FROM usage_events WHERE at < now() - make_interval(days => %s)", (days,)).rowcount

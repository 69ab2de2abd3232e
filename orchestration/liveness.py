"""Runs whose process is gone release what they hold; a run waiting for a pool slot says so and can be stopped.

A CLI ingest runs in-process (`cli_runs.materialize_sources`): SIGKILL it and its run stays STARTED in the
instance, holding any concurrency slot it claimed (the `gpu` pool has one), so every later run waits for
ever. Dagster's run monitoring (the daemon, dagster.yaml) cannot see a process no run launcher started, so
each CLI run records where it runs (`process_tags`: host, pid, the process's start time, so a reused pid
is not mistaken for it), and every CLI ingest first fails the runs whose process is gone and frees their
slots (`release_dead_runs`), with the same instance calls run monitoring makes (`report_run_failed`,
`free_concurrency_slots_for_run`).

While a run waits for a slot, `Waiting` (a thread) says on stderr which pool, held by which run, for how
long; it releases a holder that dies meanwhile; and it ends the process on Ctrl-C/SIGTERM, which Dagster
only records while no step runs (`capture_interrupts`), so the wait would otherwise ignore them.
"""

from __future__ import annotations

import os
import socket
import sys
import threading
import time
from typing import TYPE_CHECKING

import psutil

if TYPE_CHECKING:
    from dagster import DagsterInstance, DagsterRun

HOST_TAG, PID_TAG, START_TAG = "docforge/host", "docforge/pid", "docforge/pid_start"
POLL_S = 1.0  # how often a waiting run looks at its pool: a freed slot is taken within a second anyway
SAY_EVERY_S = 10.0  # one stderr line per this many seconds of waiting: visible, not a flood
LINE_COLS = 80


def _started(pid: int) -> str | None:
    """The process's start time, to the second: with the pid, it names one process for the host's uptime."""
    try:
        return f"{psutil.Process(pid).create_time():.0f}"
    except psutil.Error:  # gone (or not ours to see: then it is alive, and another user's)
        return None if not psutil.pid_exists(pid) else "?"


def process_tags() -> dict[str, str]:
    """The run tags that make "its process is gone" decidable."""
    pid = os.getpid()
    return {HOST_TAG: socket.gethostname(), PID_TAG: str(pid), START_TAG: _started(pid) or ""}


def process_gone(run: DagsterRun) -> bool:
    """True when the run records a process on this host and that process no longer exists. A run of
    another host, or without the tags (the daemon's, the UI's), is never judged here."""
    tags = run.tags
    if tags.get(HOST_TAG) != socket.gethostname() or not tags.get(PID_TAG, "").isdigit():
        return False
    now = _started(int(tags[PID_TAG]))
    return now is None or now not in ("?", tags.get(START_TAG))


def release_dead_runs(instance: DagsterInstance) -> list[str]:
    """Fail the unfinished runs whose process is gone, and free the pool slots of every finished run that
    still holds some; the ids released."""
    from dagster import DagsterRunStatus, RunsFilter

    unfinished = [DagsterRunStatus.STARTED, DagsterRunStatus.STARTING, DagsterRunStatus.CANCELING]
    released = []
    for run in instance.get_runs(RunsFilter(statuses=unfinished, tags={HOST_TAG: socket.gethostname()})):
        if process_gone(run):
            pid = run.tags[PID_TAG]
            instance.report_run_failed(run, f"its process (pid {pid}) is gone: marked failed, its slots freed")
            released.append(run.run_id)
    storage = instance.event_log_storage
    if storage.supports_global_concurrency_limits:
        for run_id in storage.get_concurrency_run_ids():
            run = instance.get_run_by_id(run_id)
            if run is None or run.is_finished:
                storage.free_concurrency_slots_for_run(run_id)
                if run_id not in released:
                    released.append(run_id)
    for run_id in released:
        say(f"docforge: released run {run_id[:8]}: its process is gone")
    return released


def say(line: str) -> None:
    """One line on stderr (stdout is the CLI's report), cut to 80 columns."""
    sys.stderr.write((line if len(line) <= LINE_COLS else line[: LINE_COLS - 1] + "…") + "\n")
    sys.stderr.flush()


class Waiting(threading.Thread):
    """Watches this process's current run while `materialize` works (a daemon thread, stopped by `stop`)."""

    def __init__(self, instance: DagsterInstance, clock=time.monotonic):
        super().__init__(name="docforge-pool-wait", daemon=True)
        self.instance, self.clock = instance, clock
        self._done = threading.Event()
        self.interrupted = False  # Ctrl-C/SIGTERM came while the run went on (a step raised it)

    def stop(self) -> None:
        self._done.set()
        self.join(timeout=5)

    def _current(self) -> DagsterRun | None:
        from dagster import DagsterRunStatus, RunsFilter

        tags = {HOST_TAG: socket.gethostname(), PID_TAG: str(os.getpid())}
        runs = self.instance.get_runs(RunsFilter(statuses=[DagsterRunStatus.STARTED], tags=tags), limit=1)
        return runs[0] if runs else None

    def _waits_for(self, run_id: str) -> tuple[str, set[str]] | None:
        """(pool, the runs holding its slots) when `run_id` waits for a slot, else None."""
        storage = self.instance.event_log_storage
        if not storage.supports_global_concurrency_limits:
            return None
        for pool in storage.get_concurrency_keys():
            info = storage.get_concurrency_info(pool)
            if any(s.run_id == run_id and s.assigned_timestamp is None for s in info.pending_steps):
                return pool, info.active_run_ids - {run_id}
        return None

    def run(self) -> None:
        from dagster._utils.interrupts import check_captured_interrupt  # Dagster's record of a signal

        since: float | None = None  # when this run began to wait (None: it does not wait)
        next_say = 0.0
        while not self._done.wait(POLL_S):
            try:
                run = self._current()
                waiting = self._waits_for(run.run_id) if run is not None else None
            except Exception:  # a storage hiccup: look again next second
                continue
            if check_captured_interrupt():
                self.interrupted = True
                if waiting is not None and run is not None:  # no step runs: nothing to finish, stop now
                    self._abandon(run, waiting[0])
            if waiting is None:
                since = None
                continue
            pool, holders = waiting
            if holders:  # a holder that died meanwhile lets go now, not at the next ingest
                release_dead_runs(self.instance)
            if since is None:
                since, next_say = self.clock(), 0.0
            if (waited := self.clock() - since) >= next_say:
                say(self._line(pool, holders, waited + POLL_S))
                next_say = waited + SAY_EVERY_S

    def _line(self, pool: str, holders: set[str], waited: float) -> str:
        if holders:
            holder = self.instance.get_run_by_id(sorted(holders)[0])
            who = f"run {sorted(holders)[0][:8]}"
            if holder is not None and (part := holder.tags.get("dagster/partition")):
                who += f", source {part!r}"
            held = f" held by {who}"
        else:
            held = " held by another run"
        return f"docforge: waiting {waited:.0f} s for pool {pool!r} (Ctrl-C stops),{held}"  # a long name is cut

    def _abandon(self, run: DagsterRun, pool: str) -> None:
        """Ctrl-C/SIGTERM while waiting for a slot: fail the run, free its claims, end the process now (the
        wait would not end, and nothing of this run is in flight)."""
        self.instance.report_run_failed(run, f"stopped while waiting for pool {pool!r}")
        self.instance.event_log_storage.free_concurrency_slots_for_run(run.run_id)
        say(f"docforge: stopped while waiting for pool {pool!r}")
        os._exit(130)  # 128 + SIGINT, as a shell reports an interrupted command

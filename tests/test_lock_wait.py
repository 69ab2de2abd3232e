"""Every wait says what it waits for (issue 48): a first `docforge ingest` stopped (SIGSTOP) while it embeds
holds its source's run lock; a second ingest of the same source says on stderr within 10 s which source it
waits for, the holder's pid and since when, and SIGTERM stops it as it stops the pool wait (a line, status
130); with schedule.lock_wait_s set, a third gives up after it, naming the holder. Real processes, a real
Postgres, no Dagster instance shared (so no pool wait is involved)."""

from __future__ import annotations

import os
import queue
import re
import signal
import subprocess
import threading
import time

from tests.helpers import ingest_process
from tests.test_killed_runs import rfcs_config  # noqa: F401 (the fixture)


def _lines(proc: subprocess.Popen) -> queue.Queue:
    out: queue.Queue = queue.Queue()

    def pump():
        assert proc.stderr is not None
        for line in proc.stderr:
            out.put(line)
        out.put(None)

    threading.Thread(target=pump, daemon=True).start()
    return out


def _until(lines: queue.Queue, test, limit_s: float) -> list[str]:
    """Lines read until one passes `test` (within limit_s: a bound, not a speed), all of them."""
    seen, end = [], time.monotonic() + limit_s
    while time.monotonic() < end:
        try:
            line = lines.get(timeout=max(0.0, end - time.monotonic()))
        except queue.Empty:
            break
        if line is None:
            break
        seen.append(line)
        if test(line):
            return seen
    raise AssertionError("".join(seen)[-3000:] or "no output")


def test_a_second_ingest_names_the_stopped_one_it_waits_for(rfcs_config, database_url):  # noqa: F811
    env = {**os.environ, "PYTHONPATH": os.getcwd(), "DATABASE_URL": database_url}
    env.pop("DAGSTER_HOME", None)
    first = ingest_process(rfcs_config, env)
    try:
        _until(_lines(first), lambda line: ", embeddings " in line, 600)
        first.send_signal(signal.SIGSTOP)  # mid-embedding: it holds the run lock and the rows lock

        second = ingest_process(rfcs_config, env)
        out = _lines(second)
        said = _until(out, lambda line: f"docforge pid {first.pid}" in line, 60)
        text = "".join(said)
        assert not re.search(r"waiting \d+ s for", text), text  # said at once, before any timed reminder
        assert "waiting" in text and "source 'rfcs'" in text and "Ctrl-C stops" in text
        assert f"held by docforge pid {first.pid} since " in said[-1]
        assert all(len(line.rstrip("\n")) <= 80 for line in said[-2:]), said[-2:]
        # then the wait itself says so, within its first second
        _until(out, lambda line: f"docforge pid {first.pid}" in line and "since" in line, 60)
        second.send_signal(signal.SIGTERM)
        rest = _until(out, lambda line: "stopped while waiting" in line, 30)
        assert second.wait(timeout=30) == 130, "".join(rest)

        third = ingest_process(rfcs_config, {**env, "DOCFORGE_SCHEDULE__LOCK_WAIT_S": "2"})
        gave_up = third.communicate(timeout=120)[1]
        assert third.returncode == 1 and "gave up after 2 s" in gave_up and f"pid {first.pid}" in gave_up, gave_up
    finally:
        first.kill()
        first.wait(timeout=30)

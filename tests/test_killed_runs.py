"""A `docforge ingest` killed at any stage holds nothing the next one waits for (orchestration/liveness.py).

Real `docforge ingest` subprocesses against a persistent Dagster instance (sqlite, the `gpu` pool of one
slot, as dagster.yaml), SIGKILLed as their own progress lines show each stage; then a plain ingest completes
and the index equals a clean ingest of the same files.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid

import pytest
from dagster import DagsterInstance, DagsterRun, DagsterRunStatus

from orchestration.liveness import HOST_TAG, PID_TAG, START_TAG, process_tags
from pipeline.config import load_settings
from pipeline.ingest import IngestContext, ingest_source
from tests.helpers import ingest_process
from tests.test_crash import new_db, same_index, snapshot

FILES = ["text/00*.md"]  # 28 real RFCs, some hundreds of chunks: each stage lasts long enough to be hit

DAGSTER_YAML = """\
storage:
  sqlite:
    base_dir: {base}
telemetry:
  enabled: false
concurrency:
  pools:
    default_limit: 1
    granularity: op
"""


@pytest.fixture
def dagster_home(tmp_path):
    home = tmp_path / "dagster"
    home.mkdir()
    (home / "dagster.yaml").write_text(DAGSTER_YAML.format(base=home / "storage"))
    return home


@pytest.fixture
def rfcs_config(rfcs_repo, write_config):
    return write_config([{"name": "rfcs", "type": "git", "repo": str(rfcs_repo), "globs": FILES}])


def _env(url: str, dagster_home) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.getcwd(), "DATABASE_URL": url, "DAGSTER_HOME": str(dagster_home)}


def _kill_at(config, env, stage: str) -> list[str]:
    """Start an ingest, SIGKILL it when its progress shows `stage` begun; its stderr lines."""
    proc = ingest_process(config, env)
    assert proc.stderr is not None
    lines = []
    for line in proc.stderr:
        lines.append(line)
        if f", {stage} " in line:
            proc.send_signal(signal.SIGKILL)
            break
    proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL, f"never reached {stage}: " + "".join(lines)[-2000:]
    return lines


@pytest.mark.slow  # six real ingests in subprocesses, ~2 min on 2 cores
def test_a_killed_ingest_holds_nothing_the_next_waits_for(rfcs_config, pg_server, embedder, dagster_home):
    clean_url = new_db(pg_server)
    ingest_source(IngestContext(load_settings(rfcs_config), url=clean_url, embedder=embedder), "rfcs")
    clean = snapshot(clean_url)

    url = new_db(pg_server)
    env = _env(url, dagster_home)
    said = []
    for stage in ("documents", "chunks", "embeddings", "write"):  # listing, chunking, embedding, the swap
        said += _kill_at(rfcs_config, env, stage)
    assert any("released run" in line for line in said), "a later ingest released the killed run"

    done = subprocess.run(
        [sys.executable, "-c", "from docforge.cli import main; main()", "ingest", "-c", str(rfcs_config)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    after = snapshot(url)
    same_index(after, clean)
    assert after[3] == 0, "no staging rows left behind"

    instance = DagsterInstance.from_config(str(dagster_home))
    assert all(r.is_finished for r in instance.get_runs()), "no run is left STARTED"
    assert not instance.event_log_storage.get_concurrency_run_ids(), "no pool slot is left held"
    assert all(len(line.rstrip("\n")) <= 80 for line in done.stderr.splitlines())


def test_a_waiting_ingest_says_so_and_sigterm_stops_it(rfcs_config, database_url, dagster_home):
    """The `gpu` slot held by a live run of another process: the ingest says what it waits for, for how
    long, and SIGTERM ends it; the slot's holder keeps its slot, the stopped run is failed."""
    instance = DagsterInstance.from_config(str(dagster_home))
    holder = DagsterRun(job_name="__ASSET_JOB", run_id=str(uuid.uuid4()), status=DagsterRunStatus.STARTED)
    holder = instance.add_run(holder.with_tags({**holder.tags, **process_tags()}))  # this test: alive
    storage = instance.event_log_storage
    storage.initialize_concurrency_limit_to_default("gpu")
    assert storage.claim_concurrency_slot("gpu", holder.run_id, "chunk_embeddings").is_claimed

    proc = ingest_process(rfcs_config, _env(database_url, dagster_home))
    assert proc.stderr is not None
    lines = []
    for line in proc.stderr:
        lines.append(line)
        if "waiting" in line and "pool 'gpu'" in line:
            break
    assert holder.run_id[:8] in lines[-1] and len(lines[-1].rstrip("\n")) <= 80, "".join(lines)[-2000:]
    proc.send_signal(signal.SIGTERM)
    rest = proc.communicate(timeout=30)[1]  # a bound on the wait, not a speed: it ends, or the test fails
    assert proc.returncode != 0
    assert "stopped while waiting" in rest
    assert storage.get_concurrency_info("gpu").active_run_ids == {holder.run_id}, "the live holder keeps it"
    stopped = [r for r in instance.get_runs() if r.run_id != holder.run_id]
    assert stopped and all(r.status == DagsterRunStatus.FAILURE for r in stopped)
    assert {s.run_id for s in storage.get_concurrency_info("gpu").pending_steps} == {holder.run_id}


def test_a_dead_holder_is_released_and_a_live_one_kept(dagster_home):
    """Only a run whose recorded process is gone (pid gone, or reused by a later process) is released."""
    from orchestration.liveness import release_dead_runs

    instance = DagsterInstance.from_config(str(dagster_home))
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    tags = process_tags()
    runs = {
        "alive": tags,
        "dead": {**tags, PID_TAG: str(dead.pid), START_TAG: "1"},
        "reused": {**tags, START_TAG: "1"},  # this pid, but a process started at another time
        "elsewhere": {**tags, HOST_TAG: "another-host", PID_TAG: str(dead.pid)},
    }
    ids = {}
    storage = instance.event_log_storage
    storage.initialize_concurrency_limit_to_default("gpu")
    storage.set_concurrency_slots("gpu", 4)
    for name, t in runs.items():
        run = DagsterRun(job_name="__ASSET_JOB", run_id=str(uuid.uuid4()), status=DagsterRunStatus.STARTED)
        ids[name] = instance.add_run(run.with_tags(t)).run_id
        assert storage.claim_concurrency_slot("gpu", ids[name], "chunk_embeddings").is_claimed
    assert set(release_dead_runs(instance)) == {ids["dead"], ids["reused"]}
    status = {n: instance.get_run_by_id(i).status for n, i in ids.items()}  # type: ignore[union-attr]
    assert status == {
        "alive": DagsterRunStatus.STARTED,
        "dead": DagsterRunStatus.FAILURE,
        "reused": DagsterRunStatus.FAILURE,
        "elsewhere": DagsterRunStatus.STARTED,
    }
    assert storage.get_concurrency_info("gpu").active_run_ids == {ids["alive"], ids["elsewhere"]}

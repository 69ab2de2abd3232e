"""`dagster dev` for real: webserver + daemon on 127.0.0.1, driven through GraphQL.

Two sources: `alpha` is registered before start and launched through GraphQL;
`beta` is new, so the sources-sync sensor (running by default) must add its
partition and run it. Everything is stopped by process group, then by PID.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import psutil
import psycopg
import pytest
from dagster import DagsterInstance

ROOT = Path(__file__).resolve().parents[1]
DAGSTER = Path(sys.executable).parent / "dagster"
DOCS = {"README.md": "# Widget\n\nWidgets turn cranks.\n", "docs/use.md": "# Use\n\nTurn the crank slowly.\n"}
# Generous: a loaded 2-core machine starts dagster dev in ~30 s and runs a small ingest in ~60 s.
START_S, RUN_S = 300, 480

pytestmark = [pytest.mark.timeout(1200), pytest.mark.slow]


class Live:
    def __init__(self, url: str, log: Path):
        self.url, self.log = url, log
        self.http = httpx.Client(timeout=60)

    def gql(self, query: str, **variables) -> dict:
        res = self.http.post(f"{self.url}/graphql", json={"query": query, "variables": variables})
        res.raise_for_status()
        body = res.json()
        assert "errors" not in body, body["errors"]
        return body["data"]

    def wait(self, what: str, probe, timeout: float, every: float = 2.0):
        """Poll `probe` until it returns something truthy; fail with the server log's tail."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if found := probe():
                    return found
            except (httpx.HTTPError, AssertionError):
                pass
            time.sleep(every)
        tail = self.log.read_text(errors="replace")[-4000:] if self.log.exists() else ""
        pytest.fail(f"timed out after {timeout:.0f}s waiting for {what}\n--- dagster dev log ---\n{tail}")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def stop(proc: subprocess.Popen) -> None:
    """SIGTERM the process group; after a grace period SIGKILL the group and every descendant by PID."""
    try:
        family = [psutil.Process(proc.pid), *psutil.Process(proc.pid).children(recursive=True)]
    except psutil.NoSuchProcess:
        family = []
    _signal_group(proc.pid, signal.SIGTERM)
    _, alive = psutil.wait_procs(family, timeout=60)
    if alive:  # a run worker may have started its own session: kill it by PID
        _signal_group(proc.pid, signal.SIGKILL)
        for p in alive:
            with contextlib.suppress(psutil.NoSuchProcess):
                p.kill()
        psutil.wait_procs(alive, timeout=15)
    proc.wait(timeout=15)


def _signal_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, sig)


@pytest.fixture
def live(tmp_path, make_repo, write_config, database_url):
    home = tmp_path / "dagster_home"
    home.mkdir()
    shutil.copy(ROOT / "dagster.yaml", home / "dagster.yaml")  # verbatim: its state goes to ./.docforge
    cfg = write_config([{"name": n, "type": "git", "repo": str(make_repo(DOCS, n))} for n in ("alpha", "beta")])
    env = {
        **os.environ,
        "DAGSTER_HOME": str(home),
        "DOCFORGE_CONFIG": str(cfg),
        "DATABASE_URL": database_url,
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
    }
    with pytest.MonkeyPatch.context() as mp:  # the same instance, opened here to register alpha
        mp.chdir(tmp_path)
        instance = DagsterInstance.from_config(str(home))
        instance.add_dynamic_partitions("sources", ["alpha"])
        instance.dispose()
    port, log = free_port(), tmp_path / "dagster-dev.log"
    with open(log, "wb") as out:  # cwd = tmp_path, so the repository's own .docforge stays untouched
        proc = subprocess.Popen(
            [str(DAGSTER), "dev", "-w", str(ROOT / "workspace.yaml"), "-h", "127.0.0.1", "-p", str(port)],
            cwd=tmp_path,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # its own process group: one signal stops it all
    try:
        yield Live(f"http://127.0.0.1:{port}", log)
    finally:
        stop(proc)


WORKSPACE = """{ workspaceOrError { ... on Workspace { locationEntries { name loadStatus
  locationOrLoadError { __typename ... on PythonError { message } } } } } }"""
REPOS = """{ repositoriesOrError { ... on RepositoryConnection { nodes { name location { name }
  schedules { name cronSchedule executionTimezone scheduleState { status } }
  sensors { name sensorState { status ticks(limit: 10) { status error { message } } } } } } } }"""
ASSETS = """{ assetNodes { assetKey { path } isPartitioned dependencyKeys { path }
  assetChecksOrError { ... on AssetChecks { checks { name executionForLatestMaterialization { status } } } } } }"""
LAUNCH = """mutation($params: ExecutionParams!) { launchRun(executionParams: $params) { __typename
  ... on LaunchRunSuccess { run { runId } } ... on PythonError { message }
  ... on RunConfigValidationInvalid { errors { message } } } }"""
RUN = """query($id: ID!) { runOrError(runId: $id) { ... on Run { status } } }"""
RUNS = """query($key: String!, $value: String!) { runsOrError(filter: {tags: [{key: $key, value: $value}]}) {
  ... on Runs { results { runId status tags { key value } } } } }"""
BACKFILL = """mutation($params: LaunchBackfillParams!) { launchPartitionBackfill(backfillParams: $params) {
  __typename ... on LaunchBackfillSuccess { backfillId } ... on PythonError { message } } }"""
BACKFILL_STATUS = """query($id: String!) { partitionBackfillOrError(backfillId: $id) {
  ... on PartitionBackfill { status } } }"""
DONE = ("SUCCESS", "FAILURE", "CANCELED")


def loaded(live: Live):
    entries = live.gql(WORKSPACE)["workspaceOrError"]["locationEntries"]
    if entries and entries[0]["loadStatus"] == "LOADED":
        err = entries[0]["locationOrLoadError"]
        assert err["__typename"] == "RepositoryLocation", err
        return entries[0]["name"]
    return None


def runs_tagged(live: Live, key: str, value: str) -> list[dict]:
    return live.gql(RUNS, key=key, value=value)["runsOrError"]["results"]


def partition_of(run: dict) -> str:
    """The run's partition; a backfill run names a range, which must hold a single partition."""
    tags = {t["key"]: t["value"] for t in run["tags"]}
    if "dagster/partition" in tags:
        return tags["dagster/partition"]
    start, end = tags["dagster/asset_partition_range_start"], tags["dagster/asset_partition_range_end"]
    return start if start == end else f"{start}...{end}"


def check_graph(live: Live) -> dict:
    """Assets, checks, schedule and sensors as the UI sees them; returns the repository node."""
    nodes = {tuple(n["assetKey"]["path"]): n for n in live.gql(ASSETS)["assetNodes"]}
    assert set(nodes) == {("documents",), ("chunks",), ("chunk_embeddings",)}
    assert all(n["isPartitioned"] for n in nodes.values())
    assert nodes[("chunk_embeddings",)]["dependencyKeys"] == [{"path": ["chunks"]}]
    checks = {c["name"] for c in nodes[("chunk_embeddings",)]["assetChecksOrError"]["checks"]}
    assert checks == {"chunks_have_embeddings", "no_orphan_chunks", "ledger_matches_index", "chunks_fit_model_window"}
    repo = live.gql(REPOS)["repositoriesOrError"]["nodes"][0]
    assert [(s["name"], s["cronSchedule"]) for s in repo["schedules"]] == [("docforge_nightly", "0 2 * * *")]
    assert {s["name"] for s in repo["sensors"]} == {"docforge_push", "docforge_sources_sync"}
    return repo


def run_partition(live: Live, location: str, repo: str, partition: str) -> str:
    params = {
        "selector": {"repositoryLocationName": location, "repositoryName": repo, "jobName": "ingest"},
        "executionMetadata": {"tags": [{"key": "dagster/partition", "value": partition}]},
    }
    launched = live.gql(LAUNCH, params=params)["launchRun"]
    assert launched["__typename"] == "LaunchRunSuccess", launched
    run_id = launched["run"]["runId"]

    def finished():
        status = live.gql(RUN, id=run_id)["runOrError"]["status"]
        return status if status in DONE else None

    return live.wait(f"run {run_id} of {partition}", finished, RUN_S, every=5)


def backfill_all(live: Live) -> list[dict]:
    """What the asset page's "Materialize all partitions" does; returns the backfill's runs."""
    params = {
        "assetSelection": [{"path": [a]} for a in ("documents", "chunks", "chunk_embeddings")],
        "allPartitions": True,
    }
    launched = live.gql(BACKFILL, params=params)["launchPartitionBackfill"]
    assert launched["__typename"] == "LaunchBackfillSuccess", launched
    bid = launched["backfillId"]

    def finished():
        status = live.gql(BACKFILL_STATUS, id=bid)["partitionBackfillOrError"]["status"]
        return status if status not in ("REQUESTED", "CANCELING", "FAILING") else None

    assert live.wait(f"backfill {bid}", finished, RUN_S, every=5) in ("COMPLETED", "COMPLETED_SUCCESS")
    return runs_tagged(live, "dagster/backfill", bid)


def test_dagster_dev_serves_the_graph_and_runs_partitions(live, database_url):
    live.wait("/server_info", lambda: live.http.get(f"{live.url}/server_info").status_code == 200, START_S)
    location = live.wait("the code location to load", lambda: loaded(live), START_S)
    repo = check_graph(live)
    assert run_partition(live, location, repo["name"], "alpha") == "SUCCESS"

    # beta was never registered: the sources-sync sensor added it and requested its first run.
    def synced():
        return [r for r in runs_tagged(live, "docforge/trigger", "sources-sync") if r["status"] in DONE]

    first = live.wait("the sources-sync sensor's run of beta", synced, RUN_S, every=5)
    assert [(partition_of(r), r["status"]) for r in first] == [("beta", "SUCCESS")]

    # A backfill of every partition: one run per partition (BackfillPolicy.multi_run(1)).
    runs = backfill_all(live)
    assert sorted((partition_of(r), r["status"]) for r in runs) == [("alpha", "SUCCESS"), ("beta", "SUCCESS")]

    ran = {
        c["name"]: c["executionForLatestMaterialization"]["status"]
        for n in live.gql(ASSETS)["assetNodes"]
        if n["assetKey"]["path"] == ["chunk_embeddings"]
        for c in n["assetChecksOrError"]["checks"]
    }
    assert set(ran.values()) == {"SUCCEEDED"}, ran
    ticks = [
        t for s in live.gql(REPOS)["repositoriesOrError"]["nodes"][0]["sensors"] for t in s["sensorState"]["ticks"]
    ]
    assert ticks and not [t for t in ticks if t["status"] == "FAILURE"], ticks
    with psycopg.connect(database_url) as conn:
        indexed = dict(conn.execute("SELECT source, count(*) FROM documents GROUP BY source").fetchall())
    assert indexed == {"alpha": 2, "beta": 2}

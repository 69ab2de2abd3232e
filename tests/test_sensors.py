"""Push sensor on the real rust-rfcs bundle; sources-sync sensor on a real store."""

from __future__ import annotations

import json
import subprocess

import psycopg
import pytest
from dagster import (
    AddDynamicPartitionsRequest,
    DeleteDynamicPartitionsRequest,
    SensorResult,
    SkipReason,
    build_sensor_context,
    instance_for_test,
)

from orchestration.definitions import defs
from pipeline.config import load_settings
from pipeline.ingest import IngestContext, ingest_source
from pipeline.store.db import lock_id, source_lock
from resources import PostgresResource, SourcesResource
from tests.helpers import RFC_GLOBS, git, shared

SNAP3, SNAP4, SNAP5 = (
    "219947ecc6e04d36e4f0a05a0cd64db86f932493",
    "8171ef605e71f702a37895cdfe5713ee7bf1d805",
    "662fbfff112609ead2b03b6726b059eb228e366b",
)
DOCS = {"README.md": "# Widget\n\nWidgets turn cranks.\n", "docs/use.md": "# Use\n\nTurn the crank slowly.\n"}
PUSH = next(s for s in defs.sensors if s.name == "docforge_push")
SYNC = next(s for s in defs.sensors if s.name == "docforge_sources_sync")


@pytest.fixture
def instance():
    with instance_for_test() as inst:
        yield inst


def evaluate(sensor, instance, cfg, cursor=None, url=None):
    """One tick; for the push sensor the heads are polled now, whenever the last poll was."""
    resources = {"sources": SourcesResource(config_path=str(cfg))}
    if url:
        resources["store"] = PostgresResource(database_url=url)
    if sensor is PUSH and cursor:
        cursor = json.dumps({**json.loads(cursor), "polled": 0})
    with build_sensor_context(instance=instance, cursor=cursor, resources=resources) as ctx:
        return sensor(ctx)


def runs(result) -> list[tuple[str, str | None]]:
    return [(r.partition_key, r.run_key) for r in result.run_requests] if isinstance(result, SensorResult) else []


def apply_partition_requests(instance, result) -> None:
    """What the daemon does with a tick's partition requests, before it submits the runs."""
    for req in result.dynamic_partitions_requests if isinstance(result, SensorResult) else []:
        if isinstance(req, AddDynamicPartitionsRequest):
            instance.add_dynamic_partitions(req.partitions_def_name, list(req.partition_keys))
        elif isinstance(req, DeleteDynamicPartitionsRequest):
            for key in req.partition_keys:
                instance.delete_dynamic_partition(req.partitions_def_name, key)


@pytest.fixture
def rfcs_clone(tmp_path):
    """A clone at snapshot-3 whose origin/main is where it was before main got snapshot-4 and -5."""
    work = tmp_path / "work"
    # --no-checkout: the sensor reads refs only, and writing 650 files is most of a clone's time.
    subprocess.run(
        [
            "git",
            "clone",
            "-q",
            "--no-checkout",
            "--branch",
            "snapshot-3",
            str(shared("corpus", "rust-rfcs-md.bundle")),
            str(work),
        ],
        check=True,
        capture_output=True,
    )
    git(work, "update-ref", "refs/remotes/origin/main", SNAP3)  # a clone bundles main as it is now
    return work


def test_push_sensor_fires_once_per_new_commit_on_the_branch(rfcs_clone, write_config, instance, database_url):
    cfg = write_config([{"name": "rfcs", "type": "git", "repo": str(rfcs_clone), "branch": "main", "globs": RFC_GLOBS}])
    first = evaluate(PUSH, instance, cfg, url=database_url)
    assert runs(first) == [] and first.skip_reason  # first sight: commit recorded, nothing requested
    git(rfcs_clone, "fetch", "-q", "origin", "refs/heads/main:refs/remotes/origin/main")  # the "push"
    moved = evaluate(PUSH, instance, cfg, first.cursor, database_url)
    assert runs(moved) == [("rfcs", f"rfcs@{SNAP5}")]
    assert moved.run_requests[0].tags["docforge/commit"] == SNAP5
    # The partition did not exist yet: the same tick adds it, so the run request is valid.
    assert [list(r.partition_keys) for r in moved.dynamic_partitions_requests] == [["rfcs"]]
    again = evaluate(PUSH, instance, cfg, moved.cursor, database_url)
    assert runs(again) == [] and "no repository moved" in again.skip_reason.skip_message


def test_push_sensor_watches_head_of_a_checkout(rfcs_clone, write_config, instance, database_url):
    instance.add_dynamic_partitions("sources", ["rfcs"])
    cfg = write_config([{"name": "rfcs", "type": "git", "repo": str(rfcs_clone), "globs": RFC_GLOBS}])
    cursor = evaluate(PUSH, instance, cfg, url=database_url).cursor
    git(rfcs_clone, "checkout", "-q", "snapshot-4")
    moved = evaluate(PUSH, instance, cfg, cursor, database_url)
    assert runs(moved) == [("rfcs", f"rfcs@{SNAP4}")]
    assert moved.dynamic_partitions_requests == []  # already registered
    assert runs(evaluate(PUSH, instance, cfg, moved.cursor, database_url)) == []


def test_push_sensor_reads_a_remote_with_ls_remote(tmp_path, write_config, instance, database_url):
    bundle = shared("corpus", "rust-rfcs-md.bundle")
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(bundle), str(remote)], check=True, capture_output=True)
    git(remote, "update-ref", "refs/heads/main", SNAP3)
    cfg = write_config([{"name": "rfcs", "type": "git", "repo": remote.as_uri(), "branch": "main"}])
    cursor = evaluate(PUSH, instance, cfg, url=database_url).cursor
    git(remote, "fetch", "-q", "--update-head-ok", str(bundle), "refs/heads/main:refs/heads/main")  # a push
    assert runs(evaluate(PUSH, instance, cfg, cursor, database_url)) == [("rfcs", f"rfcs@{SNAP5}")]


def test_push_sensor_skips_an_unreadable_repo_and_evaluates_the_rest(
    rfcs_clone, tmp_path, write_config, instance, database_url
):
    cfg = write_config(
        [
            {"name": "gone", "type": "git", "repo": str(tmp_path / "nowhere")},
            {"name": "rfcs", "type": "git", "repo": str(rfcs_clone), "branch": "main"},
        ]
    )
    first = evaluate(PUSH, instance, cfg, url=database_url)
    assert "source 'gone' skipped" in first.skip_reason.skip_message
    git(rfcs_clone, "fetch", "-q", "origin", "refs/heads/main:refs/remotes/origin/main")
    assert runs(evaluate(PUSH, instance, cfg, first.cursor, database_url)) == [("rfcs", f"rfcs@{SNAP5}")]


def test_sensors_skip_an_invalid_sources_yml(tmp_path, instance, database_url):
    cfg = tmp_path / "sources.yml"
    cfg.write_text("sources:\n  - name: broken\n    type: git\n")  # no repo
    for sensor in (PUSH, SYNC):
        res = evaluate(sensor, instance, cfg, url=database_url)
        assert isinstance(res, SkipReason)
        assert "sources.yml is invalid" in res.skip_message and "'broken'" in res.skip_message


def rows(url: str) -> dict[str, int]:
    with psycopg.connect(url) as conn:
        return dict(conn.execute("SELECT source, count(*) FROM documents GROUP BY source").fetchall())


@pytest.fixture
def two_sources(make_repo, write_config, database_url, embedder):
    """Sources a and b in sources.yml; a, b and `old` (no longer configured) ingested for real."""
    repos = {n: str(make_repo(DOCS, n)) for n in ("a", "b", "old")}
    full = write_config([{"name": n, "type": "git", "repo": r} for n, r in repos.items()])
    for n in repos:
        ingest_source(IngestContext(load_settings(full), url=database_url, embedder=embedder), n)
    return write_config([{"name": n, "type": "git", "repo": repos[n]} for n in ("a", "b")]), repos


def test_sources_sync_adds_partitions_and_requests_first_runs(two_sources, instance, database_url):
    cfg, _ = two_sources
    res = evaluate(SYNC, instance, cfg, url=database_url)
    assert [list(r.partition_keys) for r in res.dynamic_partitions_requests] == [["a", "b"]]
    assert runs(res) == [("a", None), ("b", None)]
    assert rows(database_url) == {"a": 2, "b": 2}  # `old` was in the store only: purged
    apply_partition_requests(instance, res)
    assert instance.get_dynamic_partitions("sources") == ["a", "b"]
    assert "partitions match" in evaluate(SYNC, instance, cfg, url=database_url).skip_message


def test_sources_sync_removes_a_source_and_purges_its_rows(two_sources, instance, database_url, write_config):
    cfg, repos = two_sources
    instance.add_dynamic_partitions("sources", ["a", "b", "old"])
    only_a = write_config([{"name": "a", "type": "git", "repo": repos["a"]}])
    res = evaluate(SYNC, instance, only_a, url=database_url)
    assert runs(res) == []
    assert [list(r.partition_keys) for r in res.dynamic_partitions_requests] == [["b", "old"]]
    assert isinstance(res.dynamic_partitions_requests[0], DeleteDynamicPartitionsRequest)
    assert rows(database_url) == {"a": 2}
    with psycopg.connect(database_url) as conn:
        assert conn.execute("SELECT count(*) FROM chunks WHERE doc_key NOT LIKE 'a:%'").fetchone()[0] == 0
        assert conn.execute("SELECT count(*) FROM ledger WHERE source <> 'a'").fetchone()[0] == 0
    apply_partition_requests(instance, res)
    assert instance.get_dynamic_partitions("sources") == ["a"]


def test_sources_sync_keeps_a_partition_whose_purge_must_wait(two_sources, instance, database_url, write_config):
    cfg, repos = two_sources
    instance.add_dynamic_partitions("sources", ["a", "b"])
    only_a = write_config([{"name": "a", "type": "git", "repo": repos["a"]}])
    with psycopg.connect(database_url, autocommit=True) as ingesting:  # a run holds b's lock
        ingesting.execute("SELECT pg_advisory_lock(%s)", (lock_id(source_lock("b")),))
        res = evaluate(SYNC, instance, only_a, url=database_url)
    deleted = [k for r in res.dynamic_partitions_requests for k in r.partition_keys]
    assert "b" not in deleted and rows(database_url)["b"] == 2
    res = evaluate(SYNC, instance, only_a, url=database_url)  # next tick: lock released
    assert [list(r.partition_keys) for r in res.dynamic_partitions_requests] == [["b"]]
    assert "b" not in rows(database_url)

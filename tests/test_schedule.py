"""The nightly schedule: cron/timezone from sources.yml or env, one run request per partition."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from dagster import build_schedule_context, instance_for_test

from orchestration.definitions import defs
from orchestration.jobs import ingest_job
from orchestration.schedules import build_nightly_schedule, schedule_config
from pipeline.config import ScheduleConfig
from pipeline.errors import ConfigError
from resources import SourcesResource

NIGHTLY = next(s for s in defs.schedules if s.name == "docforge_nightly")
TICK = datetime(2026, 5, 6, 2, 0, tzinfo=UTC)


@pytest.fixture
def config(write_config, tmp_path):
    return write_config(
        [{"name": n, "type": "git", "repo": str(tmp_path / n)} for n in ("a", "b", "c")],
        schedule={"cron": "30 3 * * 1-5", "timezone": "Europe/Berlin"},
    )


def evaluate(instance, cfg, when=TICK):
    """As the daemon does: evaluate_tick also resolves and validates each run request's partition."""
    with build_schedule_context(
        instance=instance,
        scheduled_execution_time=when,
        repository_def=defs.get_repository_def(),
        resources={"sources": SourcesResource(config_path=str(cfg))},
    ) as ctx:
        return NIGHTLY.evaluate_tick(ctx)


def test_one_run_request_per_registered_partition(config):
    with instance_for_test() as instance:
        instance.add_dynamic_partitions("sources", ["a", "b", "removed"])
        data = evaluate(instance, config)
    reqs = data.run_requests
    assert [r.partition_key for r in reqs] == ["a", "b"]  # c: no partition yet; removed: not configured
    assert [r.run_key for r in reqs] == [f"{n}@{TICK.isoformat()}" for n in ("a", "b")]
    assert all(r.tags["docforge/trigger"] == "schedule" for r in reqs)
    assert data.skip_message is None


def test_run_keys_differ_between_nights(config):
    with instance_for_test() as instance:
        instance.add_dynamic_partitions("sources", ["a"])
        keys = {evaluate(instance, config, when).run_requests[0].run_key for when in (TICK, TICK.replace(day=7))}
    assert len(keys) == 2


def test_skips_with_no_partitions_or_an_invalid_file(config, tmp_path):
    bad = tmp_path / "bad.yml"
    bad.write_text("sources: [{name: x, type: svn, repo: .}]\n")
    with instance_for_test() as instance:
        assert "no source has a partition yet" in evaluate(instance, config).skip_message
        instance.add_dynamic_partitions("sources", ["x"])
        msg = evaluate(instance, bad).skip_message
    assert "sources.yml is invalid" in msg and "'x'" in msg


def test_cron_and_timezone_come_from_sources_yml_then_env(config, monkeypatch):
    assert schedule_config(str(config)) == ScheduleConfig(cron="30 3 * * 1-5", timezone="Europe/Berlin")
    monkeypatch.setenv("DOCFORGE_SCHEDULE__CRON", "0 4 * * *")
    assert schedule_config(str(config)).cron == "0 4 * * *"
    sched = build_nightly_schedule(ingest_job, schedule_config(str(config)))
    assert (sched.cron_schedule, sched.execution_timezone) == ("0 4 * * *", "Europe/Berlin")


def test_an_invalid_file_falls_back_to_the_default_schedule(tmp_path):
    bad = tmp_path / "sources.yml"
    bad.write_text("sources: 3\n")
    assert schedule_config(str(bad)) == ScheduleConfig()


def test_an_invalid_cron_is_a_config_error():
    with pytest.raises(ConfigError, match="cron 'every night'"):
        build_nightly_schedule(ingest_job, ScheduleConfig(cron="every night"))


def test_the_wired_schedule_targets_the_ingest_job():
    assert NIGHTLY.job_name == "ingest"

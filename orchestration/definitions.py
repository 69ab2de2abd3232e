"""The one place Dagster is wired: assets, checks, resources, jobs, schedules, sensors.

See docs/orchestration.md for how each trigger behaves.
"""

from __future__ import annotations

import os

from dagster import Definitions

from assets.checks import ingest_checks
from assets.ingest import ingest_assets, source_partitions
from orchestration.jobs import executor, ingest_job
from orchestration.schedules import build_nightly_schedule, schedule_config
from orchestration.sensors import build_push_sensor, build_sources_sync_sensor
from resources import EmbedderResource, PostgresResource, SourcesResource

CONFIG_PATH = os.environ.get("DOCFORGE_CONFIG", "sources.yml")


def resources(config_path: str = CONFIG_PATH) -> dict:
    return {
        "sources": SourcesResource(config_path=config_path),
        "store": PostgresResource(),
        "embedder": EmbedderResource(),
    }


defs = Definitions(
    assets=ingest_assets,
    asset_checks=ingest_checks,
    jobs=[ingest_job],
    schedules=[build_nightly_schedule(ingest_job, schedule_config(CONFIG_PATH))],
    sensors=[build_push_sensor(ingest_job), build_sources_sync_sensor(ingest_job)],
    resources=resources(),
    executor=executor(),
)


def _root_cause(err) -> str:
    """The user's error (e.g. a missing repo), not Dagster's wrapper around it."""
    while err.cause is not None:
        err = err.cause
    return err.message.strip()


def materialize_sources(config_path: str, names: list[str], log_level: str = "CRITICAL") -> dict[str, object]:
    """Run the ingest assets for each source in-process; {name: IngestStats or error text}.

    Uses the instance in $DAGSTER_HOME when set (runs then show in the UI),
    else an ephemeral one.
    """
    from dagster import DagsterInstance, materialize

    from pipeline.progress import begin_source

    from assets.ingest import stats_from_metadata

    instance = DagsterInstance.get() if os.environ.get("DAGSTER_HOME") else DagsterInstance.ephemeral()
    known = set(instance.get_dynamic_partitions(source_partitions.name))
    instance.add_dynamic_partitions(source_partitions.name, [n for n in names if n not in known])
    out: dict[str, object] = {}
    for name in names:
        begin_source(name)
        res = materialize(ingest_assets, partition_key=name, resources=resources(config_path),
                          instance=instance, raise_on_error=False, tags={"docforge/trigger": "cli"},
                          run_config={"loggers": {"console": {"config": {"log_level": log_level}}}})
        if not res.success:
            errors = [_root_cause(e.step_failure_data.error) for e in res.get_step_failure_events()
                      if e.step_failure_data and e.step_failure_data.error]
            out[name] = "; ".join(errors) or "run failed"
            continue
        metas = [m.metadata for m in res.get_asset_materialization_events() for m in [m.materialization]]
        out[name] = stats_from_metadata(metas)
    return out

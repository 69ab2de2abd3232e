"""The one place Dagster is wired: assets, checks, resources, jobs, schedules, sensors.
(The CLI's in-process runs are orchestration/cli_runs.py.)

See docs/orchestration.md for how each trigger behaves.
"""

from __future__ import annotations

from dagster import Definitions

from assets.checks import ingest_checks
from assets.ingest import ingest_assets
from orchestration.jobs import executor, ingest_job
from orchestration.schedules import build_nightly_schedule, schedule_config
from orchestration.sensors import build_push_sensor, build_sources_sync_sensor
from pipeline.config import config_file
from resources import EmbedderResource, PostgresResource, SourcesResource

CONFIG_PATH = str(config_file())  # $DOCFORGE_CONFIG, else ./sources.yml


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
    executor=executor(),  # orchestration.executor, from the environment (DOCFORGE_EXECUTOR)
)

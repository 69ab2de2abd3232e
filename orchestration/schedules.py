"""The nightly schedule: one ingest run per source partition.

Cron and timezone come from sources.yml `schedule:` (or DOCFORGE_SCHEDULE__CRON
/ DOCFORGE_SCHEDULE__TIMEZONE), read once when the code location loads.
One run per partition rather than one run for all: a failing source fails
alone, each run shows in the UI under its source, and the `gpu` pool still
bounds how many embedding steps run at once. Each tick also prunes the usage
records past `usage.retention_days` (pipeline.usage, docs/gaps.md).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

from dagster import (
    DagsterInvalidDefinitionError,
    DefaultScheduleStatus,
    RunRequest,
    ScheduleEvaluationContext,
    SkipReason,
    schedule,
)
from pydantic import ValidationError

from assets.ingest import source_partitions
from pipeline.config import ScheduleConfig, Settings, load_settings
from pipeline.errors import ConfigError
from pipeline.redact import redact
from pipeline.store.db import connect, running_store_url
from pipeline.usage import prune
from resources import SourcesResource

if TYPE_CHECKING:
    from dagster._core.definitions.unresolved_asset_job_definition import UnresolvedAssetJobDefinition


def schedule_config(config_path: str) -> ScheduleConfig:
    """The file's (and env's) schedule; with an invalid file, the env's or the default.

    An invalid sources.yml must not stop the code location from loading: the
    sensors then report the problem, and the schedule's ticks skip with it.
    """
    try:
        return load_settings(config_path).schedule
    except ConfigError:
        try:
            return Settings().schedule
        except ValidationError:
            return ScheduleConfig()


def build_nightly_schedule(job: UnresolvedAssetJobDefinition, cfg: ScheduleConfig):
    try:
        return _nightly(job, cfg)
    except DagsterInvalidDefinitionError as e:
        raise ConfigError(
            f"schedule in sources.yml (cron {cfg.cron!r}, timezone {cfg.timezone!r}) is invalid: {e}"
        ) from None


def _nightly(job: UnresolvedAssetJobDefinition, cfg: ScheduleConfig):
    @schedule(
        name="docforge_nightly",
        job=job,
        cron_schedule=cfg.cron,
        execution_timezone=cfg.timezone,
        default_status=DefaultScheduleStatus.RUNNING,
        description="Re-ingest every source: one run per partition, run_key = source@tick time.",
    )
    def nightly(context: ScheduleEvaluationContext, sources: SourcesResource):
        try:
            settings = sources.settings()
        except ConfigError as e:
            return SkipReason(f"sources.yml is invalid, nothing ingested: {e}")
        prune_usage(context, settings)
        registered = set(context.instance.get_dynamic_partitions(source_partitions.name))
        names = [s.name for s in settings.sources if s.name in registered]
        unregistered = [s.name for s in settings.sources if s.name not in registered]
        if unregistered:  # the sources-sync sensor adds them (and runs them) on its next tick
            context.log.warning(f"sources without a partition yet, skipped: {', '.join(unregistered)}")
        if not names:
            return SkipReason("no source has a partition yet: turn on docforge_sources_sync or run `docforge ingest`")
        tick = (context.scheduled_execution_time or datetime.now(UTC)).isoformat()
        return [
            RunRequest(partition_key=n, run_key=f"{n}@{tick}", tags={"docforge/trigger": "schedule"}) for n in names
        ]

    return nightly


def prune_usage(context: ScheduleEvaluationContext, settings: Settings) -> int:
    """Delete usage records past the retention; how many. Only on a store that is up (an embedded one
    that is not up holds nothing recent: the next tick prunes), and a failure only logs: the ingest runs."""
    url = running_store_url(settings)
    if url is None:
        return 0
    try:
        with connect(url, vector=False) as conn:
            n = prune(conn, settings.usage.retention_days)
    except Exception as e:  # noqa: BLE001 (pruning must never stop the night's ingest)
        context.log.warning(f"usage records not pruned: {redact(str(e).strip())}")
        return 0
    if n:
        context.log.info(f"pruned {n} usage record(s) older than {settings.usage.retention_days} days")
    return n

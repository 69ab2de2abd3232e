"""Sensors: re-index a source when its repository moves; keep partitions equal to sources.yml.

Both read sources.yml on every tick (through `SourcesResource`), so editing the
file needs no redeploy. An invalid file makes both skip with the problem as the
reason: nothing is requested and nothing is deleted.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from dagster import (
    DefaultSensorStatus,
    RunRequest,
    SensorEvaluationContext,
    SensorResult,
    SkipReason,
    sensor,
)

from assets.ingest import source_partitions
from pipeline.config import GitSourceConfig, Settings
from pipeline.errors import ConfigError, DocforgeError, GitSourceError
from pipeline.sources.git import head_commit
from pipeline.sources.remote import is_remote, remote_head
from pipeline.store.admin import purge_source, stored_sources
from pipeline.store.db import connect
from resources import PostgresResource, SourcesResource

if TYPE_CHECKING:
    from dagster._core.definitions.unresolved_asset_job_definition import UnresolvedAssetJobDefinition


def watched_commit(settings: Settings, cfg: GitSourceConfig) -> str:
    """Where a git source's watched ref is now: its branch (or HEAD), locally or on the remote.

    A remote is read exactly as the ingest fetches it (pipeline.sources.remote): same URL forms,
    same credentials, same default-branch rule, so a moved ref here is a change the next run sees.
    """
    if is_remote(cfg.repo):
        return remote_head(cfg)
    return head_commit(settings.resolve_path(cfg.repo), cfg.branch)


def _heads(settings: Settings) -> tuple[dict[str, str], list[str]]:
    """{source name: commit} for every readable git source, and one problem line per unreadable one."""
    heads, problems = {}, []
    for cfg in settings.sources:
        if isinstance(cfg, GitSourceConfig):
            try:
                heads[cfg.name] = watched_commit(settings, cfg)
            except GitSourceError as e:
                problems.append(f"source {cfg.name!r} skipped: {e}")
    return heads, problems


def build_push_sensor(job: UnresolvedAssetJobDefinition, minimum_interval_seconds: int = 60):
    """A run of a source's partition each time its watched ref moves; run_key = source@commit.

    The cursor maps source name → last seen commit. The first sight of a source
    only records its commit (its first ingest comes from the sources-sync sensor
    or the schedule), so turning the sensor on never floods the queue.
    """

    @sensor(
        name="docforge_push",
        job=job,
        minimum_interval_seconds=minimum_interval_seconds,
        default_status=DefaultSensorStatus.RUNNING,
        description="Re-index a git source when its branch (or HEAD) moves; one run per new commit.",
    )
    def push_sensor(context: SensorEvaluationContext, sources: SourcesResource):
        try:
            settings = sources.settings()
        except ConfigError as e:
            return SkipReason(f"sources.yml is invalid, no repository watched: {e}")
        seen = json.loads(context.cursor) if context.cursor else {}
        heads, problems = _heads(settings)
        for p in problems:
            context.log.warning(p)
        moved = [n for n, sha in heads.items() if n in seen and seen[n] != sha]
        names = {s.name for s in settings.sources}
        cursor = json.dumps({**{n: c for n, c in seen.items() if n in names}, **heads}, sort_keys=True)
        requests = [
            RunRequest(
                partition_key=n,
                run_key=f"{n}@{heads[n]}",
                tags={"docforge/trigger": "push", "docforge/commit": heads[n]},
            )
            for n in moved
        ]
        missing = [n for n in moved if not context.instance.has_dynamic_partition(source_partitions.name, n)]
        adds = [source_partitions.build_add_request(missing)] if missing else []
        skip = None if requests else "; ".join([f"no repository moved ({len(heads)} watched)", *problems])
        return SensorResult(run_requests=requests, cursor=cursor, dynamic_partitions_requests=adds, skip_reason=skip)

    return push_sensor


def _purge_removed(
    context: SensorEvaluationContext, settings: Settings, store: PostgresResource, registered: set[str]
) -> list[str]:
    """Purge the rows of every source no longer configured; the names fully purged."""
    wanted = {s.name for s in settings.sources}
    try:
        with connect(store.url(settings), vector=False) as conn:
            stale = sorted((registered | stored_sources(conn)) - wanted)
            done = []
            for name in stale:
                try:
                    purged = purge_source(conn, name)
                except DocforgeError as e:
                    context.log.warning(f"source {name!r} kept for now: {e}")
                    continue
                context.log.info(f"source {name!r} removed from sources.yml: purged {purged}")
                done.append(name)
            return done
    except DocforgeError as e:  # store unreachable: delete no partition until its rows are gone
        context.log.warning(f"cannot purge removed sources, store unavailable: {e}")
        return []


def build_sources_sync_sensor(job: UnresolvedAssetJobDefinition, minimum_interval_seconds: int = 30):
    """Keep the `sources` partitions equal to sources.yml.

    New source → partition added and a first run requested. Removed source →
    its rows purged from the store, then its partition deleted (in that order,
    so a failed purge is retried on the next tick).
    """

    @sensor(
        name="docforge_sources_sync",
        job=job,
        minimum_interval_seconds=minimum_interval_seconds,
        default_status=DefaultSensorStatus.RUNNING,
        description="Add partitions (and first runs) for new sources in sources.yml; purge removed ones.",
    )
    def sources_sync(context: SensorEvaluationContext, sources: SourcesResource, store: PostgresResource):
        try:
            settings = sources.settings()
        except ConfigError as e:
            return SkipReason(f"sources.yml is invalid, partitions and data left as they are: {e}")
        registered = set(context.instance.get_dynamic_partitions(source_partitions.name))
        new = [s.name for s in settings.sources if s.name not in registered]
        purged = _purge_removed(context, settings, store, registered)
        gone = sorted(n for n in purged if n in registered)
        requests = []
        if new:
            requests.append(source_partitions.build_add_request(new))
        if gone:
            requests.append(source_partitions.build_delete_request(gone))
        runs = [RunRequest(partition_key=n, tags={"docforge/trigger": "sources-sync"}) for n in new]
        if not requests and not purged:
            return SkipReason(f"partitions match sources.yml ({len(registered)} sources)")
        return SensorResult(
            run_requests=runs,
            dynamic_partitions_requests=requests,
            skip_reason=None if runs else f"purged {', '.join(purged)}",
        )

    return sources_sync

"""Sensors: re-index a source when a webhook says it changed or its repository moves; keep partitions
equal to sources.yml.

Both read sources.yml on every tick (through `SourcesResource`), so editing the
file needs no redeploy. An invalid file makes both skip with the problem as the
reason: nothing is requested and nothing is deleted.
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING

import psycopg
from dagster import (
    DefaultSensorStatus,
    RunRequest,
    SensorEvaluationContext,
    SensorResult,
    SkipReason,
    sensor,
)

from assets.ingest import PAGES_TAG, source_partitions
from orchestration.jobs import executor
from pipeline.config import GitSourceConfig, Settings
from pipeline.errors import ConfigError, DocforgeError, GitSourceError
from pipeline.sources.git import head_commit
from pipeline.sources.remote import is_remote, remote_head
from pipeline.store import deliveries
from pipeline.store.admin import purge_source, stored_sources
from pipeline.store.db import connect, running_store_url
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


# A webhook run (and a polled push's) touches what one push changed: all its steps in the run's own
# process, not a process per step, and the model loaded as search loads it (on a CPU: ONNX Runtime,
# no torch import), so it is done in seconds (docs/orchestration.md, bench/freshness.py).
IN_PROCESS = {"execution": {"config": {"in_process": {}}}}
QUERY_PATH_MODEL = {"resources": {"embedder": {"config": {"query_path": True}}}}
FAST_RUN_CONFIG = {**IN_PROCESS, **QUERY_PATH_MODEL}
MAX_PAGES_TAG = 50  # page ids in one run's `docforge/pages` tag; more: the whole source is re-listed


def fast_run_config() -> dict:
    """A push's run config: in-process execution when the job runs on Dagster's default executor
    (DOCFORGE_EXECUTOR unset: `multi_or_in_process_executor` takes this config), and the model
    loaded as search loads it."""
    return FAST_RUN_CONFIG if executor() is None else QUERY_PATH_MODEL


def _read_cursor(raw: str | None) -> tuple[dict[str, str], float]:
    """({source: last seen commit}, when the heads were last polled); a cursor of the 60 s-only sensor
    ({source: commit}) reads as never polled."""
    data = json.loads(raw) if raw else {}
    if "heads" in data and isinstance(data["heads"], dict):
        return data["heads"], float(data.get("polled", 0.0))
    return data, 0.0


def _delivered(context: SensorEvaluationContext, settings: Settings, store: PostgresResource) -> list[RunRequest]:
    """A run request per source with pending webhook deliveries (pipeline.store.deliveries), claimed."""
    names = {s.name for s in settings.sources}

    def run_key(b: deliveries.Batch) -> str:
        if b.source not in names:
            return "dropped: source no longer in sources.yml"
        if b.pages is None and b.commit:
            return f"{b.source}@{b.commit}"  # the key a poll would give: a commit is indexed once
        return f"{b.source}@delivery-{max(b.seqs)}"

    # Never start the embedded server from here: until it runs, nothing can have been delivered.
    url = store.database_url or running_store_url(settings)
    if url is None:
        return []
    try:
        with connect(url, vector=False) as conn:
            batches = deliveries.claim(conn, run_key) if deliveries.has_table(conn) else []
    except (DocforgeError, psycopg.Error) as e:
        context.log.warning(f"webhook deliveries not read, store unavailable: {e}")
        return []
    requests = []
    for b in batches:
        if b.source not in names:
            context.log.warning(f"deliveries {', '.join(b.delivery_ids)} dropped: {b.source!r} is not in sources.yml")
            continue
        tags = {"docforge/trigger": "webhook", "docforge/delivery": ",".join(b.delivery_ids)[:1000]}
        if b.commit:
            tags["docforge/commit"] = b.commit
        if b.pages is not None and len(b.pages) <= MAX_PAGES_TAG:
            tags[PAGES_TAG] = ",".join(b.pages)
        requests.append(RunRequest(partition_key=b.source, run_key=run_key(b), tags=tags, run_config=fast_run_config()))
    return requests


def build_push_sensor(
    job: UnresolvedAssetJobDefinition, minimum_interval_seconds: int = 2, poll_interval_seconds: int = 60
):
    """Runs of a source's partition when it changes: at once for a webhook delivery, else when a
    poll (every `poll_interval_seconds`) sees its watched ref move; run_key = source@commit.

    The cursor holds {"heads": {source: last seen commit}, "polled": time}. The first sight of a
    source only records its commit (its first ingest comes from the sources-sync sensor or the
    schedule), so turning the sensor on never floods the queue.
    """

    @sensor(
        name="docforge_push",
        job=job,
        minimum_interval_seconds=minimum_interval_seconds,
        default_status=DefaultSensorStatus.RUNNING,
        description="Re-index a source on a webhook delivery, or when a poll sees its branch (or HEAD) move; "
        "one run per new commit.",
    )
    def push_sensor(context: SensorEvaluationContext, sources: SourcesResource, store: PostgresResource):
        try:
            settings = sources.settings(settled=True)
        except ConfigError as e:
            return SkipReason(f"sources.yml is invalid or being written, no repository watched: {e}")
        seen, polled = _read_cursor(context.cursor)
        requests = _delivered(context, settings, store)
        for r in requests:  # a delivered commit is seen: the next poll does not ask for it again
            if commit := r.tags.get("docforge/commit"):
                seen[r.partition_key or ""] = commit
        names = {s.name for s in settings.sources}
        heads: dict[str, str] = {}
        problems: list[str] = []
        now = time.time()
        if now - polled >= poll_interval_seconds:
            heads, problems = _heads(settings)
            polled = now
            for p in problems:
                context.log.warning(p)
        moved = [n for n, sha in heads.items() if n in seen and seen[n] != sha]
        requests += [
            RunRequest(
                partition_key=n,
                run_key=f"{n}@{heads[n]}",
                tags={"docforge/trigger": "push", "docforge/commit": heads[n]},
                run_config=fast_run_config(),
            )
            for n in moved
        ]
        cursor = json.dumps(
            {"heads": {**{n: c for n, c in seen.items() if n in names}, **heads}, "polled": polled}, sort_keys=True
        )
        wanted = list(dict.fromkeys(r.partition_key for r in requests if r.partition_key))
        missing = [n for n in wanted if not context.instance.has_dynamic_partition(source_partitions.name, n)]
        adds = [source_partitions.build_add_request(missing)] if missing else []
        skip = None if requests else "; ".join([f"no delivery, no repository moved ({len(heads)} polled)", *problems])
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
            settings = sources.settings(settled=True)
        except ConfigError as e:
            return SkipReason(f"sources.yml is invalid or being written, partitions and data left as they are: {e}")
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

"""The CLI's in-process runs: the ingest assets and their checks materialized for each source, one run
per source, reported as `SourceRun`s (docforge ingest)."""

from __future__ import annotations

import os
import time

from orchestration.runs import CheckOutcome, SourceRun


def _root_cause(err) -> str:
    """The user's error (e.g. a missing repo), not Dagster's wrapper around it."""
    while err.cause is not None:
        err = err.cause
    return err.message.strip()


def materialize_sources(config_path: str, names: list[str], log_level: str = "CRITICAL") -> dict[str, SourceRun]:
    """Run the ingest assets and their asset checks for each source in-process, one run per source.

    Uses the instance in $DAGSTER_HOME when set (runs, and check results, then show in the UI),
    else an ephemeral one. A check that raises counts as a failed ERROR check, naming the cause.
    Runs of this host whose process is gone are failed and their pool slots freed first; a run that waits
    for a slot says so, and Ctrl-C/SIGTERM stops it (orchestration/liveness.py).
    """
    from dagster import DagsterInstance, materialize

    from assets.checks import ingest_checks
    from assets.ingest import collecting, ingest_assets, source_partitions
    from orchestration.definitions import resources
    from orchestration.liveness import Waiting, process_tags, release_dead_runs
    from pipeline.config import load_settings
    from pipeline.ingest import IngestStats
    from pipeline.progress import begin_source
    from pipeline.store.db import one_run_of, store_url

    # DAGSTER_HOME is Dagster's own variable (DagsterInstance.get() reads it), not docforge configuration.
    instance = DagsterInstance.get() if os.environ.get("DAGSTER_HOME") else DagsterInstance.ephemeral()
    release_dead_runs(instance)
    known = set(instance.get_dynamic_partitions(source_partitions.name))
    instance.add_dynamic_partitions(source_partitions.name, [n for n in names if n not in known])
    asset_steps = {a.op.name for a in ingest_assets}
    check_names = {c.op.name: key.name for c in ingest_checks for key in c.check_keys}  # step → check
    out: dict[str, SourceRun] = {}
    settings = load_settings(config_path)
    url, wait_s = store_url(settings), settings.schedule.lock_wait_s
    for name in names:
        begin_source(name)
        t0 = time.perf_counter()
        waiting = Waiting(instance)  # a persistent instance's pools are shared with other processes
        if not instance.is_ephemeral:
            waiting.start()
        with one_run_of(url, name, wait_s), collecting() as stages:
            try:
                res = materialize(
                    [*ingest_assets, *ingest_checks],
                    partition_key=name,
                    resources=resources(config_path),
                    instance=instance,
                    raise_on_error=False,
                    tags={"docforge/trigger": "cli", **process_tags()},
                    run_config={"loggers": {"console": {"config": {"log_level": log_level}}}},
                )
            finally:
                if waiting.is_alive():
                    waiting.stop()
        wall = time.perf_counter() - t0
        step_errors: dict[str, str] = {}
        failures = res.get_step_failure_events()
        errors = [e.step_failure_data.error if e.step_failure_data else None for e in failures]
        if waiting.interrupted or any(
            e is not None and e.cls_name == "DagsterExecutionInterruptedError" for e in errors
        ):
            raise KeyboardInterrupt  # Ctrl-C/SIGTERM stopped a step: the run failed; the other sources are not run
        for e, err in zip(failures, errors, strict=True):
            step_errors[e.step_key or ""] = _root_cause(err) if err else "step failed"
        checks = tuple(
            CheckOutcome(c.check_name, c.passed, c.severity.value, c.description or "")
            for c in res.get_asset_check_evaluations()
        )
        checks += tuple(
            CheckOutcome(check_names.get(step, step), False, "ERROR", f"check raised: {msg}")
            for step, msg in step_errors.items()
            if step not in asset_steps
        )
        ingest_errors = [msg for step, msg in step_errors.items() if step in asset_steps]
        if ingest_errors or (not res.success and not step_errors):
            out[name] = SourceRun(error="; ".join(ingest_errors) or "run failed", checks=checks, wall_s=wall)
            continue
        out[name] = SourceRun(stats=sum(stages, IngestStats()), checks=checks, wall_s=wall)
    return out

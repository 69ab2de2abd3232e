"""The ingest job (schedules and sensors target it) and the executor it runs on."""

from __future__ import annotations

import os

from dagster import AssetSelection, ExecutorDefinition, define_asset_job, in_process_executor

from assets.ingest import ingest_assets
from pipeline.errors import ConfigError

# Selecting the assets selects their asset checks too: they run after each materialisation.
# Partitioned by `sources`, inferred from the assets.
ingest_job = define_asset_job(
    "ingest", selection=AssetSelection.assets(*ingest_assets),
    description="One source (partition): list and stage documents, chunk them, embed and swap them in.",
    tags={"docforge/job": "ingest"})


def executor() -> ExecutorDefinition | None:
    """DOCFORGE_EXECUTOR: unset → Dagster's default (a process per step); `in_process` → all
    steps in the run's process (a small machine: one interpreter start per run, not seven);
    `k8s` → a pod per step (needs dagster-k8s), so the embedding step alone can land on a
    GPU node (see `assets.ingest.embed_op_tags`).
    """
    kind = os.environ.get("DOCFORGE_EXECUTOR", "").strip().lower()
    if kind in ("", "default", "multiprocess"):
        return None
    if kind == "in_process":
        return in_process_executor
    if kind == "k8s":
        from dagster_k8s import k8s_job_executor  # optional dependency, only in the k8s image

        return k8s_job_executor
    raise ConfigError(f"DOCFORGE_EXECUTOR={kind!r}: expected 'in_process', 'k8s' or unset (multiprocess)")

"""The ingest job (schedules and sensors target it) and the executor it runs on."""

from __future__ import annotations

from dagster import AssetSelection, ExecutorDefinition, define_asset_job, in_process_executor

from assets.ingest import ingest_assets
from pipeline.config import OrchestrationConfig, env_section

# Selecting the assets selects their asset checks too: they run after each materialisation.
# Partitioned by `sources`, inferred from the assets.
ingest_job = define_asset_job(
    "ingest",
    selection=AssetSelection.assets(*ingest_assets),
    description="One source (partition): list and stage documents, chunk them, embed and swap them in.",
    tags={"docforge/job": "ingest"},
)


def executor(cfg: OrchestrationConfig | None = None) -> ExecutorDefinition | None:
    """`orchestration.executor` (DOCFORGE_EXECUTOR; the environment's when `cfg` is not given):
    multiprocess (unset) → Dagster's default (a process per step); `in_process` → all steps in
    the run's process (a small machine: one interpreter start per run, not seven); `k8s` → a
    pod per step (needs dagster-k8s), so the embedding step alone can land on a GPU node (see
    `assets.ingest.embed_op_tags`).
    """
    kind = (cfg or env_section(OrchestrationConfig)).executor
    if kind == "in_process":
        return in_process_executor
    if kind == "k8s":
        from dagster_k8s import k8s_job_executor  # optional dependency, only in the k8s image

        return k8s_job_executor
    return None

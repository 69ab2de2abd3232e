"""The three ingest stages as partitioned assets (one partition per source)."""

import warnings
from collections.abc import Iterator
from contextlib import contextmanager

from dagster import (
    AssetExecutionContext,
    BackfillPolicy,
    BetaWarning,
    DynamicPartitionsDefinition,
    MaterializeResult,
    MetadataValue,
    asset,
)

from pipeline.config import OrchestrationConfig, env_section
from pipeline.ingest import IngestStats
from pipeline.ingest.chunks import stage_chunks
from pipeline.ingest.documents import stage_documents
from pipeline.ingest.embeddings import stage_embeddings
from resources import EmbedderResource, PostgresResource, SourcesResource, ingest_context

warnings.filterwarnings("ignore", category=BetaWarning)  # backfill_policy is beta, and we rely on it

source_partitions = DynamicPartitionsDefinition(name="sources")
PAGES_TAG = "docforge/pages"  # a run's page ids (comma-separated): refresh those pages, not the whole source
# One run per partition: a failing source never blocks the others, a retry
# re-runs one source, and the embedding pool (below) bounds how many models
# load at once. A single-run backfill would hold one model for hours and fail whole.
_backfill = BackfillPolicy.multi_run(max_partitions_per_run=1)
_common = dict(partitions_def=source_partitions, group_name="ingest", backfill_policy=_backfill)
# How Dagster runs (`Settings.orchestration`): from the environment, as the definitions load.
_ORCHESTRATION = env_section(OrchestrationConfig)
# The embedding step's pool (DOCFORGE_EMBED_POOL): its limit (dagster.yaml `concurrency.pools`,
# or `dagster instance concurrency set gpu N`) is how many models load at once.
EMBED_POOL = _ORCHESTRATION.embed_pool


def embed_op_tags(cfg: OrchestrationConfig | None = None) -> dict:
    """With DOCFORGE_EMBED_GPUS=N (k8s_job_executor), the embedding step's pod asks for N GPUs.

    Only this step: listing and chunking stay on cheap CPU pods. The toleration
    matches the taint GPU node pools usually carry; DOCFORGE_EMBED_NODE_SELECTOR
    (JSON) pins a GPU type. `cfg`: the environment's when not given.
    """
    cfg = cfg or env_section(OrchestrationConfig)
    if cfg.embed_gpus <= 0:
        return {}
    pod: dict = {"tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]}
    if cfg.embed_node_selector:
        pod["node_selector"] = dict(cfg.embed_node_selector)
    container = {"resources": {"limits": {"nvidia.com/gpu": str(cfg.embed_gpus)}}}
    return {"dagster-k8s/config": {"container_config": container, "pod_spec_config": pod}}


_collected: list[IngestStats] | None = None


@contextmanager
def collecting() -> Iterator[list[IngestStats]]:
    """The stats of every stage that finishes in this process for the duration, as they are (the CLI's
    in-process runs read them here; the metadata below is for the UI)."""
    global _collected
    previous, _collected = _collected, []
    try:
        yield _collected
    finally:
        _collected = previous


def result(stats: IngestStats) -> MaterializeResult:
    """Counts and timings as metadata (never config or secrets)."""
    if _collected is not None:
        _collected.append(stats)
    d = stats.as_dict()
    meta: dict = {k: v for k, v in d.items() if isinstance(v, int)}
    meta.update({f"seconds_{k}": float(v) for k, v in d["seconds"].items()})
    if d["failures"]:
        meta["failures"] = MetadataValue.json(d["failures"])
    if d["languages"]:
        meta["languages"] = MetadataValue.json(d["languages"])
    if d["skipped_files"]:
        meta["skipped_files"] = MetadataValue.json(d["skipped_files"])
    return MaterializeResult(metadata=meta)


@asset(**_common, description="Documents listed and hashed; changed ones staged in Postgres.")
def documents(
    context: AssetExecutionContext, sources: SourcesResource, store: PostgresResource, embedder: EmbedderResource
) -> MaterializeResult:
    ctx = ingest_context(sources, store, embedder, context.run_id)
    # A Confluence webhook's run names its pages (orchestration.sensors): only those are listed.
    pages = [p for p in context.run.tags.get(PAGES_TAG, "").split(",") if p.strip()]
    return result(stage_documents(ctx, context.partition_key, pages or None))


@asset(**_common, deps=[documents], description="Staged documents parsed into sections and chunked.")
def chunks(
    context: AssetExecutionContext, sources: SourcesResource, store: PostgresResource, embedder: EmbedderResource
) -> MaterializeResult:
    ctx = ingest_context(sources, store, embedder, context.run_id)
    return result(stage_chunks(ctx, context.partition_key))


@asset(
    **_common,
    deps=[chunks],
    pool=EMBED_POOL,
    op_tags=embed_op_tags(_ORCHESTRATION),
    description="Chunks embedded (reusing known vectors) and swapped into the index.",
)
def chunk_embeddings(
    context: AssetExecutionContext, sources: SourcesResource, store: PostgresResource, embedder: EmbedderResource
) -> MaterializeResult:
    ctx = ingest_context(sources, store, embedder, context.run_id)
    return result(stage_embeddings(ctx, context.partition_key))


ingest_assets = [documents, chunks, chunk_embeddings]

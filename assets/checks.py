"""Asset checks on the index (`chunk_embeddings`): they run after each partition's materialisation.

Each is scoped to the run's partition (a run of source X checks X's rows;
invoked without a partition it checks the whole store), ERROR severity, and on failure says what
is wrong and how many rows, with a sample of the offending ids as metadata.
The table of checks is `pipeline.ingest.checks` (a run with nothing to do runs it without Dagster);
the queries live in `pipeline.store.admin`.
"""

from contextlib import contextmanager

from dagster import (
    AssetCheckExecutionContext,
    AssetCheckResult,
    AssetChecksDefinition,
    AssetCheckSeverity,
    MetadataValue,
    asset_check,
)

from assets.ingest import chunk_embeddings
from pipeline.ingest.checks import CHECKS, IndexCheck, window
from pipeline.store import admin
from pipeline.store.db import connect
from resources import EmbedderResource, PostgresResource, SourcesResource


@contextmanager
def _store(sources: SourcesResource, store: PostgresResource):
    settings = sources.settings()
    with connect(store.url(settings), vector=False) as conn:
        yield settings, conn


def _result(check: IndexCheck, finding: admin.Finding, scope: str) -> AssetCheckResult:
    passed, description = check.verdict(finding, scope)
    if passed:
        return AssetCheckResult(passed=True, description=description, metadata={"count": 0})
    return AssetCheckResult(
        passed=False,
        severity=AssetCheckSeverity.ERROR,
        description=description,
        metadata={
            "count": finding.count,
            "offending_ids": MetadataValue.json(list(finding.ids)),
            "ids_shown": len(finding.ids),
        },
    )


def _make_check(check: IndexCheck) -> AssetChecksDefinition:
    # Not partitioned itself (partitioned checks are a Dagster preview): in a partition's run
    # the context still carries that partition, so the check scopes its queries to it.
    @asset_check(name=check.name, asset=chunk_embeddings, description=check.rule)
    def _check(
        context: AssetCheckExecutionContext,
        sources: SourcesResource,
        store: PostgresResource,
        embedder: EmbedderResource,
    ) -> AssetCheckResult:
        source = context.partition_key if context.has_partition_key else None  # a partition is a source
        scope = f"source {source!r}" if source else "the whole store"
        with _store(sources, store) as (settings, conn):
            return _result(
                check, check.find(conn, source, lambda: window(conn, settings, embedder.get(settings))), scope
            )

    return _check


ingest_checks = [_make_check(c) for c in CHECKS]

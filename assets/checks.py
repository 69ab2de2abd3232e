"""Asset checks on the index (`chunk_embeddings`): they run after each partition's materialisation.

Each is scoped to the run's partition (a run of source X checks X's rows;
invoked without a partition it checks the whole store), ERROR severity, and on failure says what
is wrong and how many rows, with a sample of the offending ids as metadata.
The queries live in `pipeline.store.admin`.
"""

from collections.abc import Callable
from contextlib import contextmanager

import psycopg
from dagster import (
    AssetCheckExecutionContext,
    AssetCheckResult,
    AssetChecksDefinition,
    AssetCheckSeverity,
    MetadataValue,
    asset_check,
)

from assets.ingest import chunk_embeddings
from pipeline import embedders
from pipeline.store import admin, generations
from pipeline.store.db import connect
from resources import EmbedderResource, PostgresResource, SourcesResource

# name → (what a failing row is, description shown in the UI)
_CHECKS = {
    "chunks_have_embeddings": (
        "chunks without an embedding of the store's model and dimension",
        "Every chunk has a vector of the store's dimension, from the store's model.",
    ),
    "no_orphan_chunks": (
        "orphan chunks (no document row; nothing would ever delete them)",
        "Every chunk belongs to a stored document.",
    ),
    "ledger_matches_index": (
        "documents whose ledger row disagrees with the index (missing on one side, "
        "or content hash / chunk count differ)",
        "Ledger rows and stored documents match one to one, hashes and chunk counts.",
    ),
    "chunks_fit_model_window": (
        "chunks longer than the model's window (the model truncates them)",
        "No chunk has more tokens than the embedding model reads.",
    ),
}


@contextmanager
def _store(sources: SourcesResource, store: PostgresResource):
    settings = sources.settings()
    with connect(store.url(settings), vector=False) as conn:
        yield settings, conn


def _result(name: str, finding: admin.Finding, scope: str) -> AssetCheckResult:
    what, rule = _CHECKS[name]
    if finding.ok:
        return AssetCheckResult(passed=True, description=f"{scope}: {rule}", metadata={"count": 0})
    return AssetCheckResult(
        passed=False,
        severity=AssetCheckSeverity.ERROR,
        description=f"{finding.count} {what} in {scope}",
        metadata={
            "count": finding.count,
            "offending_ids": MetadataValue.json(list(finding.ids)),
            "ids_shown": len(finding.ids),
        },
    )


Finder = Callable[[psycopg.Connection, str | None, EmbedderResource, object], admin.Finding]


def _make_check(name: str, find: Finder) -> AssetChecksDefinition:
    # Not partitioned itself (partitioned checks are a Dagster preview): in a partition's run
    # the context still carries that partition, so the check scopes its queries to it.
    @asset_check(name=name, asset=chunk_embeddings, description=_CHECKS[name][1])
    def _check(
        context: AssetCheckExecutionContext,
        sources: SourcesResource,
        store: PostgresResource,
        embedder: EmbedderResource,
    ) -> AssetCheckResult:
        source = context.partition_key if context.has_partition_key else None  # a partition is a source
        scope = f"source {source!r}" if source else "the whole store"
        with _store(sources, store) as (settings, conn):
            return _result(name, find(conn, source, embedder, settings), scope)

    return _check


ingest_checks = [
    _make_check("chunks_have_embeddings", lambda c, p, e, s: admin.chunks_without_embedding(c, p)),
    _make_check("no_orphan_chunks", lambda c, p, e, s: admin.orphan_chunks(c, p)),
    _make_check("ledger_matches_index", lambda c, p, e, s: admin.ledger_mismatches(c, p)),
    _make_check("chunks_fit_model_window", lambda c, p, e, s: admin.oversized_chunks(c, p, _window(c, e, s))),
]


def _window(conn: psycopg.Connection, embedder: EmbedderResource, settings) -> int:
    """The window of the model the store's vectors come from: the live generation's (the embedder
    service's, with EMBEDDER_INGEST), not necessarily sources.yml's (docs/generations.md)."""
    emb = embedder.get(settings)
    gen = generations.live(conn)
    return (embedders.for_generation(settings.embedding, gen, "ingest", emb) if gen else emb).max_seq_length

"""Ingest one source in three resumable stages, each a Dagster asset:

    documents   list the source, compare with the ledger, stage what changed
    chunks      parse and chunk staged documents into staged chunks
    embeddings  reuse or compute vectors, then swap each document in atomically

All state between stages lives in Postgres (`staged_*` tables), so a stage can
be killed anywhere and re-run: it picks up where the last one stopped, and the
index only ever changes inside one per-document transaction.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

from pipeline.ingest.context import IngestContext, IngestStats, record_failures

if TYPE_CHECKING:
    from pipeline.ingest.chunks import stage_chunks
    from pipeline.ingest.documents import stage_documents
    from pipeline.ingest.embeddings import stage_embeddings
    from pipeline.ingest.stages import ingest_source

# Re-exported on first use: a run with nothing to do (pipeline.ingest.noop) never imports the stages.
_LAZY = {
    "ingest_source": "pipeline.ingest.stages",
    "stage_chunks": "pipeline.ingest.chunks",
    "stage_documents": "pipeline.ingest.documents",
    "stage_embeddings": "pipeline.ingest.embeddings",
}


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "IngestContext",
    "IngestStats",
    "ingest_source",
    "record_failures",
    "stage_chunks",
    "stage_documents",
    "stage_embeddings",
]

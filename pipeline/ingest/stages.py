"""One source through the three stages, in order: what one orchestrated run of it does."""

from __future__ import annotations

from collections.abc import Sequence

from pipeline.ingest.chunks import stage_chunks
from pipeline.ingest.context import IngestContext, IngestStats
from pipeline.ingest.documents import stage_documents
from pipeline.ingest.embeddings import stage_embeddings


def ingest_source(ctx: IngestContext, name: str, pages: Sequence[str] | None = None) -> IngestStats:
    """All three stages for one source; `pages`: only those pages of a Confluence source (a webhook's
    run), the rest of it left as it is."""
    return stage_documents(ctx, name, pages) + stage_chunks(ctx, name) + stage_embeddings(ctx, name)

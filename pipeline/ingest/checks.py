"""The index's four invariants, per source: one table that Dagster's asset checks (assets/checks.py)
and a run with nothing to do (pipeline.ingest.noop) both read.

Each is a query of `pipeline.store.admin` returning a Finding: the exact count of rows that break it,
with a sample of their ids.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import psycopg

from pipeline.config import Settings
from pipeline.embed import TextEmbedder, for_generation
from pipeline.store import admin, generations


@dataclass(frozen=True)
class CheckOutcome:
    """One check's verdict on one source, as the CLI reports it."""

    name: str
    passed: bool
    severity: str  # "ERROR" or "WARN": an ERROR that fails makes `docforge ingest` exit 1
    description: str

    def as_dict(self) -> dict:
        return {"name": self.name, "passed": self.passed, "severity": self.severity, "description": self.description}


@dataclass(frozen=True)
class IndexCheck:
    name: str
    what: str  # what a failing row is
    rule: str  # the description shown in the UI
    find: Callable[[psycopg.Connection, str | None, Callable[[], int]], admin.Finding]  # (conn, source, window)

    def verdict(self, finding: admin.Finding, scope: str) -> tuple[bool, str]:
        """(passed, description) as the Dagster UI and `docforge ingest` show them."""
        return (True, f"{scope}: {self.rule}") if finding.ok else (False, f"{finding.count} {self.what} in {scope}")


CHECKS = (
    IndexCheck(
        "chunks_have_embeddings",
        "chunks without an embedding of the store's model and dimension",
        "Every chunk has a vector of the store's dimension, from the store's model.",
        lambda c, s, w: admin.chunks_without_embedding(c, s),
    ),
    IndexCheck(
        "no_orphan_chunks",
        "orphan chunks (no document row; nothing would ever delete them)",
        "Every chunk belongs to a stored document.",
        lambda c, s, w: admin.orphan_chunks(c, s),
    ),
    IndexCheck(
        "ledger_matches_index",
        "documents whose ledger row disagrees with the index (missing on one side, "
        "or content hash / chunk count differ)",
        "Ledger rows and stored documents match one to one, hashes and chunk counts.",
        lambda c, s, w: admin.ledger_mismatches(c, s),
    ),
    IndexCheck(
        "chunks_fit_model_window",
        "chunks longer than the model's window (the model truncates them)",
        "No chunk has more tokens than the embedding model reads.",
        lambda c, s, w: admin.oversized_chunks(c, s, w()),
    ),
)


def window(conn: psycopg.Connection, settings: Settings, emb: TextEmbedder) -> int:
    """The window of the model the store's vectors come from: the live generation's (the embedder
    service's, with EMBEDDER_INGEST), not necessarily sources.yml's (docs/generations.md)."""
    gen = generations.live(conn)
    return (for_generation(settings.embedding, gen, "ingest", emb) if gen else emb).max_seq_length

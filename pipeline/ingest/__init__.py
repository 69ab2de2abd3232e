"""Ingest one source in three resumable stages, each a Dagster asset:

    documents   list the source, compare with the ledger, stage what changed
    chunks      parse and chunk staged documents into staged chunks
    embeddings  reuse or compute vectors, then swap each document in atomically

All state between stages lives in Postgres (`staged_*` tables), so a stage can
be killed anywhere and re-run: it picks up where the last one stopped, and the
index only ever changes inside one per-document transaction.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass, field, fields, replace
from functools import cached_property

import psycopg

from pipeline.chunk import Chunker, fingerprint
from pipeline.config import Settings
from pipeline.embed import Embedder
from pipeline.ingest.faults import storable
from pipeline.ingest.ledger import Fingerprint
from pipeline.records import Failure
from pipeline.redact import redact
from pipeline.store.db import advisory_lock, connect, source_lock, store_url
from pipeline.store.schema import ensure_schema

Progress = Callable[[str, int, int], None]  # (stage, done, total)


@dataclass(frozen=True)
class IngestStats:
    """What one run did to one source (or, summed, to several)."""

    files_added: int = 0
    files_updated: int = 0
    files_unchanged: int = 0
    files_deleted: int = 0
    files_failed: int = 0
    chunks_indexed: int = 0
    chunks_reused: int = 0
    chunks_deleted: int = 0
    chunks_embedded: int = 0
    failures: tuple[Failure, ...] = ()
    seconds: dict[str, float] = field(default_factory=dict)  # wall time per stage

    def __add__(self, other: IngestStats) -> IngestStats:
        counts = {f.name: getattr(self, f.name) + getattr(other, f.name)
                  for f in fields(self) if f.name not in ("failures", "seconds")}
        secs = dict(self.seconds)
        for k, v in other.seconds.items():
            secs[k] = round(secs.get(k, 0.0) + v, 3)
        return IngestStats(**counts, failures=self.failures + other.failures, seconds=secs)

    def timed(self, stage: str, seconds: float) -> IngestStats:
        return replace(self, seconds={**self.seconds, stage: round(seconds, 3)})

    def as_dict(self) -> dict:
        d = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in ("failures", "seconds")}
        d["seconds"] = dict(self.seconds)
        d["failures"] = [{"key": f.key, "stage": f.stage, "error": redact(f.error)} for f in self.failures]
        return d


class IngestContext:
    """Settings plus the lazily built store URL, embedder and chunker of one run."""

    def __init__(self, settings: Settings, *, url: str | None = None, embedder: Embedder | None = None,
                 run_id: str | None = None, progress: Progress | None = None):
        self.settings = settings
        self._url = url
        self.embedder = embedder or Embedder(settings.embedding)
        self.run_id = run_id or uuid.uuid4().hex[:12]
        self.progress = progress or (lambda stage, done, total: None)

    @cached_property
    def url(self) -> str:
        return store_url(self.settings, self._url)

    @cached_property
    def chunker(self) -> Chunker:
        c = self.settings.chunking
        return Chunker(self.embedder.tokenizer, self.embedder.max_seq_length, c.max_tokens, c.overlap_tokens)

    @cached_property
    def fingerprint(self) -> Fingerprint:
        """The chunker and model this run indexes with, as the ledger records them (no tokenizer loaded)."""
        c = self.settings.chunking
        e = self.embedder
        return Fingerprint(fingerprint(e.model_id, e.max_seq_length, c.max_tokens, c.overlap_tokens), e.model_id)

    @contextmanager
    def store(self, source: str | None = None):
        """A connection to a store checked for this model; locked to one source if given."""
        with connect(self.url) as conn:
            ensure_schema(conn, self.embedder.model_id, self.embedder.dimension)
            # Commits skip the WAL flush wait (~5 ms each here, over a thousand per cold run): a server
            # crash may lose the last moments, atomically, and a re-run redoes them; a killed client loses nothing.
            conn.execute("SET synchronous_commit = off")
            if source is None:
                yield conn
            else:
                with advisory_lock(conn, source_lock(source)):
                    yield conn


@contextmanager
def stopwatch():
    t = [time.perf_counter(), 0.0]
    yield t
    t[1] = time.perf_counter() - t[0]


def ingest_source(ctx: IngestContext, name: str) -> IngestStats:
    """All three stages for one source, in order (what one orchestrated run of it does)."""
    from pipeline.ingest.chunks import stage_chunks
    from pipeline.ingest.documents import stage_documents
    from pipeline.ingest.embeddings import stage_embeddings

    return stage_documents(ctx, name) + stage_chunks(ctx, name) + stage_embeddings(ctx, name)


def record_failures(conn: psycopg.Connection, source: str, failures: list[Failure], run_id: str) -> None:
    if failures:  # storable: a failure may quote the odd text that caused it
        with conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO failures (source, doc_key, stage, error, run_id) VALUES (%s, %s, %s, %s, %s) "
                "ON CONFLICT (source, doc_key) DO UPDATE SET stage = excluded.stage, "
                "error = excluded.error, run_id = excluded.run_id, at = now()",
                [(source, storable(f.key), f.stage, storable(redact(f.error)), run_id) for f in failures])

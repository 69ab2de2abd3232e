"""What every ingest stage shares: the run's context, its stats and the failures table."""

from __future__ import annotations

import uuid
from contextlib import contextmanager
from dataclasses import dataclass, field, fields, replace
from functools import cached_property

import psycopg

from pipeline.chunk import Chunker, fingerprint
from pipeline.config import ChunkingConfig, Settings
from pipeline.embed import Embedder, TextEmbedder, for_generation, for_new_store
from pipeline.ingest.faults import storable
from pipeline.ingest.ledger import Fingerprint
from pipeline.progress import Progress
from pipeline.records import Failure, Skipped
from pipeline.redact import redact
from pipeline.store import generations
from pipeline.store.db import advisory_lock, connect, source_lock, store_url
from pipeline.store.generations import Generation
from pipeline.store.schema import ensure_schema, upgrade_built


@dataclass(frozen=True)
class IngestStats:
    """What one run did to one source (or, summed, to several)."""

    files_added: int = 0
    files_updated: int = 0
    files_unchanged: int = 0
    files_deleted: int = 0
    files_failed: int = 0
    files_access_updated: int = 0  # unchanged or not, who may read them changed: updated in place (no re-embed)
    chunks_indexed: int = 0
    chunks_reused: int = 0
    chunks_deleted: int = 0
    chunks_embedded: int = 0
    files_skipped: int = 0  # left out by the listing on purpose (ignored, binary ...); see skipped_files
    failures: tuple[Failure, ...] = ()
    seconds: dict[str, float] = field(default_factory=dict)  # wall time per stage
    languages: dict[str, int] = field(default_factory=dict)  # documents listed per format ("python", "pdf" ...)
    skipped_files: tuple[Skipped, ...] = ()  # the first MAX_SKIPPED_LISTED of them, with the reason

    def __add__(self, other: IngestStats) -> IngestStats:
        counts = {
            f.name: getattr(self, f.name) + getattr(other, f.name) for f in fields(self) if f.name not in NOT_COUNTS
        }
        secs = dict(self.seconds)
        for k, v in other.seconds.items():
            secs[k] = round(secs.get(k, 0.0) + v, 3)
        langs = dict(self.languages)
        for k, n in other.languages.items():
            langs[k] = langs.get(k, 0) + n
        return IngestStats(
            **counts,
            failures=self.failures + other.failures,
            seconds=secs,
            languages=langs,
            skipped_files=self.skipped_files + other.skipped_files,
        )

    def timed(self, stage: str, seconds: float) -> IngestStats:
        return replace(self, seconds={**self.seconds, stage: round(seconds, 3)})

    def as_dict(self) -> dict:
        d = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in NOT_COUNTS}
        d["seconds"] = dict(self.seconds)
        d["failures"] = [{"key": f.key, "stage": f.stage, "error": redact(f.error)} for f in self.failures]
        d["languages"] = dict(sorted(self.languages.items(), key=lambda kv: (-kv[1], kv[0])))
        d["skipped_files"] = [{"path": s.path, "reason": s.reason} for s in self.skipped_files]
        return d


NOT_COUNTS = ("failures", "seconds", "languages", "skipped_files")  # IngestStats fields that are not counters


class IngestContext:
    """Settings plus the lazily built store URL, embedder and chunker of one run.

    The embedder is the store's live generation's (pipeline.embed.selection): `embedder`,
    when given, is used if it is that model, and builds a new store's first generation
    (or, failing to load, the first of the configured fallbacks that loads)."""

    def __init__(
        self,
        settings: Settings,
        *,
        url: str | None = None,
        embedder: Embedder | None = None,
        run_id: str | None = None,
        progress: Progress | None = None,
    ):
        self.settings = settings
        self._url = url
        self._given = embedder
        self.run_id = run_id or uuid.uuid4().hex[:12]
        self.progress = progress or (lambda stage, done, total: None)

    @cached_property
    def url(self) -> str:
        return store_url(self.settings, self._url)

    @cached_property
    def _live(self) -> tuple[Generation, TextEmbedder]:
        cfg = self.settings.embedding
        with connect(self.url) as conn:
            built = upgrade_built(conn)
            gen = generations.live(conn) if built else None
            if gen is None:  # a new store: its first generation is the model that loads
                emb = for_new_store(cfg, self._given or Embedder(cfg))
                ensure_schema(conn, emb.model_id, emb.dimension, getattr(emb, "name", emb.model_id))
                gen = generations.live(conn)
                assert gen is not None
                return gen, emb
        return gen, for_generation(cfg, gen, "ingest", self._given)

    @property
    def generation(self) -> Generation:
        """The live generation this run writes vectors for."""
        return self._live[0]

    @property
    def embedder(self) -> TextEmbedder:
        """The live generation's model (resolved against the store on first use)."""
        return self._live[1]

    def follow_switch(self) -> Generation:
        """After a reindex switched generations mid-run: the new live one, and its embedder."""
        self.__dict__.pop("_live", None)
        return self.generation

    @cached_property
    def chunker(self) -> Chunker:
        c = self.settings.chunking
        return Chunker(self.embedder.tokenizer, self.embedder.document_window, c.max_tokens, c.overlap_tokens)

    @cached_property
    def fingerprint(self) -> Fingerprint:
        """The chunker and model this run indexes with, as the ledger records them (no tokenizer loaded)."""
        return fingerprint_of(self.embedder, self.settings.chunking)

    @contextmanager
    def store(self, source: str | None = None):
        """A connection to the store (its schema and live generation ready); locked to one source if given."""
        _ = self._live
        with connect(self.url) as conn:
            # Commits skip the WAL flush wait (~5 ms each here, over a thousand per cold run): a server
            # crash may lose the last moments, atomically, and a re-run redoes them; a killed client loses nothing.
            conn.execute("SET synchronous_commit = off")
            if source is None:
                yield conn
            else:
                what, wait_s = f"source {source!r}'s rows", self.settings.schedule.lock_wait_s
                with advisory_lock(conn, source_lock(source), what, wait_s):
                    yield conn


def fingerprint_of(emb: TextEmbedder, chunking: ChunkingConfig) -> Fingerprint:
    """The ledger's fingerprint of chunks cut for `emb` (its tokenizer and document window)."""
    return Fingerprint(
        fingerprint(emb.model_id, emb.document_window, chunking.max_tokens, chunking.overlap_tokens), emb.model_id
    )


def record_failures(conn: psycopg.Connection, source: str, failures: list[Failure], run_id: str) -> None:
    if failures:  # storable: a failure may quote the odd text that caused it
        with conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO failures (source, doc_key, stage, error, run_id) VALUES (%s, %s, %s, %s, %s) "
                "ON CONFLICT (source, doc_key) DO UPDATE SET stage = excluded.stage, "
                "error = excluded.error, run_id = excluded.run_id, at = now()",
                [(source, storable(f.key), f.stage, storable(redact(f.error)), run_id) for f in failures],
            )

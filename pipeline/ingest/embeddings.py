"""Stage 3: give every staged chunk a vector, then swap documents in atomically.

Vectors are the store's live generation's (pipeline.store.generations), reused
by text hash from its table or the staging area; only texts never embedded
before reach the model, longest first
(uniform batches waste no padding), each block committed as it lands so an
interrupted run resumes at the next block. A writer thread with its own
connection commits each block while the model encodes the next (a bounded
queue: the model never waits on the database, memory stays flat).

Then each document is swapped in by one transaction: upsert its `documents`
row, delete chunks no longer present, insert new ones, write its ledger row
(`pipeline.ingest.ledger`), drop its staging rows. Deletions staged by stage 1 are applied last, after their
vectors had their chance to be reused. Into an empty `chunks` table (a cold
load) all documents go in one transaction instead, with the HNSW/GIN indexes
dropped and rebuilt inside it: a bulk build costs a fraction of row-by-row
graph inserts, and a crash anywhere rolls back to the empty, indexed table.

An index page (a sitemap, keyword index, list of pages: link share ≥ `search.index_link_share`, as the
parser measured it) is indexed for keyword search only unless `embedding.index_pages` is on: its document
is marked `keyword_only` and its chunks get no vector (pipeline.store.generations.KEYWORD_ONLY); dense
search never finds them, keyword and hybrid search do (docs/query.md#index-pages).

Each swap holds the live generation's row (`lock_for_write`): a reindex that
switches models waits for it, and a swap after the switch finds its vectors
made for a retired generation, so the stage embeds again for the new one.
"""

from __future__ import annotations

import queue
import threading
import time
from dataclasses import dataclass

import numpy as np
import psycopg
from psycopg.rows import class_row, dict_row

from pipeline.embed import TextEmbedder
from pipeline.ingest import ledger
from pipeline.ingest.context import IngestContext, IngestStats, record_failures
from pipeline.ingest.faults import failure
from pipeline.records import Failure
from pipeline.store import generations
from pipeline.store.db import connect, scalar
from pipeline.store.generations import Generation, GenerationChanged

BLOCK = 512  # texts per encode call / commit
_ASYNC_COMMIT = "SET synchronous_commit = off"  # as IngestContext.store() sets it (see there why)

_MINE = "SELECT doc_key FROM staged_documents WHERE source = %(source)s"
# Staged vectors made for a generation no longer live (a reindex switched mid-run) are redone.
_STALE_STAGED = f"""
UPDATE staged_chunks SET embedding = NULL, generation = NULL
WHERE embedding IS NOT NULL AND generation IS DISTINCT FROM %(gen)s AND doc_key IN ({_MINE})
"""
_REUSE_INDEX = f"""
UPDATE staged_chunks s SET embedding = c.embedding, generation = %(gen)s
FROM (SELECT DISTINCT ON (c.text_hash) c.text_hash, v.embedding::vector AS embedding
      FROM chunks c JOIN {{vectors}} v ON v.seq = c.seq
      WHERE c.text_hash IN (
          SELECT text_hash FROM staged_chunks WHERE embedding IS NULL AND doc_key IN ({_MINE}))) c
WHERE s.text_hash = c.text_hash AND s.embedding IS NULL AND s.doc_key IN ({_MINE})
"""
_REUSE_STAGED = f"""
UPDATE staged_chunks s SET embedding = o.embedding, generation = %(gen)s
FROM (SELECT DISTINCT ON (text_hash) text_hash, embedding FROM staged_chunks
      WHERE embedding IS NOT NULL AND generation = %(gen)s) o
WHERE s.text_hash = o.text_hash AND s.embedding IS NULL AND s.doc_key IN ({_MINE})
"""
# Which staged documents are index pages, kept for keyword search only (their chunks wait for no vector).
_KEYWORD_ONLY = """
UPDATE staged_documents SET meta = CASE
    WHEN NOT %(embed_index)s AND coalesce((meta->>'link_share')::real, 0) >= %(share)s
    THEN coalesce(meta, '{}') || '{"keyword_only": true}' ELSE meta - 'keyword_only' END
WHERE source = %(source)s AND action = 'upsert'
"""
_PENDING = f"""
SELECT DISTINCT ON (s.text_hash) s.text_hash, s.embed_text, s.token_count
FROM staged_chunks s JOIN staged_documents d USING (doc_key)
WHERE d.source = %s AND s.embedding IS NULL AND NOT {generations.KEYWORD_ONLY}
"""
_UPSERT_DOCUMENT = """
INSERT INTO documents (key, source, type, uri, url, title, tags, meta, content_hash, version, mtime_ns,
                       access, last_crawled_at, status)
SELECT doc_key, source, type, uri, url, title, coalesce(tags, '{}'), coalesce(meta, '{}'), content_hash,
       version, mtime_ns, access, now(), 'indexed'
FROM staged_documents WHERE doc_key = ANY(%(keys)s)
ON CONFLICT (key) DO UPDATE SET type = excluded.type, uri = excluded.uri, url = excluded.url,
    title = excluded.title, tags = excluded.tags, meta = excluded.meta, content_hash = excluded.content_hash,
    version = excluded.version, mtime_ns = excluded.mtime_ns, access = excluded.access,
    last_crawled_at = now(), status = 'indexed'
"""
_DELETE_OLD = """
DELETE FROM chunks c WHERE c.doc_key = ANY(%(keys)s)
AND NOT EXISTS (SELECT 1 FROM staged_chunks s WHERE s.doc_key = c.doc_key AND s.id = c.id)
"""
_INSERT_NEW = """
INSERT INTO chunks (id, doc_key, ordinal, heading_path, section, text, token_count, text_hash, page, embed_prefix,
                    blocks, anchor)
SELECT id, doc_key, ordinal, heading_path, array_to_string(heading_path, ' > '), text, token_count,
       text_hash, page, CASE WHEN right(embed_text, length(text)) = text
                             THEN left(embed_text, length(embed_text) - length(text)) END, blocks, anchor
FROM staged_chunks WHERE doc_key = ANY(%(keys)s)
ON CONFLICT (id) DO UPDATE SET page = excluded.page, blocks = excluded.blocks, anchor = excluded.anchor
WHERE (chunks.page, chunks.blocks, chunks.anchor) IS DISTINCT FROM (excluded.page, excluded.blocks, excluded.anchor)
"""  # the same text at the same place may have moved to another page, be read into other blocks, or anchored
# The live generation's vectors of the chunks just swapped in (a chunk kept as it was keeps its own).
_INSERT_VECTORS = """
INSERT INTO {vectors} (seq, embedding)
SELECT c.seq, s.embedding::{type} FROM staged_chunks s JOIN chunks c ON c.id = s.id
WHERE s.doc_key = ANY(%(keys)s) AND s.embedding IS NOT NULL
ON CONFLICT (seq) DO NOTHING
"""
# Indexes whose bulk build beats row-by-row inserts: pgvector graphs and GIN. (The keyword
# postings, migration 0008, are packed by their trigger in one pass: nothing to rebuild.)
BULK_INDEXES = """
SELECT indexname, indexdef FROM pg_indexes
WHERE schemaname = current_schema() AND (tablename = 'chunks' OR tablename ~ '^vectors_[0-9]+$')
                                    AND indexdef ~* ' USING (hnsw|ivfflat|gin) '
"""


def stage_embeddings(ctx: IngestContext, name: str) -> IngestStats:
    t0 = time.perf_counter()
    stats = IngestStats()
    for attempt in range(3):
        try:
            stats += _embed_and_swap(ctx, name)
            break
        except GenerationChanged:
            if attempt == 2:
                raise
            ctx.follow_switch()  # documents swapped in so far are done; the rest are embedded again
    return stats.timed("embeddings", time.perf_counter() - t0)


def _embed_and_swap(ctx: IngestContext, name: str) -> IngestStats:
    gen = ctx.generation
    p = {"gen": gen.id, "source": name}
    with ctx.store(name) as conn:
        index = {"embed_index": ctx.settings.embedding.index_pages, "share": ctx.settings.search.index_link_share}
        conn.execute(_KEYWORD_ONLY, {**p, **index})
        conn.execute(_STALE_STAGED, p)
        reused = conn.execute(_REUSE_INDEX.format(vectors=f'"{gen.table_name}"'), p).rowcount
        reused += conn.execute(_REUSE_STAGED, p).rowcount
        embedded, t_embed, unembeddable = _embed_pending(ctx, conn, name, gen)
        failures = _drop_unembeddable(ctx, conn, name, unembeddable)
        t1 = time.perf_counter()
        indexed, deleted = _swap_in(ctx, conn, name, gen)
        t_write = time.perf_counter() - t1
    stats = IngestStats(
        chunks_indexed=indexed,
        chunks_reused=reused,
        chunks_deleted=deleted,
        chunks_embedded=embedded,
        files_failed=len(failures),
        failures=tuple(failures),
    )
    return stats.timed("embed", t_embed).timed("write", t_write)


@dataclass(frozen=True)
class _Pending:
    """A text no vector was found for."""

    text_hash: str
    embed_text: str
    token_count: int


def _embed_pending(
    ctx: IngestContext, conn: psycopg.Connection, name: str, gen: Generation
) -> tuple[int, float, dict[str, BaseException]]:
    """Vectors for every pending text; the texts the model fails on (text hash → error) are left out."""
    with conn.cursor(row_factory=class_row(_Pending)) as cur:
        pending = cur.execute(_PENDING, (name,)).fetchall()
    if not pending:
        return 0, 0.0, {}
    unembeddable: dict[str, BaseException] = {}
    pending.sort(key=lambda r: -r.token_count)  # longest first: uniform batches, no padding waste
    t_embed = 0.0
    writer = _VectorWriter(ctx.url, gen.id)
    ctx.progress("embeddings", 0, len(pending))  # the rate's clock starts before the first block, not after it
    try:
        for start in range(0, len(pending), BLOCK):
            block = pending[start : start + BLOCK]
            t = time.perf_counter()
            block, vectors = _encode(ctx.embedder, block, unembeddable)
            t_embed += time.perf_counter() - t
            writer.put([r.text_hash for r in block], vectors)
            ctx.progress("embeddings", writer.committed, len(pending))  # committed, as a resumed run sees it
    finally:
        writer.close()  # waits for every queued block to commit; re-raises a writer error
    ctx.progress("embeddings", writer.committed, len(pending))
    return len(pending) - len(unembeddable), t_embed, unembeddable


def _encode(
    embedder: TextEmbedder, block: list[_Pending], unembeddable: dict[str, BaseException]
) -> tuple[list[_Pending], np.ndarray]:
    """The block's vectors; on an error, text by text, so that only the texts at fault are left out.

    A text is at fault when it alone fails, or its vector is not finite (pgvector
    refuses NaN). An error every text of the block hits is the model's, not theirs: raised.
    """
    try:
        vectors = embedder.encode([r.embed_text for r in block])
    except Exception as e:  # any backend's fault (torch, ONNX Runtime, the service): found text by text below
        if len(block) == 1:
            raise
        kept: list[tuple[_Pending, np.ndarray]] = []
        errors: dict[str, BaseException] = {}
        for r in block:
            try:
                kept.append((r, embedder.encode([r.embed_text])[0]))
            except Exception as one:  # a per-text fault boundary: this text's document fails, alone
                errors[r.text_hash] = one
        if not kept:
            raise e
        unembeddable.update(errors)
        block, vectors = [r for r, _ in kept], np.stack([v for _, v in kept])
    finite = np.isfinite(vectors).all(axis=1)
    if not finite.all():
        unembeddable.update(
            (r.text_hash, ValueError("the model gave a vector that is not finite (NaN or inf)"))
            for r, ok in zip(block, finite, strict=True)
            if not ok
        )
        block, vectors = [r for r, ok in zip(block, finite, strict=True) if ok], vectors[finite]
    return block, vectors


def _drop_unembeddable(
    ctx: IngestContext, conn: psycopg.Connection, name: str, unembeddable: dict[str, BaseException]
) -> list[Failure]:
    """Fail the documents holding a text the model cannot embed; the others are swapped in as usual."""
    if not unembeddable:
        return []
    rows = conn.execute(
        "SELECT DISTINCT ON (s.doc_key) s.doc_key, s.text_hash FROM staged_chunks s "
        "JOIN staged_documents d USING (doc_key) WHERE d.source = %s AND s.text_hash = ANY(%s) "
        "ORDER BY s.doc_key",
        (name, list(unembeddable)),
    ).fetchall()
    failures = [failure(key, "embed", unembeddable[h]) for key, h in rows]
    conn.execute("DELETE FROM staged_documents WHERE doc_key = ANY(%s)", ([f.key for f in failures],))
    record_failures(conn, name, failures, ctx.run_id)
    return failures


class _VectorWriter:
    """Commits encoded blocks on its own connection, in order, one block behind the encoder."""

    def __init__(self, url: str, generation: int | None = None):
        self._queue: queue.Queue = queue.Queue(maxsize=2)  # bounded: at most two blocks in memory
        self.generation = generation
        self._error: BaseException | None = None
        self.committed = 0  # texts whose vectors are committed (written by the writer thread only)
        self._thread = threading.Thread(target=self._run, args=(url,), name="docforge-vector-writer", daemon=True)
        self._thread.start()

    def put(self, hashes: list[str], vectors: np.ndarray) -> None:
        if self._error is not None:
            raise self._error
        self._queue.put((hashes, vectors))

    def close(self) -> None:
        self._queue.put(None)
        self._thread.join()
        if self._error is not None:
            raise self._error

    def _run(self, url: str) -> None:
        try:
            with connect(url) as conn:
                conn.execute(_ASYNC_COMMIT)
                while (item := self._queue.get()) is not None:
                    hashes, vectors = item
                    _store_vectors(conn, hashes, vectors, self.generation)
                    self.committed += len(hashes)
        except BaseException as e:  # handed to the encoder thread, which raises it
            self._error = e
            while self._queue.get() is not None:  # keep draining so the encoder never blocks
                pass


def _store_vectors(conn: psycopg.Connection, hashes: list[str], vectors: np.ndarray, generation: int | None) -> None:
    with conn.transaction(), conn.cursor() as cur:
        cur.execute(
            "CREATE TEMP TABLE IF NOT EXISTS new_vectors (text_hash text, embedding vector) ON COMMIT DELETE ROWS"
        )
        with cur.copy("COPY new_vectors (text_hash, embedding) FROM STDIN WITH (FORMAT BINARY)") as copy:
            copy.set_types(["text", "vector"])
            for h, v in zip(hashes, vectors, strict=True):
                copy.write_row((h, v))
        cur.execute(
            "UPDATE staged_chunks s SET embedding = n.embedding, generation = %s FROM new_vectors n "
            "WHERE s.text_hash = n.text_hash AND s.embedding IS NULL",
            (generation,),
        )


def _swap_in(ctx: IngestContext, conn: psycopg.Connection, name: str, gen: Generation) -> tuple[int, int]:
    """Commit every fully embedded staged document, then staged deletions."""
    ready = [
        k
        for (k,) in conn.execute(
            "SELECT d.doc_key FROM staged_documents d WHERE d.source = %s AND d.action = 'upsert' AND d.chunked "
            f"AND ({generations.KEYWORD_ONLY} OR NOT EXISTS "
            "(SELECT 1 FROM staged_chunks s WHERE s.doc_key = d.doc_key AND s.embedding IS NULL)) "
            "ORDER BY d.doc_key",
            (name,),
        ).fetchall()
    ]
    gone = [
        k
        for (k,) in conn.execute(
            "SELECT doc_key FROM staged_documents WHERE source = %s AND action = 'delete'", (name,)
        ).fetchall()
    ]
    now = ledger.Fingerprint(ctx.fingerprint.chunker, gen.model)  # the chunks' chunker, the vectors' model
    args = ledger.record_params(now, ctx.run_id)
    indexed = _bulk_load(conn, gen, {**args, "keys": ready}) if ready else None
    deleted = 0
    if indexed is not None:
        ctx.progress("write", len(ready), len(ready))
    else:
        indexed = 0
        for i, key in enumerate(ready, 1):
            with conn.transaction():
                n_in, n_out = _swap(conn, gen, {**args, "keys": [key]})
            indexed, deleted = indexed + n_in, deleted + n_out
            ctx.progress("write", i, len(ready))
    for key in gone:
        with conn.transaction(), conn.cursor() as cur:
            deleted += cur.execute("DELETE FROM chunks WHERE doc_key = %s", (key,)).rowcount
            cur.execute("DELETE FROM documents WHERE key = %s", (key,))
            ledger.forget(cur, key)
            cur.execute("DELETE FROM staged_documents WHERE doc_key = %s", (key,))
    return indexed, deleted


def _swap(conn: psycopg.Connection, gen: Generation, p: dict) -> tuple[int, int]:
    """Replace the chunks of documents p["keys"] by their staged ones, with `gen`'s vectors (caller holds
    the transaction); GenerationChanged when `gen` is no longer live."""
    generations.lock_for_write(conn, gen)
    with conn.cursor() as cur:
        cur.execute(_UPSERT_DOCUMENT, p)
        deleted = cur.execute(_DELETE_OLD, p).rowcount
        indexed = cur.execute(_INSERT_NEW, p).rowcount
        cur.execute(
            _INSERT_VECTORS.format(vectors=f'"{gen.table_name}"', type=f"{gen.vector_type}({gen.dimension})"), p
        )
        cur.execute(ledger.RECORD, p)
        cur.execute("DELETE FROM staged_documents WHERE doc_key = ANY(%(keys)s)", p)
    return indexed, deleted


def _bulk_load(conn: psycopg.Connection, gen: Generation, p: dict) -> int | None:
    """Swap every ready document into an empty `chunks` in one transaction; None if it is not empty."""
    if scalar(conn, "SELECT EXISTS (SELECT 1 FROM chunks)"):
        return None  # cheap unlocked check first: incremental runs never take the table lock
    with conn.transaction():
        generations.lock_for_write(conn, gen)  # before the table lock: the order a reindex's switch takes them
        # Readers wait (a moment) rather than see the table without its indexes; a concurrent
        # cold load of another source waits here, then finds rows and goes row by row.
        conn.execute("LOCK TABLE chunks IN ACCESS EXCLUSIVE MODE")
        if scalar(conn, "SELECT EXISTS (SELECT 1 FROM chunks)"):
            return None
        with conn.cursor(row_factory=dict_row) as cur:
            indexes = cur.execute(BULK_INDEXES).fetchall()
        for index in indexes:
            conn.execute(f'DROP INDEX "{index["indexname"]}"')
        indexed, _ = _swap(conn, gen, p)
        conn.execute("SET LOCAL maintenance_work_mem = '512MB'")  # HNSW builds fast only in memory
        for index in indexes:
            conn.execute(index["indexdef"])  # as the migrations wrote it: same name, parameters, opclass
        conn.execute("ANALYZE chunks, bm25_docs, bm25_blocks")  # first searches plan with real statistics
        conn.execute(f'ANALYZE "{gen.table_name}"')
    return indexed

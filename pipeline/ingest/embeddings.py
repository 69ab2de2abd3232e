"""Stage 3: give every staged chunk a vector, then swap documents in atomically.

Vectors are reused by (model, text hash) from anywhere in the index or the
staging area; only texts never embedded before reach the model, longest first
(uniform batches waste no padding), each block committed as it lands so an
interrupted run resumes at the next block. Then each document is swapped in by
one transaction: upsert its `sources` row, delete chunks no longer present,
insert new ones, write its ledger row, drop its staging rows. Deletions staged
by stage 1 are applied last, after their vectors had their chance to be reused.
"""

from __future__ import annotations

import time

import numpy as np
import psycopg

from pipeline.ingest import IngestContext, IngestStats

BLOCK = 512  # texts per encode call / commit

_MINE = "SELECT source_key FROM staged_documents WHERE partition = %(partition)s"
_REUSE_INDEX = f"""
UPDATE staged_chunks s SET embedding = c.embedding
FROM (SELECT DISTINCT ON (text_hash) text_hash, embedding FROM chunks
      WHERE model = %(model)s AND text_hash IN (
          SELECT text_hash FROM staged_chunks WHERE embedding IS NULL AND source_key IN ({_MINE}))) c
WHERE s.text_hash = c.text_hash AND s.embedding IS NULL AND s.source_key IN ({_MINE})
"""
_REUSE_STAGED = f"""
UPDATE staged_chunks s SET embedding = o.embedding
FROM (SELECT DISTINCT ON (text_hash) text_hash, embedding FROM staged_chunks WHERE embedding IS NOT NULL) o
WHERE s.text_hash = o.text_hash AND s.embedding IS NULL AND s.source_key IN ({_MINE})
"""
_PENDING = """
SELECT DISTINCT ON (s.text_hash) s.text_hash, s.embed_text, s.token_count
FROM staged_chunks s JOIN staged_documents d USING (source_key)
WHERE d.partition = %s AND s.embedding IS NULL
"""
_UPSERT_SOURCE = """
INSERT INTO sources (key, partition, type, uri, url, title, tags, meta, content_hash, version, mtime_ns,
                     last_crawled_at, status)
SELECT source_key, partition, type, uri, url, title, coalesce(tags, '{}'), coalesce(meta, '{}'), content_hash,
       version, mtime_ns, now(), 'indexed'
FROM staged_documents WHERE source_key = %(key)s
ON CONFLICT (key) DO UPDATE SET type = excluded.type, uri = excluded.uri, url = excluded.url,
    title = excluded.title, tags = excluded.tags, meta = excluded.meta, content_hash = excluded.content_hash,
    version = excluded.version, mtime_ns = excluded.mtime_ns, last_crawled_at = now(), status = 'indexed'
"""
_DELETE_OLD = """
DELETE FROM chunks c WHERE c.source_key = %(key)s
AND NOT EXISTS (SELECT 1 FROM staged_chunks s WHERE s.source_key = %(key)s AND s.id = c.id)
"""
_INSERT_NEW = """
INSERT INTO chunks (id, source_key, ordinal, heading_path, section, text, token_count, text_hash, model, embedding)
SELECT id, source_key, ordinal, heading_path, array_to_string(heading_path, ' > '), text, token_count,
       text_hash, %(model)s, embedding
FROM staged_chunks WHERE source_key = %(key)s
ON CONFLICT (id) DO NOTHING
"""
_LEDGER = """
INSERT INTO ledger (source_key, partition, mtime_ns, size, version, content_hash, chunker, model, chunk_count,
                    run_id, indexed_at)
SELECT source_key, partition, mtime_ns, size, version, content_hash, %(chunker)s, %(model)s,
       (SELECT count(*) FROM staged_chunks WHERE source_key = %(key)s), %(run)s, now()
FROM staged_documents WHERE source_key = %(key)s
ON CONFLICT (source_key) DO UPDATE SET mtime_ns = excluded.mtime_ns, size = excluded.size,
    version = excluded.version, content_hash = excluded.content_hash, chunker = excluded.chunker,
    model = excluded.model, chunk_count = excluded.chunk_count, run_id = excluded.run_id, indexed_at = now()
"""


def stage_embeddings(ctx: IngestContext, name: str) -> IngestStats:
    t0 = time.perf_counter()
    model = ctx.embedder.model_id
    with ctx.store(name) as conn:
        reused = conn.execute(_REUSE_INDEX, {"model": model, "partition": name}).rowcount
        reused += conn.execute(_REUSE_STAGED, {"partition": name}).rowcount
        embedded, t_embed = _embed_pending(ctx, conn, name)
        t1 = time.perf_counter()
        indexed, deleted = _swap_in(ctx, conn, name)
        t_write = time.perf_counter() - t1
    stats = IngestStats(chunks_indexed=indexed, chunks_reused=reused, chunks_deleted=deleted, chunks_embedded=embedded)
    return stats.timed("embed", t_embed).timed("write", t_write).timed(
        "embeddings", time.perf_counter() - t0)


def _embed_pending(ctx: IngestContext, conn: psycopg.Connection, name: str) -> tuple[int, float]:
    pending = conn.execute(_PENDING, (name,)).fetchall()
    if not pending:
        return 0, 0.0
    pending.sort(key=lambda r: -r[2])  # longest first: uniform batches, no padding waste
    t_embed = 0.0
    for start in range(0, len(pending), BLOCK):
        block = pending[start : start + BLOCK]
        t = time.perf_counter()
        vectors = ctx.embedder.encode([r[1] for r in block])
        t_embed += time.perf_counter() - t
        _store_vectors(conn, [r[0] for r in block], vectors)
        ctx.progress("embeddings", start + len(block), len(pending))
    return len(pending), t_embed


def _store_vectors(conn: psycopg.Connection, hashes: list[str], vectors: np.ndarray) -> None:
    with conn.transaction(), conn.cursor() as cur:
        cur.execute("CREATE TEMP TABLE IF NOT EXISTS new_vectors (text_hash text, embedding vector) ON COMMIT DELETE ROWS")
        with cur.copy("COPY new_vectors (text_hash, embedding) FROM STDIN WITH (FORMAT BINARY)") as copy:
            copy.set_types(["text", "vector"])
            for h, v in zip(hashes, vectors):
                copy.write_row((h, v))
        cur.execute("UPDATE staged_chunks s SET embedding = n.embedding FROM new_vectors n "
                    "WHERE s.text_hash = n.text_hash AND s.embedding IS NULL")


def _swap_in(ctx: IngestContext, conn: psycopg.Connection, name: str) -> tuple[int, int]:
    """Commit every fully embedded staged document, then staged deletions."""
    ready = conn.execute(
        "SELECT d.source_key FROM staged_documents d WHERE d.partition = %s AND d.action = 'upsert' AND d.chunked "
        "AND NOT EXISTS (SELECT 1 FROM staged_chunks s WHERE s.source_key = d.source_key AND s.embedding IS NULL) "
        "ORDER BY d.source_key", (name,)).fetchall()
    gone = conn.execute("SELECT source_key FROM staged_documents WHERE partition = %s AND action = 'delete'",
                        (name,)).fetchall()
    indexed = deleted = 0
    args = {"model": ctx.embedder.model_id, "chunker": ctx.chunker_version, "run": ctx.run_id}
    for i, (key,) in enumerate(ready, 1):
        with conn.transaction(), conn.cursor() as cur:
            p = {**args, "key": key}
            cur.execute(_UPSERT_SOURCE, p)
            deleted += cur.execute(_DELETE_OLD, p).rowcount
            indexed += cur.execute(_INSERT_NEW, p).rowcount
            cur.execute(_LEDGER, p)
            cur.execute("DELETE FROM staged_documents WHERE source_key = %s", (key,))
        ctx.progress("write", i, len(ready))
    for (key,) in gone:
        with conn.transaction(), conn.cursor() as cur:
            deleted += cur.execute("DELETE FROM chunks WHERE source_key = %s", (key,)).rowcount
            cur.execute("DELETE FROM sources WHERE key = %s", (key,))
            cur.execute("DELETE FROM ledger WHERE source_key = %s", (key,))
            cur.execute("DELETE FROM staged_documents WHERE source_key = %s", (key,))
    return indexed, deleted

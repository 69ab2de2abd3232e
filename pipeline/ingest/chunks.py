"""Stage 2: parse and chunk every staged document not yet chunked.

Each document's chunks are written with its `chunked` flag in one transaction,
so an interrupted run re-chunks only the documents it had not finished.
Chunk id = sha256(source key, ordinal, text hash): the same content at the
same place always gets the same id, and two documents never share one.
"""

from __future__ import annotations

import hashlib
import time

from pipeline.errors import DocforgeError
from pipeline.ingest import IngestContext, IngestStats, record_failures
from pipeline.parse import parse_document
from pipeline.records import DocRef, Document, Failure


def chunk_id(source_key: str, ordinal: int, text_hash: str) -> str:
    return hashlib.sha256(f"{source_key}\x00{ordinal}\x00{text_hash}".encode()).hexdigest()[:32]


def text_hash(embed_text: str) -> str:
    return hashlib.sha256(embed_text.encode("utf-8")).hexdigest()


def stage_chunks(ctx: IngestContext, name: str) -> IngestStats:
    t0 = time.perf_counter()
    failures: list[Failure] = []
    with ctx.store(name) as conn:
        rows = conn.execute(
            "SELECT source_key, kind, uri, url, title, content, content_hash FROM staged_documents "
            "WHERE partition = %s AND action = 'upsert' AND NOT chunked ORDER BY source_key", (name,)).fetchall()
        chunker = ctx.chunker if rows else None
        for i, (key, kind, uri, url, title, content, chash) in enumerate(rows, 1):
            doc = Document(DocRef(key, uri), kind, title, url, content, chash)
            try:
                parsed = parse_document(doc)
                chunks = chunker.chunk(parsed.title, parsed.sections)
            except (DocforgeError, ValueError) as e:  # one bad document never stops the rest
                failures.append(Failure(key, "parse", f"{type(e).__name__}: {e}"))
                conn.execute("DELETE FROM staged_documents WHERE source_key = %s", (key,))
                continue
            with conn.transaction(), conn.cursor() as cur:
                cur.execute("DELETE FROM staged_chunks WHERE source_key = %s", (key,))
                with cur.copy("COPY staged_chunks (source_key, ordinal, id, heading_path, text, embed_text, "
                              "token_count, text_hash) FROM STDIN") as copy:
                    for c in chunks:
                        h = text_hash(c.embed_text)
                        copy.write_row((key, c.ordinal, chunk_id(key, c.ordinal, h), list(c.heading_path),
                                        c.text, c.embed_text, c.token_count, h))
                cur.execute("UPDATE staged_documents SET chunked = true, title = %s WHERE source_key = %s",
                            (parsed.title or title, key))
            ctx.progress("chunks", i, len(rows))
        record_failures(conn, name, failures, ctx.run_id)
    stats = IngestStats(files_failed=len(failures), failures=tuple(failures))
    return stats.timed("chunks", time.perf_counter() - t0)

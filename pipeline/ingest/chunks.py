"""Stage 2: parse and chunk every staged document not yet chunked.

The documents are parsed first, all of them, so that the blocks their pages repeat (a site's
furniture: pipeline.parse.furniture) are known and left out before any is chunked.
Each document's chunks are written with its `chunked` flag in one transaction,
so an interrupted run re-chunks only the documents it had not finished.
Chunk id = sha256(document key, ordinal, text hash): the same content at the
same place always gets the same id, and two documents never share one.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass

import psycopg
from psycopg.rows import class_row
from psycopg.types.json import Jsonb

from pipeline.ingest.context import IngestContext, IngestStats, record_failures
from pipeline.ingest.faults import failure, store_lost
from pipeline.parse import Parsed, parse_document
from pipeline.parse.furniture import MIN_PAGES, repeated, strip
from pipeline.records import Chunk, DocRef, Document, Failure, Section, pack_blocks


def chunk_id(doc_key: str, ordinal: int, text_hash: str) -> str:
    return hashlib.sha256(f"{doc_key}\x00{ordinal}\x00{text_hash}".encode()).hexdigest()[:32]


def text_hash(embed_text: str) -> str:
    return hashlib.sha256(embed_text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class _Staged:
    """A staged document waiting to be chunked."""

    doc_key: str
    kind: str
    uri: str
    url: str
    title: str
    content: str
    content_hash: str

    def document(self) -> Document:
        return Document(
            DocRef(self.doc_key, self.uri), self.kind, self.title, self.url, self.content, self.content_hash
        )


def _parse(doc: Document) -> Parsed | Exception:
    try:
        return parse_document(doc)
    except Exception as e:  # recorded against the document when its turn comes
        return e


def _furniture(conn: psycopg.Connection, source: str, pages: list[list[Section]]) -> set[str]:
    """The source's furniture (pipeline.parse.furniture): found on the pages parsed now when they are at least
    half as many as the last finding counted (and kept for later runs), else the last finding."""
    row = conn.execute("SELECT keys, pages FROM furniture WHERE source = %s", (source,)).fetchone()
    if row is not None and len(pages) < row[1] / 2:
        return set(row[0])
    found = repeated(pages)
    if len(pages) >= MIN_PAGES:
        conn.execute(
            "INSERT INTO furniture (source, keys, pages) VALUES (%s, %s, %s) ON CONFLICT (source) DO UPDATE "
            "SET keys = excluded.keys, pages = excluded.pages, at = now()",
            (source, Jsonb(sorted(found)), len(pages)),
        )
    elif row is not None:
        return set(row[0])
    return found


def _write(conn: psycopg.Connection, key: str, chunks: list[Chunk], title: str, links: float) -> None:
    """A document's chunks staged with its `chunked` flag, in one transaction."""
    with conn.transaction(), conn.cursor() as cur:
        cur.execute("DELETE FROM staged_chunks WHERE doc_key = %s", (key,))
        with cur.copy(
            "COPY staged_chunks (doc_key, ordinal, id, heading_path, text, embed_text, "
            "token_count, text_hash, page, blocks, anchor) FROM STDIN"
        ) as copy:
            for c in chunks:
                h = text_hash(c.embed_text)
                copy.write_row(
                    (
                        key,
                        c.ordinal,
                        chunk_id(key, c.ordinal, h),
                        list(c.heading_path),
                        c.text,
                        c.embed_text,
                        c.token_count,
                        h,
                        c.page,
                        Jsonb(pack_blocks(c.blocks)),
                        c.anchor,
                    )
                )
        cur.execute(  # the page's link share rides in its meta (the legs read it to rank index pages)
            "UPDATE staged_documents SET chunked = true, title = %(title)s, meta = CASE WHEN %(links)s > 0 "
            "THEN coalesce(meta, '{}') || jsonb_build_object('link_share', %(links)s) "
            "ELSE meta - 'link_share' END WHERE doc_key = %(key)s",
            {"title": title, "links": links, "key": key},
        )


def stage_chunks(ctx: IngestContext, name: str) -> IngestStats:
    t0 = time.perf_counter()
    failures: list[Failure] = []
    with ctx.store(name) as conn:
        with conn.cursor(row_factory=class_row(_Staged)) as cur:
            rows = cur.execute(
                "SELECT doc_key, kind, uri, url, title, content, content_hash FROM staged_documents "
                "WHERE source = %s AND action = 'upsert' AND NOT chunked ORDER BY doc_key",
                (name,),
            ).fetchall()
        parsed = {row.doc_key: _parse(row.document()) for row in rows}  # all first: furniture is what they repeat
        furniture = _furniture(conn, name, [p.sections for p in parsed.values() if isinstance(p, Parsed)])
        for i, row in enumerate(rows, 1):
            chunker = ctx.chunker  # the tokenizer loads once, on the first document, outside its fault handling
            key = row.doc_key
            try:  # any fault of one document (parser, chunker, its rows) is recorded against it alone
                page = parsed[key]
                if isinstance(page, Exception):
                    raise page
                chunks = chunker.chunk(page.title, strip(page.sections, furniture), page.pack)
                _write(conn, key, chunks, page.title or row.title, page.link_share)
            except Exception as e:  # per document: a lost store stops the run, any other fault is its own
                if store_lost(e):
                    raise
                failures.append(failure(key, "parse", e))
                conn.execute("DELETE FROM staged_documents WHERE doc_key = %s", (key,))
                continue
            ctx.progress("chunks", i, len(rows))
        record_failures(conn, name, failures, ctx.run_id)
    stats = IngestStats(files_failed=len(failures), failures=tuple(failures))
    return stats.timed("chunks", time.perf_counter() - t0)

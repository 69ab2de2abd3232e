"""Stage 1: list a source, let the ledger decide skip / fetch / delete, stage what changed.

The decisions are `pipeline.ingest.ledger`'s (pure); this module lists, fetches
and writes them: changed documents into `staged_documents` as 'upsert' (chunked
in stage 2), vanished ones as 'delete' (applied in stage 3 after their vectors
had the chance to be reused).
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace

import psycopg

from pipeline import access
from pipeline.ingest import ledger
from pipeline.ingest.context import IngestContext, IngestStats, record_failures
from pipeline.ingest.faults import failure, store_lost, unstorable
from pipeline.ingest.ledger import FetchOutcome, LedgerRow, ListingPlan
from pipeline.records import DocRef, Document, Failure, Part
from pipeline.sources import failed_by, open_source, skipped_by

_UPSERT = """
INSERT INTO staged_documents (doc_key, source, action, type, kind, uri, url, title, tags, meta,
    content, content_hash, version, mtime_ns, size, access, access_hash, chunked, run_id)
VALUES (%(doc_key)s, %(source)s, 'upsert', %(type)s, %(kind)s, %(uri)s, %(url)s, %(title)s, %(tags)s, %(meta)s,
    %(content)s, %(content_hash)s, %(version)s, %(mtime_ns)s, %(size)s, %(access)s::jsonb, %(access_hash)s,
    false, %(run_id)s)
ON CONFLICT (doc_key) DO UPDATE SET action = 'upsert', type = excluded.type, kind = excluded.kind,
    uri = excluded.uri, url = excluded.url, title = excluded.title, tags = excluded.tags, meta = excluded.meta,
    content = excluded.content, content_hash = excluded.content_hash, version = excluded.version,
    mtime_ns = excluded.mtime_ns, size = excluded.size, access = excluded.access,
    access_hash = excluded.access_hash, chunked = false, run_id = excluded.run_id, staged_at = now()
"""
# A staged upsert an interrupted run left whose access has changed since: staged again (its new access).
_STAGED = "SELECT doc_key, content_hash, access_hash FROM staged_documents WHERE source = %s AND action = 'upsert'"
_DELETE = """
INSERT INTO staged_documents (doc_key, source, action, run_id) VALUES (%s, %s, 'delete', %s)
ON CONFLICT (doc_key) DO UPDATE SET action = 'delete', content = NULL, chunked = false
"""


def stage_documents(ctx: IngestContext, name: str, pages: Sequence[str] | None = None) -> IngestStats:
    """List the source (or only `pages`, where the source can list a part of itself: a Confluence
    webhook's page), decide each document against the ledger, stage what changed."""
    t0 = time.perf_counter()
    settings = ctx.settings
    source = open_source(settings, settings.source(name))
    try:
        part: Part | None = source.list_part(pages) if pages and hasattr(source, "list_part") else None
        refs = part.refs if part else source.list_refs()
        with ctx.store(name) as conn:
            indexed = ledger.read(conn, name)
            if part:  # the rest of the source is neither listed nor judged: none of it is deleted
                indexed = {k: row for k, row in indexed.items() if part.owns(k)}
            readers = access.Readers(settings.source(name).access)
            plan = ledger.plan(refs, indexed, ctx.fingerprint, readers.hash)
            ctx.progress("documents", len(plan.skip), len(refs))
            stats = _apply(ctx, conn, name, source, refs, plan, indexed, readers, part)
    finally:
        if close := getattr(source, "close", None):
            close()  # e.g. the Confluence HTTP session
    skipped = skipped_by(source)
    stats = replace(
        stats,
        languages=dict(Counter(str(r.meta.get("format") or source.type) for r in refs)),
        skipped_files=tuple(skipped),
        files_skipped=getattr(source, "files_skipped", len(skipped)),
    )
    return stats.timed("documents", time.perf_counter() - t0)


def _apply(
    ctx: IngestContext,
    conn: psycopg.Connection,
    name: str,
    source,
    refs: list[DocRef],
    plan: ListingPlan,
    indexed: dict[str, LedgerRow],
    readers: access.Readers,
    part: Part | None = None,
) -> IngestStats:
    """Apply access changes, fetch what the plan says, decide each document, and write the outcome."""
    staged: dict[str, tuple[str, str | None]] = {
        k: (h, a)  # doc_key → (content hash, access hash), of upserts an interrupted run staged
        for k, h, a in conn.execute(_STAGED, (name,)).fetchall()
        if part is None or part.owns(k)
    }
    decisions: Counter[FetchOutcome] = Counter()
    settled, failures = set(plan.skip), []
    refs_by_key = {r.key: r for r in refs}
    with conn.cursor() as cur:
        for key in plan.reaccess:  # first, and whatever becomes of the content: a revocation holds
            ledger.reaccess(cur, key, **readers.columns(refs_by_key[key].access))
        for i, item in enumerate(source.fetch(list(plan.fetch)), 1):
            if isinstance(item, Failure):
                failures.append(item)
                continue
            if problem := unstorable(item):
                failures.append(Failure(item.ref.key, "decode", problem))
                continue
            try:  # one document's fault is its own: recorded, and the rest go on
                decision = ledger.decide(item.content_hash, indexed.get(item.ref.key), ctx.fingerprint)
                if decision is FetchOutcome.REFRESH:
                    ledger.refresh(cur, item.ref)
                    settled.add(item.ref.key)
                elif staged.get(item.ref.key) != (item.content_hash, readers.hash(item.ref.access)):  # else:
                    row = _staging_row(name, source.type, source.tags, item, ctx.run_id)  # staged already
                    cur.execute(_UPSERT, row | readers.columns(item.ref.access))
            except Exception as e:  # per document: a lost store stops the run, any other fault is its own
                if store_lost(e):
                    raise
                failures.append(failure(item.ref.key, "fetch", e))
                continue
            decisions[decision] += 1
            ctx.progress("documents", len(plan.skip) + i, len(refs))
        cur.executemany(_DELETE, [(k, name, ctx.run_id) for k in plan.delete])
        unwanted = ledger.unwanted_staging(
            staged, settled=settled, listed={r.key for r in refs}, indexed=indexed, failed={f.key for f in failures}
        )
        cur.executemany("DELETE FROM staged_documents WHERE doc_key = %s", [(k,) for k in unwanted])
        failed = {f.key for f in failures}  # listed, yet failed in part (a page's permissions): recorded, not dropped
        failures += [f for f in failed_by(source) if f.key not in failed]
        if part is None:
            cur.execute("DELETE FROM failures WHERE source = %s", (name,))
        else:
            old = [k for (k,) in cur.execute("SELECT doc_key FROM failures WHERE source = %s", (name,)).fetchall()]
            owned = [k for k in old if part.owns(k)]
            cur.execute("DELETE FROM failures WHERE source = %s AND doc_key = ANY(%s)", (name, owned))
        record_failures(conn, name, failures, ctx.run_id)
    return IngestStats(
        files_added=decisions[FetchOutcome.ADD],
        files_updated=decisions[FetchOutcome.UPDATE],
        files_unchanged=len(plan.skip) + decisions[FetchOutcome.REFRESH],
        files_deleted=len(plan.delete),
        files_access_updated=len(plan.reaccess),
        files_failed=len(failures),
        failures=tuple(failures),
    )


def _staging_row(name: str, type_: str, tags: list[str], doc: Document, run_id: str) -> dict:
    ref = doc.ref
    meta = {k: v for k, v in ref.meta.items() if k not in ("url",)}
    return {
        "doc_key": ref.key,
        "source": name,
        "type": type_,
        "kind": doc.kind,
        "uri": ref.path,
        "url": doc.url,
        "title": doc.title,
        "tags": list(tags) + list(meta.get("labels", [])),
        "meta": json.dumps(meta),
        "content": doc.content,
        "content_hash": doc.content_hash,
        "version": ref.version,
        "mtime_ns": ref.mtime_ns,
        "size": ref.size,
        "run_id": run_id,
    }

"""Stage 1: list a source, decide skip / fetch / delete against the ledger, stage changes.

Skip rules, cheapest first (the ledger row must also carry the current chunker
fingerprint and model, or the document is re-chunked):
  1. same version (git blob id, Confluence version) or same mtime+size → not read;
  2. fetched, same content hash → ledger stat columns refreshed, nothing else;
  3. otherwise staged for chunking ('upsert'); a ledger key no longer listed is
     staged for deletion ('delete'), applied in stage 3 after vectors are reused.
"""

from __future__ import annotations

import json
import time

from pipeline.ingest import IngestContext, IngestStats, record_failures
from pipeline.records import DocRef, Document, Failure
from pipeline.sources import open_source

_UPSERT = """
INSERT INTO staged_documents (source_key, partition, action, type, kind, uri, url, title, tags, meta,
    content, content_hash, version, mtime_ns, size, chunked, run_id)
VALUES (%s, %s, 'upsert', %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, false, %s)
ON CONFLICT (source_key) DO UPDATE SET action = 'upsert', type = excluded.type, kind = excluded.kind,
    uri = excluded.uri, url = excluded.url, title = excluded.title, tags = excluded.tags, meta = excluded.meta,
    content = excluded.content, content_hash = excluded.content_hash, version = excluded.version,
    mtime_ns = excluded.mtime_ns, size = excluded.size, chunked = false, run_id = excluded.run_id,
    staged_at = now()
"""


def _fresh(row: tuple | None, ref: DocRef) -> bool:
    """True when the ledger row proves the document unchanged without reading it."""
    if row is None:
        return False
    mtime_ns, size, version = row[0], row[1], row[2]
    if ref.version is not None:
        return version == ref.version
    return ref.mtime_ns is not None and (mtime_ns, size) == (ref.mtime_ns, ref.size)


def stage_documents(ctx: IngestContext, name: str) -> IngestStats:
    t0 = time.perf_counter()
    settings = ctx.settings
    source = open_source(settings, settings.source(name))
    try:
        return _stage(ctx, name, source, t0)
    finally:
        if close := getattr(source, "close", None):
            close()  # e.g. the Confluence HTTP session


def _stage(ctx: IngestContext, name: str, source, t0: float) -> IngestStats:
    refs = source.list_refs()
    added = updated = unchanged = deleted = 0
    failures: list[Failure] = []
    with ctx.store(name) as conn:
        ledger = {r[0]: r[1:] for r in conn.execute(
            "SELECT source_key, mtime_ns, size, version, content_hash, chunker, model FROM ledger "
            "WHERE partition = %s", (name,))}
        staged = dict(conn.execute(
            "SELECT source_key, content_hash FROM staged_documents WHERE partition = %s AND action = 'upsert'",
            (name,)).fetchall())
        current = (ctx.chunker_version, ctx.embedder.model_id)

        def valid(key: str) -> bool:
            return key in ledger and tuple(ledger[key][4:6]) == current

        to_fetch, done = [], []
        for ref in refs:
            if valid(ref.key) and _fresh(ledger[ref.key], ref):
                unchanged += 1
                done.append(ref.key)
            else:
                to_fetch.append(ref)
        ctx.progress("documents", len(done), len(refs))
        with conn.cursor() as cur:
            for i, item in enumerate(source.fetch(to_fetch), 1):
                if isinstance(item, Failure):
                    failures.append(item)
                    continue
                key = item.ref.key
                if valid(key) and ledger[key][3] == item.content_hash:
                    unchanged += 1
                    done.append(key)
                    cur.execute("UPDATE ledger SET mtime_ns = %s, size = %s, version = %s WHERE source_key = %s",
                                (item.ref.mtime_ns, item.ref.size, item.ref.version, key))
                    continue
                if key in ledger:
                    updated += 1
                else:
                    added += 1
                if staged.get(key) != item.content_hash:  # else: already staged by an interrupted run
                    cur.execute(_UPSERT, _row(name, source.type, source.tags, item, ctx.run_id))
                ctx.progress("documents", len(done) + i, len(refs))
            listed = {r.key for r in refs}
            failed = {f.key for f in failures}
            gone = [k for k in ledger if k not in listed]
            deleted = len(gone)
            cur.executemany("INSERT INTO staged_documents (source_key, partition, action, run_id) "
                            "VALUES (%s, %s, 'delete', %s) ON CONFLICT (source_key) DO UPDATE SET "
                            "action = 'delete', content = NULL, chunked = false",
                            [(k, name, ctx.run_id) for k in gone])
            # Staged work that is no longer wanted: reverted edits, vanished files.
            stale = [k for k in staged if k in done or (k not in listed and k not in ledger) or k in failed]
            cur.executemany("DELETE FROM staged_documents WHERE source_key = %s", [(k,) for k in stale])
            cur.execute("DELETE FROM failures WHERE partition = %s", (name,))
            record_failures(conn, name, failures, ctx.run_id)
    stats = IngestStats(files_added=added, files_updated=updated, files_unchanged=unchanged,
                        files_deleted=deleted, files_failed=len(failures), failures=tuple(failures))
    return stats.timed("documents", time.perf_counter() - t0)


def _row(name: str, type_: str, tags: list[str], doc: Document, run_id: str) -> tuple:
    ref = doc.ref
    meta = {k: v for k, v in ref.meta.items() if k not in ("url",)}
    return (ref.key, name, type_, doc.kind, ref.path, doc.url, doc.title, list(tags) + list(meta.get("labels", [])),
            json.dumps(meta), doc.content, doc.content_hash, ref.version, ref.mtime_ns, ref.size, run_id)

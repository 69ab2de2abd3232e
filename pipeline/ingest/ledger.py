"""The incremental ledger: what each document's index rows were built from, and
the rules that decide what a run does with each document.

A ledger row records, per document, the listing's cheap evidence (version,
mtime + size), the content hash, the chunker fingerprint and the model. It is
written in the same transaction as the document's chunks (stage 3), never
before, so it never claims more than the index holds.

The rules, cheapest first. A row counts only if it carries the current chunker
fingerprint and model; otherwise the document is read and re-chunked.
  1. SKIP    same version (git blob id, Confluence version) or, when the source
             offers none, same mtime + size: not even read;
  2. REFRESH read, same content hash: only the row's listing columns are updated;
  3. ADD / UPDATE  read, new or changed: staged for chunking;
  4. DELETE  a ledger row whose key the listing no longer has: staged for
             deletion (applied in stage 3, after its vectors could be reused).
Apart from these, who may read a document (pipeline.access) is compared by its fingerprint,
`access_hash`: an indexed document whose access changed (a source's `access:` edited, a
permission changed upstream) has documents.access and the row's hash updated in place
(`reaccess`), before anything else and whatever becomes of its content: an unchanged one is not
re-read, re-cut nor re-embedded, and a revocation holds even if its new content fails.

`plan` (the listing) and `decide` (each fetched document) are pure, tested
without Postgres in tests/test_ledger.py; the SQL below reads and writes rows.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from enum import Enum

import psycopg
from psycopg.rows import class_row

from pipeline.access import Clauses
from pipeline.records import DocRef


@dataclass(frozen=True)
class LedgerRow:
    doc_key: str
    mtime_ns: int | None
    size: int | None
    version: str | None
    content_hash: str
    chunker: str  # chunker fingerprint (pipeline.chunk.fingerprint)
    model: str
    access_hash: str | None = None  # pipeline.access.fingerprint; None: everyone may read it


@dataclass(frozen=True)
class Fingerprint:
    """What the index is built with now; a ledger row from another counts for nothing."""

    chunker: str
    model: str


class FetchOutcome(Enum):
    """What becomes of a fetched document."""

    REFRESH = "refresh"
    ADD = "add"
    UPDATE = "update"


@dataclass(frozen=True)
class ListingPlan:
    """What the listing alone decides."""

    skip: tuple[str, ...]  # keys proven unchanged: not read
    fetch: tuple[DocRef, ...]  # to read, then `decide`
    delete: tuple[str, ...]  # indexed, no longer listed
    reaccess: tuple[str, ...] = ()  # indexed, and who may read them changed: `reaccess` them first


def _current(row: LedgerRow, now: Fingerprint) -> bool:
    return (row.chunker, row.model) == (now.chunker, now.model)


def _unchanged(row: LedgerRow, ref: DocRef) -> bool:
    """True when the listing proves the document unchanged since `row` was written."""
    if ref.version is not None:
        return row.version == ref.version
    return ref.mtime_ns is not None and (row.mtime_ns, row.size) == (ref.mtime_ns, ref.size)


def plan(
    refs: Iterable[DocRef],
    ledger: Mapping[str, LedgerRow],
    now: Fingerprint,
    access_hash: Callable[[Clauses | None], str | None] = lambda found: None,
) -> ListingPlan:
    """Rules 1 and 4: which listed documents to skip or read, which indexed ones to delete; and which
    indexed ones' access changed (`access_hash`: a document's fingerprint now, from what its listing
    found, `DocRef.access`)."""
    skip, fetch, listed, reaccess = [], [], set(), []
    for ref in refs:
        listed.add(ref.key)
        row = ledger.get(ref.key)
        if row is not None and row.access_hash != access_hash(ref.access):
            reaccess.append(ref.key)
        if row is not None and _current(row, now) and _unchanged(row, ref):
            skip.append(ref.key)
        else:
            fetch.append(ref)
    return ListingPlan(tuple(skip), tuple(fetch), tuple(k for k in ledger if k not in listed), tuple(reaccess))


def decide(content_hash: str, row: LedgerRow | None, now: Fingerprint) -> FetchOutcome:
    """Rules 2 and 3, for one fetched document and its ledger row (None: never indexed)."""
    if row is not None and _current(row, now) and row.content_hash == content_hash:
        return FetchOutcome.REFRESH
    return FetchOutcome.ADD if row is None else FetchOutcome.UPDATE


def unwanted_staging(
    staged: Iterable[str],
    *,
    settled: Collection[str],
    listed: Collection[str],
    indexed: Collection[str],
    failed: Collection[str],
) -> list[str]:
    """Staged work an earlier, interrupted run left that this run no longer wants: documents now
    unchanged (`settled`: skipped or refreshed; a reverted edit), gone from the listing and never
    indexed (a vanished new file), or failing now."""
    return [k for k in staged if k in settled or (k not in listed and k not in indexed) or k in failed]


# --- the rows -----------------------------------------------------------------------------------


def read(conn: psycopg.Connection, source: str) -> dict[str, LedgerRow]:
    """Every ledger row of `source`, by document key."""
    with conn.cursor(row_factory=class_row(LedgerRow)) as cur:
        cur.execute(
            "SELECT doc_key, mtime_ns, size, version, content_hash, chunker, model, access_hash "
            "FROM ledger WHERE source = %s",
            (source,),
        )
        return {r.doc_key: r for r in cur}


def refresh(cur: psycopg.Cursor, ref: DocRef) -> None:
    """Rule 2: new listing evidence (mtime, size, version) for an unchanged document."""
    cur.execute(
        "UPDATE ledger SET mtime_ns = %s, size = %s, version = %s WHERE doc_key = %s",
        (ref.mtime_ns, ref.size, ref.version, ref.key),
    )


def reaccess(cur: psycopg.Cursor, key: str, access: str | None, access_hash: str | None) -> None:
    """Who may read an indexed document changed: its documents.access (canonical JSON) and the row's
    fingerprint, in place."""
    cur.execute("UPDATE documents SET access = %s::jsonb WHERE key = %s", (access, key))
    cur.execute("UPDATE ledger SET access_hash = %s WHERE doc_key = %s", (access_hash, key))


# Written with the document's chunks, from its staging row, in the caller's transaction:
# params keys (documents), chunker and model (the Fingerprint), run.
RECORD = """
INSERT INTO ledger (doc_key, source, mtime_ns, size, version, content_hash, chunker, model, chunk_count,
                    access_hash, run_id, indexed_at)
SELECT d.doc_key, d.source, d.mtime_ns, d.size, d.version, d.content_hash, %(chunker)s, %(model)s,
       (SELECT count(*) FROM staged_chunks s WHERE s.doc_key = d.doc_key), d.access_hash, %(run)s, now()
FROM staged_documents d WHERE d.doc_key = ANY(%(keys)s)
ON CONFLICT (doc_key) DO UPDATE SET mtime_ns = excluded.mtime_ns, size = excluded.size,
    version = excluded.version, content_hash = excluded.content_hash, chunker = excluded.chunker,
    model = excluded.model, chunk_count = excluded.chunk_count, access_hash = excluded.access_hash,
    run_id = excluded.run_id, indexed_at = now()
"""


def record_params(now: Fingerprint, run_id: str) -> dict:
    return {"chunker": now.chunker, "model": now.model, "run": run_id}


def forget(cur: psycopg.Cursor, doc_key: str) -> None:
    """Drop a deleted document's row (with its chunks, in the caller's transaction)."""
    cur.execute("DELETE FROM ledger WHERE doc_key = %s", (doc_key,))

"""Webhook deliveries: recorded by the API once verified, turned into runs by the push sensor.

A delivery is one row per source it maps to (migration 0010). Recording is
idempotent by delivery id, and by the body's hash: a replay (the same id, or the
same signed body under another id, which a signature over the body alone cannot
tell apart) records nothing. The sensor `claim`s pending rows, one batch per
source, and marks them consumed with the run key it requests.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import psycopg

from pipeline.store.db import scalar

KEEP_DAYS = 30  # consumed rows (and so replay protection) are kept this long


@dataclass(frozen=True)
class Target:
    """What one delivery asks of one source."""

    source: str
    ref: str | None = None  # git: the ref pushed
    commit: str | None = None  # git: the commit it points at now
    pages: tuple[str, ...] | None = None  # Confluence: page ids to refresh; None: the whole source


@dataclass(frozen=True)
class Delivery:
    delivery_id: str  # '<host>:<id>' or 'sha256:<body hash>'
    host: str
    body_sha256: str
    targets: tuple[Target, ...]


@dataclass(frozen=True)
class Batch:
    """A source's pending deliveries, as one run: the latest commit, the pages (None: whole source)."""

    source: str
    seqs: tuple[int, ...]
    delivery_ids: tuple[str, ...]
    commit: str | None
    pages: tuple[str, ...] | None


def has_table(conn: psycopg.Connection) -> bool:
    return bool(scalar(conn, "SELECT to_regclass('deliveries') IS NOT NULL"))


def record(conn: psycopg.Connection, delivery: Delivery) -> str | None:
    """Record a verified delivery; when it is a replay, the id it was first received under (the same id,
    or the one an identical body came with) and nothing is written."""
    with conn.transaction():
        first = conn.execute(
            "SELECT delivery_id FROM deliveries WHERE delivery_id = %s OR body_sha256 = %s "
            "ORDER BY delivery_id = %s DESC, seq LIMIT 1",
            (delivery.delivery_id, delivery.body_sha256, delivery.delivery_id),
        ).fetchone()
        if first is not None:
            return first[0]
        written = 0
        for t in delivery.targets:
            written += conn.execute(
                "INSERT INTO deliveries (delivery_id, source, host, body_sha256, ref, commit, pages) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
                (
                    delivery.delivery_id,
                    t.source,
                    delivery.host,
                    delivery.body_sha256,
                    t.ref,
                    t.commit,
                    None if t.pages is None else list(t.pages),
                ),
            ).rowcount
        return None if written else delivery.delivery_id  # 0 rows: a concurrent copy of it committed first


def claim(conn: psycopg.Connection, run_key: Callable[[Batch], str]) -> list[Batch]:
    """Every pending delivery, one batch per source in arrival order, marked consumed under `run_key(batch)`.

    Rows another sensor tick holds are skipped (SKIP LOCKED), never claimed twice.
    """
    with conn.transaction():
        rows = conn.execute(
            "SELECT seq, source, delivery_id, commit, pages FROM deliveries WHERE consumed_at IS NULL "
            "ORDER BY seq FOR UPDATE SKIP LOCKED"
        ).fetchall()
        by_source: dict[str, list[tuple]] = {}
        for row in rows:
            by_source.setdefault(row[1], []).append(row)
        batches = [_batch(source, group) for source, group in by_source.items()]
        for b in batches:
            conn.execute(
                "UPDATE deliveries SET consumed_at = now(), run_key = %s WHERE seq = ANY(%s)",
                (run_key(b), list(b.seqs)),
            )
        conn.execute(f"DELETE FROM deliveries WHERE consumed_at < now() - interval '{KEEP_DAYS} days'")
    return batches


def _batch(source: str, rows: Sequence[tuple]) -> Batch:
    commits = [r[3] for r in rows if r[3]]
    whole = any(r[4] is None for r in rows)
    pages = None if whole else tuple(dict.fromkeys(p for r in rows for p in r[4]))
    return Batch(
        source,
        tuple(r[0] for r in rows),
        tuple(r[2] for r in rows),
        commits[-1] if commits else None,
        pages,
    )

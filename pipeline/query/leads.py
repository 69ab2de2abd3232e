"""Each document's opening, as a reader may read it: what the answer layer reads to tell which document a
question is about (pipeline.answers.extractive)."""

from __future__ import annotations

import psycopg
from psycopg import sql

from pipeline.access import FULL_ACCESS, Principal, predicate
from pipeline.query.statements import text


def document_leads(
    conn: psycopg.Connection, keys: list[str], reader: Principal = FULL_ACCESS
) -> dict[str, tuple[str, str]]:
    """(title, opening text) of each document `reader` may read: its first two chunks, where a document
    says what it is about (a proposal's summary, a page's first paragraph)."""
    if not keys:
        return {}
    may_read, binds = predicate(reader)
    stmt = sql.SQL(text("leads")).format(access=may_read)
    rows = conn.execute(stmt, {"keys": keys, **binds}).fetchall()
    return {key: (title or "", body or "") for key, title, body in rows}

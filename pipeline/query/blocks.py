"""The typed blocks of chunks, read by id: for the answer layer, which reads blocks, never re-parses text."""

from __future__ import annotations

from collections.abc import Collection

import psycopg
from psycopg import sql

from pipeline.access import Principal, predicate
from pipeline.query.statements import text
from pipeline.records import Block, unpack_blocks


def chunk_blocks(
    conn: psycopg.Connection, ids: Collection[str], reader: Principal | None = None
) -> dict[str, tuple[Block, ...]]:
    """Each chunk's blocks (offsets into its text) by chunk id, of the chunks `reader` may read (None:
    full access); a chunk absent, unreadable or stored before blocks were kept has none listed, or ()."""
    if not ids:
        return {}
    access, binds = predicate(reader)
    query = sql.SQL(text("blocks")).format(access=access)
    rows = conn.execute(query, {"ids": list(ids), **binds}).fetchall()
    return {chunk_id: unpack_blocks(packed) for chunk_id, packed in rows}

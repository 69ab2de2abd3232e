"""The `sentence_vectors` table (migration 0015): document-side vectors of lines, by (model, text hash).

The answer layer's line vectors (pipeline.answers.vectors) keep them in memory and read and write them
here; the vectors travel as little-endian float32 bytes.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import psycopg


def read(conn: psycopg.Connection, model: str, hashes: Sequence[bytes]) -> dict[bytes, bytes]:
    """The stored vector bytes of each of `hashes` under `model` that the store holds."""
    rows = conn.execute(
        "SELECT text_hash, vector FROM sentence_vectors WHERE model = %s AND text_hash = ANY(%s)",
        (model, list(hashes)),
    ).fetchall()
    return {bytes(h): bytes(v) for h, v in rows}


def write(conn: psycopg.Connection, model: str, vectors: Iterable[tuple[bytes, bytes]]) -> None:
    """Store (text hash, vector bytes) pairs under `model`; a pair already there is kept as it is."""
    conn.cursor().executemany(
        "INSERT INTO sentence_vectors (model, text_hash, vector) VALUES (%s, %s, %s) ON CONFLICT DO NOTHING",
        [(model, h, v) for h, v in vectors],
    )

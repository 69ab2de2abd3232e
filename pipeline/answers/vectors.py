"""Line vectors computed once: the extractive answerer's embeddings, cached by (model, text hash).

A question's candidate lines come from the chunks it retrieves, and similar questions retrieve the same
chunks: each line is embedded the first time any question needs it and looked up after — in this
process (a bounded map) and in the store (`sentence_vectors`, migration 0015), so a restarted server or
another process pays a lookup too. A store the caller may not write to (a read-only role) still serves
what is there; the new vectors then live in this process only.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager

import numpy as np
import psycopg
from cachetools import LRUCache

from pipeline.store import sentence_vectors

log = logging.getLogger(__name__)
MEMORY = 50_000  # vectors kept in this process (384 floats each: ~75 MB at most)

Encode = Callable[[list[str]], np.ndarray]


class LineVectors:
    """Document-side vectors of texts for one model, cached in memory and in the store."""

    def __init__(self, model: str, connection: Callable[[], AbstractContextManager[psycopg.Connection]]):
        self.model = model
        self._connection = connection  # a pooled store connection for each read or write (the Searcher's)
        self._mem: LRUCache[bytes, np.ndarray] = LRUCache(MEMORY)  # least recently used out first
        self._mem_lock = threading.Lock()
        self._writable = True

    def encode(self, texts: Sequence[str], encode: Encode) -> np.ndarray:
        keys = [hashlib.sha256(t.encode("utf-8")).digest() for t in texts]
        found = self._from_memory(keys)
        missing = [k for k in dict.fromkeys(keys) if k not in found]
        if missing:
            found.update(self._from_store(missing))
        todo = [k for k in dict.fromkeys(keys) if k not in found]
        if todo:
            text_of = dict(zip(keys, texts, strict=True))
            vecs = np.asarray(encode([text_of[k] for k in todo]), dtype=np.float32)
            new = dict(zip(todo, vecs, strict=True))
            found.update(new)
            self._to_store(new)
        self._remember({k: found[k] for k in keys})
        return np.stack([found[k] for k in keys]) if keys else np.zeros((0, 0), dtype=np.float32)

    def _from_memory(self, keys: list[bytes]) -> dict[bytes, np.ndarray]:
        with self._mem_lock:
            out = {}
            for k in keys:
                if (v := self._mem.get(k)) is not None:  # a hit counts as a use
                    out[k] = v
            return out

    def _remember(self, vecs: dict[bytes, np.ndarray]) -> None:
        with self._mem_lock:
            self._mem.update(vecs)

    def _from_store(self, keys: list[bytes]) -> dict[bytes, np.ndarray]:
        try:
            with self._connection() as conn:
                rows = sentence_vectors.read(conn, self.model, keys)
        except Exception as e:  # noqa: BLE001 — a store without the table (not migrated yet): compute them
            log.debug("line vectors not read from the store: %s", e)
            return {}
        return {h: np.frombuffer(v, dtype="<f4") for h, v in rows.items()}

    def _to_store(self, vecs: dict[bytes, np.ndarray]) -> None:
        if not self._writable:
            return
        rows = [(k, v.astype("<f4").tobytes()) for k, v in vecs.items()]
        try:
            with self._connection() as conn:
                sentence_vectors.write(conn, self.model, rows)
        except Exception as e:  # noqa: BLE001 — read-only or unmigrated: keep them in memory only
            self._writable = False
            log.info("line vectors kept in memory only (the store did not take them: %s)", e)

"""Shared forward passes: concurrent `encode` calls on one model become one call.

A forward pass over 32 short texts costs little more than one over a single
text, so a server answering many searches at once should embed their queries
together. `Batcher` is one worker thread that owns the model: it takes the
first job queued, waits `wait_s` for company (the collection window), takes
whatever else is queued up to `max_batch` texts (the cap), encodes each kind in
one call and hands every caller its rows. Under load the window hardly matters:
jobs pile up while a pass runs and the next pass takes them all.

`SharedEncoder` puts a Batcher (and an LRU of recent vectors: people repeat questions,
a page asks what its search just asked, and answers embed the same evidence sentences
again) in front of any
TextEmbedder; `pipeline.embed.selection` gives one to every process that embeds
queries. The embedder service (docforge.servers.embedder) uses the Batcher
directly.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from cachetools import LRUCache

from pipeline import metrics
from pipeline.embed.files import Kind
from pipeline.embed.model import TextEmbedder

WAIT_S = 0.002  # the collection window: long enough for requests that arrive together, short next to a search
MAX_BATCH = 64  # the cap: texts per forward pass (a query is short; 64 of them are one small batch)
LRU_SIZE = 4096  # recent vectors kept, by kind and text (384 floats each: ~6 MB)


@dataclass
class _Job:
    texts: list[str]
    kind: Kind
    future: Future = field(default_factory=Future)
    queued_at: float = field(default_factory=time.monotonic)


class Batcher:
    """One thread owns the model; concurrent jobs are encoded together (see module doc)."""

    def __init__(self, embedder: TextEmbedder, max_batch: int = MAX_BATCH, wait_s: float = WAIT_S):
        self.embedder, self.max_batch, self.wait_s = embedder, max_batch, wait_s
        self._queue: queue.Queue[_Job | None] = queue.Queue()
        self.batches = 0  # forward passes, for /info (and the tests' proof that requests were merged)
        self._thread = threading.Thread(target=self._run, name="docforge-embed-batcher", daemon=True)
        self._thread.start()

    def submit(self, texts: list[str], kind: Kind) -> Future:
        job = _Job(texts, kind)
        self._queue.put(job)
        return job.future

    def close(self) -> None:
        self._queue.put(None)

    def _run(self) -> None:
        while (first := self._queue.get()) is not None:
            jobs, n = [first], len(first.texts)
            deadline = time.monotonic() + self.wait_s
            while n < self.max_batch:
                try:
                    job = self._queue.get(timeout=max(0.0, deadline - time.monotonic()))
                except queue.Empty:
                    break
                if job is None:
                    self._queue.put(None)  # stop after this batch
                    break
                jobs.append(job)
                n += len(job.texts)
            metrics.embed_batch(n, [j.queued_at for j in jobs])
            for kind in ("query", "document"):
                self._encode([j for j in jobs if j.kind == kind], kind)

    def _encode(self, jobs: list[_Job], kind: Kind) -> None:
        if not jobs:
            return
        try:
            vectors = self.embedder.encode([t for j in jobs for t in j.texts], kind=kind)
        except Exception as e:  # noqa: BLE001 (handed to every caller of the batch)
            for j in jobs:
                j.future.set_exception(e)
            return
        self.batches += 1
        start = 0
        for j in jobs:
            j.future.set_result(vectors[start : start + len(j.texts)])
            start += len(j.texts)


class SharedEncoder:
    """A TextEmbedder whose `encode` calls share forward passes with concurrent ones (a Batcher, started
    on first use), and whose vectors are remembered (the last LRU_SIZE, by kind and text). Everything else is the
    wrapped embedder's."""

    def __init__(self, inner: TextEmbedder, lru_size: int = LRU_SIZE):
        self.inner = inner
        self.lru_size = lru_size
        self._lock = threading.Lock()
        self._batcher: Batcher | None = None
        self._recent: LRUCache[tuple[str, str], np.ndarray] = LRUCache(lru_size)  # least recently used out first

    def __getattr__(self, name: str) -> Any:  # model_id, dimension, tokenizer, info(), ...
        return getattr(self.inner, name)

    @property
    def batches(self) -> int:
        return self._batcher.batches if self._batcher else 0

    def encode(self, texts: Sequence[str], kind: Kind = "document") -> np.ndarray:
        texts = list(texts)
        with self._lock:
            known = {t: v for t in texts if (v := self._recent.get((kind, t))) is not None}  # a hit is a use
        missing = list(dict.fromkeys(t for t in texts if t not in known))
        if missing:
            fresh = dict(zip(missing, self._pass(missing, kind), strict=True))
            with self._lock:
                for t, v in fresh.items():
                    self._recent[(kind, t)] = v
            known.update(fresh)
        return np.stack([known[t] for t in texts]) if texts else self.inner.encode([], kind)

    def _pass(self, texts: list[str], kind: Kind) -> np.ndarray:
        with self._lock:
            if self._batcher is None:
                self._batcher = Batcher(self.inner)
            batcher = self._batcher
        return batcher.submit(texts, kind).result()


def shared(embedder: TextEmbedder) -> TextEmbedder:
    """`embedder` behind a SharedEncoder (once: a shared one is returned as it is)."""
    return embedder if isinstance(embedder, SharedEncoder) else SharedEncoder(embedder)

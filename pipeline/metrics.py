"""What the core counts, for whoever watches: a tiny protocol, so the core imports no metrics library.

A server installs a `Sink` (docforge.servers.metrics: Prometheus) with `watching`; without one every call
here is a no-op. The names are this module's constants: the sink maps each to its own metric.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Protocol

EMBED_BATCH_TEXTS = "embed_batch_texts"  # texts in one shared forward pass (pipeline.embed.batching)
EMBED_QUEUE_WAIT_S = "embed_queue_wait_seconds"  # a job's wait from submit to its forward pass
STORE_ERRORS = "store_errors"  # "the store is unavailable" (pipeline.store.pool), usage writes that failed
USAGE_DROPPED = "usage_dropped"  # usage records dropped: the writer's queue was full (pipeline.usage)


class Sink(Protocol):
    def count(self, name: str, n: float = 1.0) -> None: ...

    def observe(self, name: str, value: float) -> None: ...


_sinks: list[Sink] = []


def watching(sink: Sink) -> None:
    """Send every count and observation to `sink` too (once per sink)."""
    if sink not in _sinks:
        _sinks.append(sink)


def count(name: str, n: float = 1.0) -> None:
    for s in _sinks:
        s.count(name, n)


def observe(name: str, value: float) -> None:
    for s in _sinks:
        s.observe(name, value)


def embed_batch(texts: int, queued_at: Sequence[float]) -> None:
    """One forward pass of `texts` texts, for jobs queued at these `time.monotonic()` instants."""
    if not _sinks:
        return
    now = time.monotonic()
    observe(EMBED_BATCH_TEXTS, texts)
    for q in queued_at:
        observe(EMBED_QUEUE_WAIT_S, now - q)

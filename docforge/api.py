"""The Python API: `docforge.ask`, `docforge.aask`, `docforge.run_batch`.

    import docforge
    a = docforge.ask("How are RFCs accepted?")             # an Answer (pydantic): a.answer, a.claims, ...
    a = await docforge.aask("...")                          # the same ask, in a worker thread
    answers = docforge.run_batch(["q1", "q2"], concurrency=4)

One Answerer per config file is kept for the process (its model, connections and
LLM client are reused); `close()` releases them. `aask` and `run_batch` run the
one synchronous `ask` in threads, so there is a single code path.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from pipeline.answers import Answer, Answerer
from pipeline.config import config_file, load_settings
from pipeline.errors import DocforgeError
from pipeline.query.filters import with_repo

_answerers: dict[Path, Answerer] = {}
_lock = threading.Lock()


def answerer(config: str | Path | None = None) -> Answerer:
    """The process's Answerer for a sources.yml (default: $DOCFORGE_CONFIG or ./sources.yml)."""
    path = Path(config or config_file()).resolve()
    with _lock:
        if path not in _answerers:
            _answerers[path] = Answerer(load_settings(path))
        return _answerers[path]


def ask(
    question: str,
    *,
    config: str | Path | None = None,
    filters: dict | None = None,
    filter_repo: str | None = None,
    mode: str = "hybrid",
    rerank: bool | None = None,
    history: list[dict[str, str]] | None = None,
    max_iterations: int | None = None,
    no_cache: bool = False,
    trace: bool = False,
    **kw: Any,
) -> Answer:
    """Answer `question` from the indexed documentation, with verified, cited claims."""
    return answerer(config).ask(
        question,
        filters=with_repo(filters, filter_repo),
        mode=mode,
        rerank=rerank,
        history=history,
        max_iterations=max_iterations,
        use_cache=False if no_cache else None,
        trace=trace,
        **kw,
    )


async def aask(question: str, **kw: Any) -> Answer:
    """`ask` without blocking the event loop."""
    return await asyncio.to_thread(ask, question, **kw)


def run_batch(questions: Iterable[str], concurrency: int = 4, **kw: Any) -> list[Answer | DocforgeError]:
    """Answer many questions, `concurrency` at a time; results in input order. A question that fails
    yields its error in its place and never stops the others."""
    if concurrency < 1:
        raise ValueError("concurrency must be at least 1")

    def one(q: str) -> Answer | DocforgeError:
        try:
            return ask(q, **kw)
        except DocforgeError as e:
            return e

    with ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="docforge-ask") as pool:
        return list(pool.map(one, list(questions)))


def close() -> None:
    """Release every Answerer this process opened."""
    with _lock:
        for a in _answerers.values():
            a.close()
        _answerers.clear()

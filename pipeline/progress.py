"""Progress of an ingest run, as a protocol: the core reports, a surface draws.

Stages call `ctx.progress(stage, done, total)`; the resources hand `report` to every IngestContext and
the CLI's runner calls `begin_source` before each source. A surface that wants to show progress installs
a `Display` for the duration (`with listening(display):`; the CLI's bars and lines are in
docforge/cli/progress.py); with nothing installed `report` costs one global lookup.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Protocol

Progress = Callable[[str, int, int], None]  # (stage, done, total)
UNITS = {"documents": "files", "chunks": "docs", "embeddings": "chunks", "write": "docs", "reindex": "chunks"}


class Display(Protocol):
    """What a surface installs: called with (stage, done, total); told when the next source begins."""

    def __call__(self, stage: str, done: int, total: int) -> None: ...

    def begin_source(self, name: str) -> None: ...


_display: Display | None = None


def report(stage: str, done: int, total: int) -> None:
    """The callback resources pass as IngestContext(progress=...): forwards to the installed display."""
    if _display is not None:
        _display(stage, done, total)


def begin_source(name: str) -> None:
    """Label the following stages with a source name (several sources run one after another)."""
    if _display is not None:
        _display.begin_source(name)


@contextmanager
def listening(display: Display) -> Iterator[Display]:
    """Send every report to `display` for the duration (the one installed before comes back after)."""
    global _display
    previous, _display = _display, display
    try:
        yield display
    finally:
        _display = previous

"""Ingest progress on the terminal: a rich bar per stage on a terminal, plain lines otherwise.

The core reports through pipeline.progress; `showing` installs one of these displays for the duration of
an in-process run. Output goes to stderr: stdout stays clean for `--json` and the summary table.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, TextIO

from pipeline.printable import printable
from pipeline.progress import UNITS, Display, listening

if TYPE_CHECKING:
    from rich.progress import TaskID


@contextmanager
def showing(stream: TextIO | None = None, interval_s: float = 5.0) -> Iterator[Display]:
    """Install a display for the duration: rich bars on a terminal, else a line per stage every interval_s."""
    stream = stream or sys.stderr
    display = BarDisplay(stream) if stream.isatty() else LineDisplay(stream, interval_s)
    try:
        with listening(display):
            yield display
    finally:
        display.close()


class LineDisplay:
    """Plain lines for logs and pipes: a stage's first call, then at most one per interval, then its end."""

    def __init__(self, stream: TextIO, interval_s: float = 5.0, clock: Callable[[], float] = time.monotonic):
        self.stream, self.interval, self.clock = stream, interval_s, clock
        self.source = ""
        self._start: dict[str, tuple[float, int]] = {}  # stage → (time, done) when first seen
        self._last: dict[str, float] = {}
        self._shown: dict[str, tuple[int, int]] = {}  # stage → (done, total) of its last line

    def begin_source(self, name: str) -> None:
        self.source, self._start, self._last, self._shown = printable(name), {}, {}, {}

    def __call__(self, stage: str, done: int, total: int) -> None:
        now = self.clock()
        start = self._start.setdefault(stage, (now, done))
        finished = done >= total
        if not finished and stage in self._last and now - self._last[stage] < self.interval:
            return
        if self._shown.get(stage) == (done, total):
            return  # nothing moved since its last line (a block encoded, not yet committed; an end said twice)
        self._shown[stage] = (done, total)
        self._last[stage] = now
        self.stream.write(self.line(stage, done, total, now - start[0], done - start[1]) + "\n")
        self.stream.flush()

    def line(self, stage: str, done: int, total: int, elapsed: float, progressed: int) -> str:
        unit = UNITS.get(stage, "items")
        where = f"source {self.source!r}, " if self.source else ""  # a source named `git` is no type
        pct = f" ({100 * done / total:.0f}%)" if total else ""
        rate = f", {progressed / elapsed:.1f} {unit}/s" if elapsed > 0 and progressed else ""
        eta = ""
        if elapsed > 0 and progressed and done < total:
            eta = f", eta {_duration((total - done) * elapsed / progressed)}"
        return f"docforge: {where}{stage} {done}/{total} {unit}{pct}{rate}{eta}"

    def close(self) -> None:
        self.stream.flush()


class BarDisplay:
    """One rich progress bar per stage, with its rate (chunks/s while embedding) and ETA."""

    def __init__(self, stream: TextIO):
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        # markup=False: the description holds a source name, which is the user's text, not rich markup.
        self.bars = Progress(
            TextColumn("{task.description:<24}", markup=False),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[unit]}"),
            TextColumn("{task.fields[rate]}"),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=Console(file=stream),
            transient=False,
        )
        self.tasks: dict[str, TaskID] = {}
        self.source = ""
        self.bars.start()

    def begin_source(self, name: str) -> None:
        self.source, self.tasks = printable(name), {}

    def __call__(self, stage: str, done: int, total: int) -> None:
        if stage not in self.tasks:
            label = f"{self.source}: {stage}" if self.source else stage
            self.tasks[stage] = self.bars.add_task(label, total=total, unit=UNITS.get(stage, "items"), rate="")
        task_id = self.tasks[stage]
        self.bars.update(task_id, completed=done, total=total)
        speed = self.bars.tasks[task_id].speed  # rich's own sliding-window estimate
        if speed:
            self.bars.update(task_id, rate=f"{speed:.1f}/s")

    def close(self) -> None:
        self.bars.stop()


def _duration(seconds: float) -> str:
    m, s = divmod(int(seconds + 0.5), 60)
    return f"{m}m{s:02d}s" if m else f"{s}s"

"""What one source's run reports to the CLI, and the run a source with nothing to do needs no Dagster for.

Importing Dagster and making its ephemeral instance costs seconds; an unchanged directory source, the
common case of a nightly or per-push `docforge ingest`, is settled from its listing and the ledger
(pipeline.ingest.noop) and checked with the same four checks, in this process. With DAGSTER_HOME set
every source goes through Dagster, so every run shows in the UI.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

from pipeline.config import load_settings
from pipeline.ingest.checks import CheckOutcome
from pipeline.ingest.context import IngestContext, IngestStats

__all__ = ["CheckOutcome", "SourceRun", "settled_runs"]


@dataclass(frozen=True)
class SourceRun:
    """One source's in-process run: its stats (None if an ingest step failed), the error, the checks."""

    stats: IngestStats | None = None
    error: str | None = None
    checks: tuple[CheckOutcome, ...] = ()
    wall_s: float = 0.0  # the run's wall time, start to end (the stages' seconds overlap and leave gaps)


def settled_runs(config_path: str, names: list[str]) -> dict[str, SourceRun]:
    """The runs of the sources among `names` that have nothing to do, done without Dagster; the others
    are left out (for `cli_runs.materialize_sources`). None when DAGSTER_HOME is set: the UI records every run."""
    if os.environ.get("DAGSTER_HOME"):  # Dagster's own variable: a persistent instance records runs
        return {}
    from pipeline.ingest import noop

    ctx = IngestContext(load_settings(config_path))
    out: dict[str, SourceRun] = {}
    for name in names:
        t0 = time.perf_counter()
        stats = noop.settled(ctx, name)
        if stats is not None:
            checks = tuple(noop.check(ctx, name))
            out[name] = SourceRun(stats=stats, checks=checks, wall_s=time.perf_counter() - t0)
    return out

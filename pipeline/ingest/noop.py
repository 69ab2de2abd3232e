"""A run with nothing to do, proven without running the stages: what an unchanged source costs.

A directory source whose every listed file the ledger proves unchanged (mtime and size, under the
same chunker and model), with nothing indexed that is no longer listed, nothing staged by an
interrupted run, no change of who may read a document and no failure to retry, would run the three
stages only to change nothing. `settled` proves that from the listing and the ledger alone, the same
decision `stage_documents` makes first; `check` then runs the index's checks on the source. Anything
else (another source type, whose listing costs requests; a store not built yet) is left to the real
run: `settled` answers None.
"""

from __future__ import annotations

import time
from collections import Counter

from pipeline.access import Readers
from pipeline.ingest import ledger
from pipeline.ingest.checks import CHECKS, CheckOutcome, window
from pipeline.ingest.context import IngestContext, IngestStats
from pipeline.sources import open_source, skipped_by
from pipeline.store import generations
from pipeline.store.db import connect
from pipeline.store.schema import is_current

# Work an interrupted run left (staged chunks go with their staged document), or a failure to retry.
_PENDING = """
SELECT EXISTS (SELECT 1 FROM staged_documents WHERE source = %(s)s)
    OR EXISTS (SELECT 1 FROM failures WHERE source = %(s)s)
"""


def settled(ctx: IngestContext, name: str) -> IngestStats | None:
    """The stats of a run of `name` that would change nothing, or None when it has work to do."""
    t0 = time.perf_counter()
    cfg = ctx.settings.source(name)
    if cfg.type != "directory":
        return None
    with connect(ctx.url, vector=False) as conn:  # a new or older store is built by the real run, not here
        if not is_current(conn) or generations.live(conn) is None:
            return None
    source = open_source(ctx.settings, cfg)
    refs = source.list_refs()
    with ctx.store(name) as conn:
        plan = ledger.plan(refs, ledger.read(conn, name), ctx.fingerprint, Readers(cfg.access).hash)
        if plan.fetch or plan.delete or plan.reaccess or conn.execute(_PENDING, {"s": name}).fetchone()[0]:
            return None
    skipped = skipped_by(source)
    stats = IngestStats(
        files_unchanged=len(plan.skip),
        files_skipped=getattr(source, "files_skipped", len(skipped)),
        skipped_files=tuple(skipped),
        languages=dict(Counter(str(r.meta.get("format") or source.type) for r in refs)),
    )
    return stats.timed("documents", time.perf_counter() - t0)


def check(ctx: IngestContext, name: str) -> list[CheckOutcome]:
    """The index's checks on source `name`, as Dagster's asset checks would report them."""
    scope = f"source {name!r}"
    out = []
    with connect(ctx.url, vector=False) as conn:
        for c in CHECKS:
            passed, description = c.verdict(c.find(conn, name, lambda: window(conn, ctx.settings, ctx.embedder)), scope)
            out.append(CheckOutcome(c.name, passed, "ERROR", description))
    return out

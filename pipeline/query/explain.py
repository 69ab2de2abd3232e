"""EXPLAIN the statements a search runs first, with its own parameters.

    python -m pipeline.query.explain "how do I rotate credentials?"
    python -m pipeline.query.explain "rotate credentials" --filter '{"source": "handbook"}' --analyze

Prints each statement (sql/dense.sql, sql/keyword.sql, composed as the first pass of a hybrid
search composes them: `fetch_k` candidates each, the filter compiled in) and its plan. The store
is the one DATABASE_URL / DOCFORGE_HOME and the configuration (`--config`, DOCFORGE_CONFIG) name.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator

from psycopg import sql

from pipeline.config import load_settings
from pipeline.query.filters import compile_filter
from pipeline.query.search import Searcher
from pipeline.query.statements import Leg, Reading, statement
from pipeline.store import generations


def explain(searcher: Searcher, query: str, filters: dict | None = None, analyze: bool = False) -> Iterator[str]:
    """For each leg: its statement as sent, then its plan (EXPLAIN, or EXPLAIN ANALYZE)."""
    cfg = searcher.config
    where, fbinds = compile_filter(filters)
    with searcher.connection() as conn:
        gen = generations.live(conn)
        vec = searcher.embedder.encode([query], kind="query")[0] if gen is not None else None
        r = Reading.first(query, cfg.fetch_k, bool(filters), cfg, vec)
        legs: tuple[Leg, ...] = ("dense", "keyword") if gen is not None else ("keyword",)
        for leg in legs:
            stmt = statement(leg, r, where, gen)
            yield f"-- {leg}\n{stmt.as_string(conn)}"
            head = sql.SQL("EXPLAIN (ANALYZE, BUFFERS) " if analyze else "EXPLAIN ")
            yield "\n".join(row[0] for row in conn.execute(head + stmt, {**r.binds(), **fbinds}))


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m pipeline.query.explain", description=__doc__.split("\n")[0])
    p.add_argument("query")
    p.add_argument("--filter", default=None, help="a filter expression, JSON (docs/query.md#filters)")
    p.add_argument("--config", default=None, help="sources.yml [default: DOCFORGE_CONFIG, else ./sources.yml]")
    p.add_argument("--analyze", action="store_true", help="run the statements: EXPLAIN (ANALYZE, BUFFERS)")
    args = p.parse_args(argv)
    with Searcher(load_settings(args.config)) as searcher:
        for block in explain(searcher, args.query, json.loads(args.filter) if args.filter else None, args.analyze):
            print(block, end="\n\n")


if __name__ == "__main__":
    main()

"""Where search puts the answer: per labelled question, the rank of the first hit holding an answer phrase.

    python bench/phrase_ranks.py --store kea=/tmp/st/kea --store cyrus=/tmp/st/cyrus
    python bench/phrase_ranks.py --store kea=/tmp/st/kea --vary repeat_discount=0.5,0.8,1
    python bench/phrase_ranks.py --smoke      # a tiny made-up manual, ingested and asked, seconds

Each `--store NAME=HOME` is a store as `docforge ingest PATH` leaves it (DOCFORGE_HOME) and asks the
labelled questions of bench/sets/NAME/questions.jsonl (`--sets` another folder); questions without a
phrase are left out. Two views of one hybrid search each:

    search   search(q, limit=30, per_doc=0), as `docforge search --json -n 30 --per-doc 0` returns it:
             questions whose phrase is in the first hit, the first 3, 5, 10, 30
    ask      the answerer's first search, search(q, limit=answers.max_evidence, per_doc=answers.per_doc)
             (12 and 0 by default): the first hit, 3, 5, 12 (a hit there may join neighbouring chunks)

`--vary KEY=V1,V2,...` asks again with each value of one `search` setting (SearchConfig), every value
in the same process and on the same store, so the rows compare (the first value is the baseline).
Nothing is written to a store: copy one (`cp -a`) only to re-ingest it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from functools import cache
from pathlib import Path

SETS = Path(__file__).resolve().parent / "sets"


@cache
def views() -> dict[str, tuple[tuple[int, int], tuple[int, ...]]]:
    """Each view's (limit, per_doc) and the tops it counts; the answerer's as its settings say."""
    from pipeline.config import AnswersConfig

    ask = AnswersConfig()
    return {"search": ((30, 0), (1, 3, 5, 10, 30)), "ask": ((ask.max_evidence, ask.per_doc), (1, 3, 5, 12))}


def fold(text: str) -> str:
    return " ".join(text.split()).casefold()


def questions(path: Path) -> list[dict]:
    """The labelled questions that have an answer phrase."""
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [q for q in rows if q.get("phrases")]


def first_rank(hits, phrases: list[str]) -> int | None:
    """0-based rank of the first hit whose text holds one of the phrases (spaces and case folded)."""
    wanted = [fold(p) for p in phrases]
    return next((i for i, h in enumerate(hits) if any(p in fold(h.text) for p in wanted)), None)


def ranks(searcher, asked: list[dict]) -> dict[str, list[int | None]]:
    """Each view's first-phrase rank per question."""
    out: dict[str, list[int | None]] = {view: [] for view in views()}
    for q in asked:
        for view, ((limit, per_doc), _) in views().items():
            hits = searcher.search(q["question"], limit=limit, mode="hybrid", per_doc=per_doc)
            out[view].append(first_rank(hits, q["phrases"]))
    return out


def line(name: str, label: str, found: dict[str, list[int | None]]) -> str:
    cells = []
    for view, (_, tops) in views().items():
        got = found[view]
        counts = "/".join(str(sum(r is not None and r < k for r in got)) for k in tops)
        cells.append(f"{view} {counts}")
    return f"{name:<12}{label:<22}" + "   ".join(cells) + f"   of {len(found['search'])}"


def measure(name: str, home: Path, asked: list[dict], vary: tuple[str, list[str]] | None, embedder=None):
    """One store's rows: the configured search, or one row per value of the varied setting."""
    from pipeline.config import Settings
    from pipeline.query import Searcher

    os.environ["DOCFORGE_HOME"] = str(home)
    settings = Settings(home=home)
    key, values = vary or ("", [""])
    for value in values:
        cfg = settings.search.model_copy(update={key: type(getattr(settings.search, key))(value)}) if key else None
        with Searcher(settings, embedder=embedder, config=cfg) as searcher:
            found = ranks(searcher, asked)
            embedder = embedder or searcher.embedder
        print(line(name, f"{key}={value}" if key else "as configured", found), flush=True)
    return embedder


def smoke() -> tuple[list[tuple[str, Path]], Path]:
    """A tiny made-up manual ingested ad hoc into a scratch store, and its labelled questions."""
    from retrieval_store import ingest_source_at, own_store
    from smoke import scratch, tiny_html

    root = scratch()
    pages = tiny_html(root / "manual")
    own_store(root)
    (root / "sources.yml").write_text(f"sources:\n  - name: manual\n    type: directory\n    path: {pages}\n")
    ingest_source_at(root / "sources.yml", None, None)
    (root / "sets" / "manual").mkdir(parents=True)
    rows = [
        {"question": f"How many rows may a query return under limit_{i}?", "phrases": [f"{i * 10}"]} for i in (1, 2)
    ]
    (root / "sets" / "manual" / "questions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return [("manual", root / "home")], root / "sets"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--store", action="append", default=[], metavar="NAME=HOME", help="a store and its set")
    ap.add_argument("--sets", type=Path, default=SETS, help="the labelled sets' folder (default: bench/sets)")
    ap.add_argument("--vary", metavar="KEY=V1,V2", help="one search setting, each value asked in turn")
    ap.add_argument("--smoke", action="store_true", help="a tiny made-up manual, seconds")
    args = ap.parse_args()
    os.environ.pop("DATABASE_URL", None)  # each store is its own embedded server
    if args.smoke:
        stores, sets = smoke()
    else:
        if not args.store:
            ap.error("give at least one --store NAME=HOME (or --smoke)")
        stores = [(s.split("=", 1)[0], Path(s.split("=", 1)[1])) for s in args.store if "=" in s]
        if len(stores) != len(args.store):
            ap.error("--store takes NAME=HOME, e.g. --store kea=/tmp/stores/kea/home")
        sets = args.sets
    vary = None
    if args.vary:
        key, _, values = args.vary.partition("=")
        from pipeline.config import SearchConfig

        if key not in SearchConfig.model_fields or not values:
            ap.error(f"--vary takes a search setting and values, e.g. repeat_discount=0.5,0.8; not {args.vary!r}")
        vary = (key, values.split(","))
    tops = "; ".join(f"{v}: top {'/'.join(map(str, t))}" for v, (_, t) in views().items())
    print(f"questions whose answer phrase is in the first hits ({tops})")
    embedder = None
    for name, home in stores:
        path = sets / name / "questions.jsonl"
        if not path.is_file():
            sys.exit(f"no labelled set at {path}: name the store after its set, or pass --sets")
        embedder = measure(name, home, questions(path), vary, embedder)
    if args.smoke:  # the scratch store's server, which this run started
        from pipeline.store.db import stop_embedded

        stop_embedded(stores[0][1])


if __name__ == "__main__":
    main()

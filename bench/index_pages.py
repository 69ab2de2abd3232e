"""What ranking index pages lower does to a whole HTML manual's result lists: off and on, in one run.

    python bench/index_pages.py --manual /usr/share/doc/apache2-doc/manual/en \\
        --questions bench/sets/apache/questions.jsonl --stores /tmp/stores
    python bench/index_pages.py --smoke      # a made-up manual of three pages and two questions
    python bench/index_pages.py --manual /usr/share/doc/exim4-doc-html/spec_html \
        --questions bench/sets/exim4/questions.jsonl --stores /tmp/stores --vectors --subset

The manual is indexed whole, index pages included, into STORES/<name>-whole/ (kept between runs: a no-op
ingest when unchanged). First the pages' link shares (pipeline.parse.Parsed.link_share): how many reach
`search.index_link_share` and the highest share of the pages under it. Then every answerable question
({"question", "phrases"}) is searched as `docforge search` does (hybrid, top 5) with index pages
weighted 1 (off) and `search.index_weight` (on); per setting: the top-5 slots index pages take, the
questions whose first hit is an index page, and the questions with an answer phrase in a top-5 hit.

`--vectors`: what indexing index pages for keyword search only (the default, `embedding.index_pages`
false) costs and saves. The store (STORES/<name>-vectors/) is built with every page embedded, its
ingest timed; questions are searched (hybrid and dense, top 5: answer phrase found); the index pages'
chunk texts are encoded again alone, timed (the embedding the default skips); then their vectors are
deleted and their documents marked keyword-only, as the default ingest stores them, and the questions
searched again. `--subset`: only the pages the questions name ("page") and the index pages, copied
into STORES/<name>-subset/ (a manual too large to embed twice on a busy machine).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def smoke_manual(root: Path) -> tuple[Path, Path]:
    links = "".join(f'<li><a href="{p}.html">{t}</a></li>' for p, t in (("a", "Vacuum and freezing"), ("b", "Backups")))
    pages = {
        "sitemap.html": f"<html><body><h1>Site map</h1><ul>{links}</ul></body></html>",
        "a.html": "<html><body><h1>Vacuum</h1><p>Vacuum freezes old rows every 200 million transactions.</p>"
        "</body></html>",
        "b.html": "<html><body><h1>Backups</h1><p>Dump the cluster nightly; keep 7 dumps.</p></body></html>",
    }
    (root / "manual").mkdir(parents=True)
    for page, text in pages.items():
        (root / "manual" / page).write_text(text, encoding="utf-8")
    questions = root / "questions.jsonl"
    questions.write_text(
        '{"question": "How often does vacuum freeze rows?", "phrases": ["200 million"]}\n'
        '{"question": "How many dumps are kept?", "phrases": ["7 dumps"]}\n',
        encoding="utf-8",
    )
    return root / "manual", questions


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--manual", type=Path, help="a folder of HTML pages: the whole manual")
    ap.add_argument("--questions", type=Path, help="questions.jsonl: {question, phrases}")
    ap.add_argument("--stores", type=Path, help="where the store is kept (STORES/<manual name>-whole/)")
    ap.add_argument("--vectors", action="store_true", help="index pages with and without vectors, timed")
    ap.add_argument("--subset", action="store_true", help="only the questions' pages and the index pages")
    ap.add_argument("--smoke", action="store_true", help="a made-up manual, a temporary store")
    args = ap.parse_args()
    if args.smoke:
        from smoke import scratch

        tmp = scratch()
        args.manual, args.questions = smoke_manual(tmp)
        args.stores = tmp / "stores"
    elif not (args.manual and args.questions and args.stores):
        ap.error("--manual, --questions and --stores are required (or --smoke)")

    from pipeline.store.db import stop_embedded

    if args.vectors:
        from index_vectors import run_vectors

        home = run_vectors(args)
        stop_embedded(home)
        return
    try:
        run(args)
    finally:
        stop_embedded(args.stores / f"{args.manual.resolve().name}-whole" / "home")


def run(args: argparse.Namespace) -> None:
    import psycopg

    from pipeline.config import load_settings
    from pipeline.ingest import IngestContext, ingest_source
    from pipeline.query import Searcher
    from pipeline.store.db import store_url

    name = args.manual.resolve().name
    d = args.stores / f"{name}-whole"
    d.mkdir(parents=True, exist_ok=True)
    config = d / "sources.yml"
    config.write_text(
        f"sources:\n  - name: {name}\n    type: directory\n    path: {args.manual.resolve()}\n", encoding="utf-8"
    )
    os.environ["DOCFORGE_HOME"] = str(d / "home")
    os.environ.pop("DATABASE_URL", None)
    settings = load_settings(config)
    ingest_source(IngestContext(settings), name)  # a no-op on a kept store
    cfg, url = settings.search, store_url(settings)
    with psycopg.connect(url) as conn:  # each page's link share, read once
        share = dict(conn.execute("SELECT key, coalesce((meta->>'link_share')::real, 0) FROM documents"))
    shares = list(share.values())
    index = sum(s >= cfg.index_link_share for s in shares)
    under = max((s for s in shares if s < cfg.index_link_share), default=0.0)
    print(f"{name}: {len(shares)} pages, {index} index page{'s' * (index != 1)} (link share ≥ {cfg.index_link_share}),")
    print(f"  the highest share under it {under:.2f}")

    rows = [json.loads(line) for line in args.questions.read_text(encoding="utf-8").splitlines() if line.strip()]
    rows = [r for r in rows if r.get("phrases")]
    print(f"{len(rows)} answerable questions, hybrid, top 5:")
    print(f"  {'index weight':<14}{'index slots':>14}{'index first':>14}{'phrase in 5':>14}")
    for weight in (1.0, cfg.index_weight):
        s = settings.model_copy(update={"search": cfg.model_copy(update={"index_weight": weight})})
        slots = first = found = 0
        with Searcher(s) as searcher:
            for r in rows:
                hits = searcher.search(r["question"], 5, "hybrid")
                is_index = [share.get(h.doc_key, 0) >= cfg.index_link_share for h in hits]
                slots += sum(is_index)
                first += bool(is_index and is_index[0])
                found += any(p in " ".join(h.text.split()) for h in hits for p in r["phrases"])
        n = len(rows)
        print(f"  {weight:<14g}{slots:>9} of {5 * n:<3}{first:>10} of {n:<3}{found:>10} of {n}")


if __name__ == "__main__":
    main()

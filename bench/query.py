"""Query latency, store size and HNSW recall at one or more store sizes, side by side.

    python bench/query.py                           # 100k chunks
    python bench/query.py --chunks 300000           # 100k and 300k in one run (the baseline size joins)
    python bench/query.py --chunks 20000 --m 24     # quicker / other index parameters
    python bench/query.py --vectors gaussian        # no embedding at all (pessimistic recall)
    python bench/query.py --compare-float32         # also an HNSW index of float32 vectors: recall of both
    python bench/query.py --compare-tree /tmp/base  # also another checkout's code, same store, in turns
    python bench/query.py --access 1 50 100         # also callers who may read 1 %, 50 %, 100 % of it
    python bench/query.py --smoke                   # the whole path on a tiny made-up corpus, in seconds

Texts are real: the rust-rfcs corpus and SciFact, chunked by the pipeline's own
chunker, then repeated with variation (paragraphs shuffled, one dropped) up to
the size. Embedding 300k chunks takes hours on a CPU, so only the ~23k distinct
texts get real vectors (`--vectors real`, the default: the model's embeddings,
onnx-int8 when installed, cached under the model cache); a variant's vector is
its base's plus noise shaped like the corpus (its covariance), scaled so that
variants sit as close to their base as 200 really embedded variants do.
`--vectors gaussian` draws every base vector from a Gaussian fitted to
--real-sample real embeddings instead: no topical clusters, so HNSW recall is
pessimistic and nothing needs embedding. Queries are SciFact's real claims,
embedded by the real model inside each search. Each size is a store of its own
(a database on one server), the real schema (BM25 triggers included), loaded
the way a cold ingest loads it: rows first (the triggers write the postings),
then the vectors, then the HNSW and GIN indexes. A smaller store holds the first
chunks of a larger one.

Prints, per size: build time per stage, bytes per chunk by table and index,
p50/p95 of `Searcher.search` per mode with no filter and with two broad ones
(`type: git`, every chunk; `source: scifact`, ~87% of them), and recall@10 of
the HNSW index (the live generation's vector type) against exact float32 search
at several hnsw.ef_search values. `--json` adds the figures as one JSON line.

`--access P …` also times callers who may read P % of the documents (access lists on every
document, docs/security.md) against no access control (a full-access caller: no predicate), on the
same store, the readers taking turns query by query; p50/p95 per mode and the ratio of p50s.

`--compare-tree DIR` also times the searches with the code of another checkout
(a release: `git archive bc15cdc | tar -x -C /tmp/base`) on the same store:
both run in child processes, in turns (three rounds each), and the report adds
the ratio of their p50s per mode and filter.

Its parts: `query_store.py` makes the texts, vectors and store, `query_measure.py` times and
recalls, `query_report.py` prints; `kept_store` below is the input of churn.py and partitions.py.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# the code measured: this checkout, or another one's (--compare-tree runs this file under it)
sys.path.insert(0, os.environ.get("DOCFORGE_BENCH_CODE", str(ROOT)))
sys.path.insert(1, str(Path(__file__).resolve().parent))  # its own parts, this checkout's, whichever code
os.environ.setdefault("HF_HUB_OFFLINE", "1")
DATA = ROOT.parent / "shared" / "data"

import numpy as np  # noqa: E402
from query_measure import FILTERS, access_latency, hnsw_recall, search_latency  # noqa: E402
from query_report import report  # noqa: E402
from query_store import drop_database, fresh_database, load_store, sized_texts, text_vectors  # noqa: E402

BASELINE = 100_000  # the size every run also measures when it measures a larger one


def main() -> None:
    args = _parse()
    if args.latency_of:
        _child_latency(args)
        return
    sizes = sorted({*args.chunks, *([args.baseline] if args.baseline and max(args.chunks) > args.baseline else [])})
    with tempfile.TemporaryDirectory(prefix="docforge-query-") as tmp:
        tmp = Path(tmp)
        os.environ["DOCFORGE_HOME"] = str(tmp / "home")
        from pipeline.config import EmbeddingConfig, Settings
        from pipeline.embed import Embedder
        from pipeline.store.db import database_url, stop_embedded

        emb = Embedder(EmbeddingConfig())
        server = database_url(tmp / "home", os.environ.get("DATABASE_URL"))
        try:
            texts = sized_texts(args, emb, tmp, max(sizes))
            vectors = text_vectors(args, emb, texts)
            queries = [json.loads(ln)["text"] for ln in (args.data / "beir/scifact/queries.jsonl").open()]
            random.Random(7).shuffle(queries)
            qvecs = emb.encode(queries[-args.recall_queries :])
            efs = sorted({*args.ef_search, Settings().search.ef_search})
            results = {}
            for n in sizes:
                url = fresh_database(server, f"docforge_query_{n}")
                try:
                    t = time.perf_counter()
                    build, sizes_by_rel = load_store(args, url, emb, texts[:n], vectors[:n])
                    print(f"[query] {n} chunks loaded in {time.perf_counter() - t:.0f} s", file=sys.stderr)
                    t = time.perf_counter()
                    latency, backend = search_latency(args, url, queries)
                    if args.compare_tree:
                        latency["compared"] = _compare(args, url, queries)
                    if args.access:
                        latency["access"] = access_latency(args, url, queries)
                    print(f"[query] {n} chunks: latency in {time.perf_counter() - t:.0f} s", file=sys.stderr)
                    t = time.perf_counter()
                    recall = hnsw_recall(args, url, vectors[:n], qvecs, efs)
                    print(f"[query] {n} chunks: recall in {time.perf_counter() - t:.0f} s", file=sys.stderr)
                finally:
                    if not args.keep:
                        drop_database(server, f"docforge_query_{n}")
                results[n] = {
                    "build": build,
                    "bytes": sizes_by_rel,
                    "latency": latency,
                    "recall": recall,
                    "backend": backend,
                }
            report(args, results)
            if args.json:
                print(json.dumps({str(n): r for n, r in results.items()}))
        finally:
            if not os.environ.get("DATABASE_URL"):
                stop_embedded(tmp / "home")


def _parse() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--chunks", type=int, nargs="+", default=[BASELINE], help="store sizes (default 100000)")
    ap.add_argument(
        "--baseline",
        type=int,
        default=BASELINE,
        help=f"also measured when a larger size is (default {BASELINE}; 0: never)",
    )
    ap.add_argument("--m", type=int, default=None, help="HNSW m (default: as the schema builds it)")
    ap.add_argument("--ef-construction", type=int, default=None, help="HNSW ef_construction (default: the schema's)")
    ap.add_argument(
        "--ef-search",
        type=int,
        nargs="+",
        default=[20, 40, 100, 200],
        help="ef_search values for recall (the Searcher's default is always added)",
    )
    ap.add_argument("--queries", type=int, default=150, help="timed searches per mode and filter")
    ap.add_argument("--modes", nargs="+", default=["dense", "keyword", "hybrid"], help="modes to time")
    ap.add_argument("--filters", nargs="+", default=list(FILTERS), choices=list(FILTERS), help="filters to time")
    ap.add_argument("--recall-queries", type=int, default=200)
    ap.add_argument(
        "--compare-float32",
        action="store_true",
        help="also build an HNSW index of the float32 vectors and report its recall beside",
    )
    ap.add_argument(
        "--vectors",
        choices=["real", "gaussian"],
        default="real",
        help="document vectors: real = the model's (every distinct text, cached; ~10 min once on "
        "2 CPU cores), gaussian = fitted to --real-sample texts (no topics: pessimistic)",
    )
    ap.add_argument("--real-sample", type=int, default=800, help="texts embedded for the Gaussian")
    ap.add_argument("--data", type=Path, default=DATA, help="the shared data folder")
    ap.add_argument(
        "--compare-tree",
        type=Path,
        default=None,
        help="also time the searches with this checkout's code (same store, in turns) and print p50 ratios",
    )
    ap.add_argument(
        "--access",
        type=float,
        nargs="+",
        default=[],
        metavar="PERCENT",
        help="also time callers who may read these shares of the documents (e.g. 1 50 100)",
    )
    ap.add_argument("--latency-of", default=None, help=argparse.SUPPRESS)  # a --compare-tree child: this URL
    ap.add_argument("--keep", action="store_true", help="keep each size's database (docforge_query_<n>)")
    ap.add_argument("--json", action="store_true", help="also print the figures as one JSON line")
    ap.add_argument("--smoke", action="store_true", help="the whole path on a tiny input, in seconds (bench/smoke.py)")
    args = ap.parse_args()
    if args.smoke:  # 150 chunks of made-up RFCs, Gaussian vectors, one timed search per mode
        from smoke import scratch, tiny_data

        args.chunks, args.baseline, args.vectors, args.real_sample, args.queries = [150], 0, "gaussian", 20, 1
        args.recall_queries, args.ef_search, args.filters, args.data = 5, [10], ["none"], tiny_data(scratch())
    return args


def _compare(args, url: str, queries: list[str]) -> dict:
    """p50 per mode and filter of this checkout's code and of --compare-tree's, each in child processes
    that take turns (three rounds each) on the same store, and their ratio."""
    rounds, per = 3, max(1, args.queries // 3)
    times: dict[str, dict[str, dict[str, list[float]]]] = {"this": {}, "other": {}}
    for r in range(rounds):
        for who, tree in (("this", ROOT), ("other", args.compare_tree.resolve())):
            part = queries[r * per :] + queries[: r * per]  # a new stretch of queries each round
            env = {**os.environ, "DOCFORGE_BENCH_CODE": str(tree), "PYTHONPATH": str(tree)}
            cmd = [sys.executable, str(Path(__file__).resolve()), "--latency-of", url, "--queries", str(per)]
            cmd += ["--modes", *args.modes, "--filters", *args.filters]
            out = subprocess.run(cmd, env=env, cwd=tempfile.gettempdir(), input=json.dumps(part), text=True,
                                 capture_output=True, check=True)  # fmt: skip
            for mode, by_filter in json.loads(out.stdout.splitlines()[-1]).items():
                for f, ms in by_filter.items():
                    times[who].setdefault(mode, {}).setdefault(f, []).extend(ms)
    result: dict = {}
    for mode, by_filter in times["this"].items():
        for f, ms in by_filter.items():
            this, other = float(np.percentile(ms, 50)), float(np.percentile(times["other"][mode][f], 50))
            result.setdefault(mode, {})[f] = {"this_p50": this, "other_p50": other, "ratio": this / other}
    return result


def _child_latency(args) -> None:
    """A --compare-tree child: time the queries on stdin against --latency-of, print raw ms as JSON."""
    queries = json.loads(sys.stdin.read())
    with tempfile.TemporaryDirectory(prefix="docforge-child-") as home:  # gone with the child
        os.environ.setdefault("DOCFORGE_HOME", home)
        raw = search_latency(args, args.latency_of, queries, raw=True)[0]
    print(json.dumps(raw))


def kept_store(home: Path) -> str:
    """The store `bench/query.py --smoke --keep` leaves, on an embedded server under `home` (stop it with
    `pipeline.store.db.stop_embedded(home)`): the input of bench/churn.py and bench/partitions.py."""
    import psycopg

    from pipeline.store.db import database_url

    server = database_url(home)
    argv, sys.argv = sys.argv, ["query.py", "--smoke", "--keep"]
    env = os.environ.get("DATABASE_URL")
    os.environ["DATABASE_URL"] = server
    try:
        main()
    finally:
        sys.argv = argv
        os.environ.pop("DATABASE_URL") if env is None else os.environ.update(DATABASE_URL=env)
    return psycopg.conninfo.make_conninfo(server, dbname="docforge_query_150")


def on_kept_store(run, args) -> None:
    """`run(args)` with `args.url` the store kept_store makes; its server stopped afterwards."""
    from smoke import scratch

    from pipeline.store.db import stop_embedded

    home = scratch() / "home"
    try:
        args.url = kept_store(home)
        run(args)
    finally:
        stop_embedded(home)


if __name__ == "__main__":
    main()

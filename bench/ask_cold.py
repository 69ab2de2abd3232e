"""Cold extractive `ask` on a store, and a cached answer asked by a new process.

    python bench/ask_cold.py --store DIR [--corpus rfcs] [--n N] [--code CHECKOUT ...]
    python bench/ask_cold.py --smoke      # a tiny made-up store (bench/smoke.py), seconds

DIR holds sources.yml and home/ (DOCFORGE_HOME), already ingested (bench/answers.py --dev builds one).
The labelled questions of --corpus (bench/answers_dev.jsonl) are asked once each, extractive, without the
answer cache, on a new searcher over a store whose line vectors were emptied (cold: every candidate line
embedded), in one process after one warm-up search: p50/p95 of the whole ask and p50 of each stage. Then a
cached answer asked by a new `docforge ask --json` process: its cache-lookup time and the process's wall
time. Each --code CHECKOUT (a worktree) runs the same measure with that checkout's code (PYTHONPATH), in
turn, in this run: compare checkouts measured together, the machine being shared.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from metrics import pct

ROOT = Path(__file__).resolve().parent
DEV_SET = ROOT / "answers_dev.jsonl"
STAGES = ("cache_lookup", "retrieve", "respond", "verify", "cache_write")


def questions(corpus: str, n: int) -> list[str]:
    rows = [json.loads(line) for line in DEV_SET.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [r["question"] for r in rows if r["corpus"] == corpus][: n or None]


def measure(store: Path, qs: list[str]) -> dict:
    """In this process: the cold asks' latencies and stage timings (ms)."""
    from pipeline.answers import Answerer
    from pipeline.config import load_settings
    from pipeline.query import Searcher

    settings = load_settings(store / "sources.yml")
    searcher = Searcher(settings)
    searcher.search("warm up the model", 1)
    with searcher.connection() as conn:
        conn.execute("DELETE FROM sentence_vectors")
    out: dict = {"ask": [], **{s: [] for s in STAGES}}
    with Answerer(settings, searcher=searcher, llm=None) as a:
        for q in qs:
            t = time.perf_counter()
            r = a.ask(q, use_cache=False)
            out["ask"].append((time.perf_counter() - t) * 1000)
            for s in STAGES:
                out[s].append(r.timings.get(s, 0.0))
    searcher.close()
    return out


def cached_in_new_process(store: Path, question: str, env: dict) -> tuple[float, float, int]:
    """(cache_lookup ms, process wall s, exit status) of `docforge ask --json` for an answer already cached."""
    exe = str(Path(sys.executable).parent / "docforge")
    cmd = [exe, "ask", "--config", str(store / "sources.yml"), question, "--json"]
    subprocess.run(cmd, env=env, capture_output=True)  # cached now, if it was not
    t = time.perf_counter()
    res = subprocess.run(cmd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t
    try:
        d = json.loads(res.stdout)
    except json.JSONDecodeError:
        return float("nan"), wall, res.returncode
    return (d["timings"]["cache_lookup"] if d.get("cache") == "hit" else float("nan")), wall, res.returncode


def report(label: str, m: dict, hit: tuple[float, float, int]) -> None:
    ask = m["ask"]
    print(f"{label}: {len(ask)} questions, cold ask p50 {pct(ask, 50):.0f} ms, p95 {pct(ask, 95):.0f} ms")
    print("  stage p50 ms: " + ", ".join(f"{s} {pct(m[s], 50):.0f}" for s in STAGES))
    print(f"  cached answer, new process: cache_lookup {hit[0]:.0f} ms, process {hit[1]:.2f} s, exit {hit[2]}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--store", type=Path, help="a folder with sources.yml and home/")
    ap.add_argument("--smoke", action="store_true", help="a tiny made-up store, seconds")
    ap.add_argument("--corpus", default="rfcs", help="whose questions (bench/answers_dev.jsonl)")
    ap.add_argument("--n", type=int, default=0, help="questions asked (0: all)")
    ap.add_argument("--code", type=Path, action="append", default=[], help="a checkout to measure (repeatable)")
    ap.add_argument("--json", action="store_true", help=argparse.SUPPRESS)  # one checkout's figures, for --code
    args = ap.parse_args()
    if args.smoke:
        args.store = smoke_store()
    elif not args.store:
        ap.error("--store is required (or --smoke)")
    store = args.store.resolve()
    os.environ["DOCFORGE_HOME"] = str(store / "home")
    qs = [f"What does the compiler treat as an error in RFC {i}?" for i in (1, 2)] if args.smoke else None
    qs = qs or questions(args.corpus, args.n)
    if not args.code:
        m, hit = measure(store, qs), cached_in_new_process(store, qs[0], dict(os.environ))
        if args.json:
            print(json.dumps({"m": m, "hit": hit}))
        else:
            report("this checkout", m, hit)
        return
    for code in args.code:
        env = {**os.environ, "PYTHONPATH": str(code.resolve())}
        cmd = [sys.executable, __file__, "--store", str(store), "--corpus", args.corpus, "--n", str(args.n), "--json"]
        res = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=code)
        if res.returncode:
            print(f"{code}: failed (exit {res.returncode}): {res.stderr.strip()[-300:]}")
            continue
        d = json.loads(res.stdout.strip().splitlines()[-1])
        report(str(code), d["m"], tuple(d["hit"]))


def smoke_store() -> Path:
    """The tiny RFCs (bench/smoke.py) ingested into a scratch store: sources.yml and home/."""
    from smoke import scratch, tiny_data

    from pipeline.config import load_settings
    from pipeline.ingest import IngestContext, ingest_source

    store = scratch()
    repo = tiny_data(store / "data") / "rfcs"
    (store / "sources.yml").write_text(
        f"sources:\n  - name: rfcs\n    type: git\n    repo: {repo}\n    globs: ['**/*.md']\n", encoding="utf-8"
    )
    os.environ["DOCFORGE_HOME"] = str(store / "home")
    os.environ.pop("DATABASE_URL", None)
    settings = load_settings(store / "sources.yml")
    ingest_source(IngestContext(settings), "rfcs")
    return store


if __name__ == "__main__":
    main()

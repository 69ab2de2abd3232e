"""`docforge search` and `docforge ask` (extractive) against `docforge --help`, as processes.

    python bench/cli_query.py [--files 30] [--runs 5]
    python bench/cli_query.py --compare /work/main     # also each command on another checkout, interleaved
    python bench/cli_query.py --smoke      # 5 files, one run each

bench/noop.py's pairing for the query commands: a folder of small files (noop.py's) is ingested into a
temporary DOCFORGE_HOME (cold, not timed), each command runs once untimed (the embedded server started,
the model's ONNX export made), then `--runs` rounds time, as separate processes and interleaved (a
machine's load drifts alike for all), `docforge --help`, a search and an ask of a query asked before (its
vector read back from disk, its answer cached), and a search and an ask of a query new to that round (the
model loads). Prints each median and its ratio to `--help` (the issue's bar: at most 3x). `--compare DIR`
times every command a second time with PYTHONPATH=DIR (another checkout: the code before a change) in
the same rounds, on the same store.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tempfile
from pathlib import Path

from noop import DOCFORGE, make_folder, timed

ASKED = "how often are the keys of service 1 rotated?"


def fresh(i: int, tag: str) -> str:
    """A question no other command or round asked (`tag`: which command, which checkout)."""
    return f"which install step does guide {3 * i} name ({tag}, round {i})?"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", type=int, default=30, help="files in the folder (default 30)")
    ap.add_argument("--runs", type=int, default=5, help="timed rounds (default 5)")
    ap.add_argument("--compare", type=Path, help="another checkout to time beside this one (PYTHONPATH)")
    ap.add_argument("--smoke", action="store_true", help="the whole path on a tiny input (bench/smoke.py)")
    args = ap.parse_args()
    if args.smoke:
        args.files, args.runs = 5, 1
    variants = {"": None} | ({f" [{args.compare.name or args.compare}]": args.compare} if args.compare else {})
    commands = {}
    for tag, where in variants.items():
        commands |= {
            f"--help{tag}": (lambda i: ["--help"], where),
            f"search, asked before{tag}": (lambda i: ["search", ASKED], where),
            f"ask, asked before{tag}": (lambda i: ["ask", ASKED], where),
            f"search, new query{tag}": (lambda i, t=tag: ["search", fresh(i, "search" + t)], where),
            f"ask, new question{tag}": (lambda i, t=tag: ["ask", fresh(i, "ask" + t)], where),
        }
    times: dict[str, list[float]] = {name: [] for name in commands}
    with tempfile.TemporaryDirectory(prefix="docforge-cli-query-") as tmp:
        root = Path(tmp)
        folder, cwd = root / "folder", root / "cwd"
        make_folder(folder, args.files)
        cwd.mkdir()
        env = {**os.environ, "DOCFORGE_HOME": str(root / "home"), "HF_HUB_OFFLINE": "1"}
        env.pop("DAGSTER_HOME", None)
        try:
            cold = timed([*DOCFORGE, "ingest", str(folder)], env, cwd)
            for argv in (["search", ASKED], ["ask", ASKED]):  # untimed: the query's vector and answer kept
                timed([*DOCFORGE, *argv], env, cwd)
            for i in range(1, args.runs + 1):
                for name, (argv, where) in commands.items():
                    run_env = {**env, "PYTHONPATH": str(where)} if where else env
                    times[name].append(timed([*DOCFORGE, *argv(i)], run_env, cwd))
        finally:
            subprocess.run([*DOCFORGE, "db", "stop"], env=env, cwd=cwd, stdout=subprocess.DEVNULL, check=False)
    report(cold, args.files + 1, args.runs, times)


def report(cold: float, files: int, runs: int, times: dict[str, list[float]]) -> None:
    print(f"cold ingest of {files} files: {cold:.2f} s; medians of {runs} rounds, interleaved:")
    for name, ts in times.items():
        tag = name[name.index(" [") :] if " [" in name else ""
        base = statistics.median(times["--help" + tag])  # each checkout against its own --help
        med = statistics.median(ts)
        each = ", ".join(f"{t:.2f}" for t in ts)
        print(f"  {name:<30} {med:6.2f} s  {med / base:5.2f}x --help  ({each})")
    print("ratio bar: 3x --help")


if __name__ == "__main__":
    main()

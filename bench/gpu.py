"""The GPU path in one command: cold ingest ÷ raw fp16 encode of the same chunks, on CUDA.

    python bench/gpu.py                          # the 93-file rust-rfcs subset, under 5 minutes
    python bench/gpu.py --subset 'text/*.md'     # the whole corpus
    python bench/gpu.py --smoke                  # a tiny corpus on the GPU; without one, the command it would run

Runs bench/ingest.py with `--device cuda --skip-cli` (torch in fp16 on both sides: the pipeline's
`device: auto` and raw `SentenceTransformer.encode` of exactly its chunk texts, in halves before and
after it) under a time limit, prints its report, and writes every figure, with the GPU's name and the
commit, to `--out` (default bench/results/gpu-<date>.json): the record the docs quote.

Without a CUDA device it says so and exits 0 having measured nothing (`--smoke` also prints the
command it would run; bench/ingest.py's own smoke run covers that path on the CPU).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BUNDLE = "shared/data/corpus/rust-rfcs-md.bundle"
SUBSET = "text/2[0-4]*.md"  # the 93-file subset every ingest figure of docs/performance.md uses
LIMIT_S = 300


def gpu() -> str | None:
    """The first CUDA device's name, or None (no torch, no CUDA build, no device)."""
    try:
        import torch
    except ImportError:
        return None
    return torch.cuda.get_device_name(0) if torch.cuda.is_available() else None


def bundle() -> Path | None:
    """The shared corpus bundle: in the checkout, or beside it (main, or a worktree's folder)."""
    return next((p / BUNDLE for p in (ROOT, *ROOT.parents) if (p / BUNDLE).exists()), None)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--subset", default=SUBSET, help=f"file glob of the corpus (default {SUBSET!r})")
    ap.add_argument("--limit-s", type=int, default=LIMIT_S, help=f"stop after this many seconds (default {LIMIT_S})")
    ap.add_argument("--out", type=Path, help="where the figures go (default bench/results/gpu-<date>.json)")
    ap.add_argument("--smoke", action="store_true", help="a tiny corpus (without a GPU: the command only)")
    args = ap.parse_args()
    name = gpu()
    args_ = ["--skip-cli", "--device", "cuda"] + (["--smoke"] if args.smoke else ["--subset", args.subset])
    if name is None:
        print("no CUDA GPU here (torch sees none): nothing measured.")
        print("Run `python bench/gpu.py` on a machine with an NVIDIA GPU and CUDA torch.")
        if args.smoke:
            print("smoke: it would run python bench/ingest.py " + " ".join(args_))
        return 0
    found = bundle()
    if found is None and not args.smoke:
        print(f"needs the corpus bundle ({BUNDLE}) in or beside the checkout: nothing measured.")
        return 1
    cmd = [sys.executable, str(ROOT / "bench" / "ingest.py"), *args_, *(["--bundle", str(found)] if found else [])]
    out = args.out or ROOT / "bench" / "results" / f"gpu-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    print(f"GPU: {name}; ingest vs raw fp16 encode, limit {args.limit_s} s", flush=True)
    t = time.perf_counter()
    try:
        res = subprocess.run([*cmd, "--json-out", str(out)], timeout=args.limit_s, env={**os.environ})
    except subprocess.TimeoutExpired:
        print(f"stopped after {args.limit_s} s: nothing recorded; try a smaller --subset or a larger --limit-s.")
        return 1
    if res.returncode:
        print(f"bench/ingest.py failed (exit {res.returncode}): nothing recorded.")
        return res.returncode
    record(out, name, args.subset, time.perf_counter() - t)
    return 0


def record(out: Path, name: str, subset: str, wall_s: float) -> None:
    """Add the GPU, the commit and the headline ratio to the figures bench/ingest.py wrote."""
    figures = json.loads(out.read_text())
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    pipe, raw = figures["pipeline"], figures["raw"]
    ratio = (pipe["cold"]["chunks_indexed"] / pipe["cold_s"]) / (figures["texts"]["chunks"] / raw["raw_s"])
    figures |= {"gpu": name, "commit": commit.stdout.strip(), "subset": subset, "wall_s": wall_s, "ratio": ratio}
    out.write_text(json.dumps(figures, indent=2))
    print(f"ratio ingest ÷ raw encode (chunks/s): {ratio:.3f} on {name}; in {wall_s:.0f} s")
    print(f"figures written to {out}")


if __name__ == "__main__":
    sys.exit(main())

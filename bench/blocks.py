"""What typed blocks cost at parse and chunk time, against the same work without them, in one run.

    python bench/blocks.py [DIR ...] [--runs 3]
    python bench/blocks.py --smoke     # a tiny made-up corpus (bench/smoke.py)

DIR: folders of Markdown (default: the uv docs and rust-rfcs bundles of ../shared/data/corpus,
cloned to a temporary folder). Times, as the median of `--runs` (a pair run in turn): markdown-it's heading-only parse
(what the parser ran before blocks) against `parse_markdown` (block tokens, tables, definition
lists, admonitions, and the blocks read from them); and the chunker over those sections with
their blocks against the same sections without. Prints both pairs and their ratios.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from markdown_it import MarkdownIt

from pipeline.chunk import Chunker
from pipeline.config import EmbeddingConfig
from pipeline.embed import Embedder
from pipeline.parse.markdown import parse_markdown

BUNDLES = Path(__file__).resolve().parents[2] / "shared" / "data" / "corpus"


def _medians(a: Callable[[], object], b: Callable[[], object], runs: int) -> tuple[float, float]:
    """Median seconds of `a` and of `b`, run in turn (so a load that drifts weighs on both alike)."""
    times: tuple[list[float], list[float]] = ([], [])
    for _ in range(runs):
        for fn, out in ((a, times[0]), (b, times[1])):
            t0 = time.perf_counter()
            fn()
            out.append(time.perf_counter() - t0)
    return statistics.median(times[0]), statistics.median(times[1])


def _folders(dirs: list[str], tmp: Path) -> list[Path]:
    if dirs:
        return [Path(d) for d in dirs]
    out = []
    for name in ("uv-docs", "rust-rfcs-md"):
        subprocess.run(["git", "clone", "-q", str(BUNDLES / f"{name}.bundle"), str(tmp / name)], check=True)
        out.append(tmp / name)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dirs", nargs="*")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--smoke", action="store_true", help="the whole path on a tiny input, in seconds (bench/smoke.py)")
    args = ap.parse_args()
    if args.smoke:
        from smoke import scratch, tiny_data

        args.dirs, args.runs = [str(tiny_data(scratch()) / "rfcs")], 1
    with tempfile.TemporaryDirectory() as tmp:
        files = [p for d in _folders(args.dirs, Path(tmp)) for p in sorted(d.rglob("*.md"))]
        texts = [p.read_text(encoding="utf-8", errors="replace") for p in files]
    headings = MarkdownIt("commonmark").disable("inline")
    before, after = _medians(
        lambda: [headings.parse(t) for t in texts], lambda: [parse_markdown(t) for t in texts], args.runs
    )
    parsed = [parse_markdown(t) for t in texts]
    bare = [[replace(s, blocks=()) for s in p.sections] for p in parsed]
    emb = Embedder(EmbeddingConfig())
    chunker = Chunker(emb.tokenizer, emb.max_seq_length)
    plain, typed = _medians(
        lambda: [chunker.chunk(p.title, b) for p, b in zip(parsed, bare, strict=True)],
        lambda: [chunker.chunk(p.title, p.sections) for p in parsed],
        args.runs,
    )
    blocks = sum(len(s.blocks) for p in parsed for s in p.sections)
    print(f"{len(files)} Markdown files, {blocks} blocks; median of {args.runs} runs")
    print(f"parse: headings only {before:.2f} s, with blocks {after:.2f} s: {after / before:.2f}x")
    print(f"chunk: without blocks {plain:.2f} s, with blocks {typed:.2f} s: {typed / plain:.2f}x")


if __name__ == "__main__":
    main()

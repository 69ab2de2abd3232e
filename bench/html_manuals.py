"""What an HTML manual's chunks hold, parsed and chunked as ingest does (no store, no embedding).

    python bench/html_manuals.py DIR_OR_GLOB [...] [--baseline path/to/old/html.py] [--limit N]
    python bench/html_manuals.py --smoke    # three made-up pages with a site menu (bench/smoke.py)

Per manual: pages, pages skipped (stubs), chunks, and the share of chunks
  menu      holding a boilerplate line: a prose line (outside code, ≥ 20 characters) found on ≥ 20 %
            of the manual's pages (and ≥ 3);
  no path   with an empty heading path;
  # marks   with a markdown heading marker line (`#`…`######` + space) outside code: a `# ` line in a
            code block is a shell's root prompt or a comment, the page's own text;
  titled    pages whose title is not the same as ≥ 20 % of the manual's others (a generic title).
  furniture blocks found repeated across the manual's pages and left out (`--furniture`, as ingest does).
`--baseline` parses with another html.py too (e.g. a checkout's), for a before/after in one run.
"""

from __future__ import annotations

import argparse
import glob
import importlib.util
import re
import sys
from collections import Counter
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pipeline.chunk import Chunker  # noqa: E402
from pipeline.config import EmbeddingConfig  # noqa: E402
from pipeline.embed import Embedder  # noqa: E402
from pipeline.errors import ParseError  # noqa: E402
from pipeline.parse import html as html_parser  # noqa: E402

MARK = re.compile(r"^#{1,6} ", re.M)
SHARE = 0.2  # a line on a fifth of a manual's pages is the site's, not a page's
MIN_LINE = 20  # characters: shorter common lines are words of the manual ("Note", "Default: off")


def pages(spec: str, limit: int | None) -> list[Path]:
    p = Path(spec)
    found = sorted(p.rglob("*.htm*")) if p.is_dir() else sorted(Path(f) for f in glob.glob(spec))
    return found[:limit] if limit else found


def unfenced(text: str) -> list[str]:
    """A chunk's lines outside code fences, stripped."""
    out, fenced = [], False
    for line in text.split("\n"):
        line = line.strip()
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced:
            out.append(line)
    return out


def prose(text: str) -> list[str]:
    """A chunk's lines of prose: outside code fences, long enough to be a site's rather than a word
    many pages use ("Note", "Default:")."""
    return [line for line in unfenced(text) if len(line) >= MIN_LINE and not MARK.match(line)]


def measure(files: list[Path], parse, chunker: Chunker, furniture: bool = False) -> dict[str, float]:
    pages, skipped, failed = [], 0, 0
    for f in files:
        text = f.read_text("utf-8", "replace")
        try:
            parsed = parse(text)
        except ParseError:
            failed += 1
            continue
        if not parsed.sections:
            skipped += 1
            continue
        pages.append(parsed)
    found: set[str] = set()
    if furniture:  # as ingest leaves a source's repeated blocks out (pipeline.parse.furniture)
        from pipeline.parse.furniture import repeated, strip

        found = repeated(p.sections for p in pages)
        pages = [replace(p, sections=strip(p.sections, found)) for p in pages]
    docs = [(p.title, chunker.chunk(p.title, p.sections)) for p in pages]
    per_page = Counter(line for _, cs in docs for line in {ln for c in cs for ln in prose(c.text)})
    common = {ln for ln, n in per_page.items() if n >= max(3, SHARE * len(docs))}
    chunks = [c for _, cs in docs for c in cs]
    titles = Counter(t for t, _ in docs)
    n = max(1, len(chunks))
    return {
        "pages": len(files),
        "skipped": skipped,
        "failed": failed,
        "chunks": len(chunks),
        "menu %": 100 * sum(any(ln in common for ln in prose(c.text)) for c in chunks) / n,
        "no path %": 100 * sum(not c.heading_path for c in chunks) / n,
        "# marks %": 100 * sum(any(MARK.match(ln) for ln in unfenced(c.text)) for c in chunks) / n,
        "generic titles": sum(k for t, k in titles.items() if k >= max(3, SHARE * len(docs)) or not t),
        "furniture": len(found),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("manuals", nargs="*")
    ap.add_argument("--baseline")
    ap.add_argument("--limit", type=int)
    ap.add_argument("--furniture", action="store_true", help="leave each manual's repeated blocks out, as ingest does")
    ap.add_argument("--smoke", action="store_true", help="the whole path on a tiny input, in seconds (bench/smoke.py)")
    args = ap.parse_args()
    if args.smoke:
        from smoke import scratch, tiny_html

        args.manuals = [str(tiny_html(scratch()))]
    if not args.manuals:
        ap.error("name at least one manual (a folder or a glob of HTML pages), or --smoke")
    emb = Embedder(EmbeddingConfig())
    chunker = Chunker(emb.tokenizer, emb.max_seq_length)
    parsers = {"now": html_parser.parse_html}
    if args.baseline:
        spec = importlib.util.spec_from_file_location("baseline_html", args.baseline)
        assert spec and spec.loader
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        parsers = {"before": mod.parse_html, **parsers}
    for spec_ in args.manuals:
        files = pages(spec_, args.limit)
        for name, parse in parsers.items():
            row = measure(files, parse, chunker, args.furniture and name == "now")
            print(
                f"{spec_[-40:]:40} {name:6} "
                + "  ".join(f"{k} {v:.1f}" if isinstance(v, float) else f"{k} {v}" for k, v in row.items())
            )


if __name__ == "__main__":
    main()

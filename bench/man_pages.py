"""Man pages, as each way they arrive is indexed: chunks without a heading path, fenced, broken words.

    python bench/man_pages.py [PAGE.gz ...] [--ascii]
    python bench/man_pages.py --smoke     # one made-up page, typeset text and its <pre> (no man, no groff)
    PYTHONPATH=/path/to/other/checkout python bench/man_pages.py   # the same, with its parsers

Each page is rendered three ways and parsed and chunked as ingest does (no store):
  text      `man -l PAGE` (what `man` prints into a file: no overstrikes);
  pre       the same typeset with bold kept, written as one `<pre>` with `<b>` for bold (the form
            man-to-HTML scripts that wrap nroff output make);
  groff     `groff -man -Thtml` (headings and paragraphs of its own).
Per way: pages, chunks, % of chunks without a heading path, % holding a code fence, and words broken
across lines left in the chunks (a line ending in a letter and a hyphen, or a hyphen then a space, before a
lowercase fragment the page never writes as a word). Default pages: /work/corpora/man/*.gz.
"""

from __future__ import annotations

import argparse
import glob
import html
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pipeline.chunk import Chunker  # noqa: E402
from pipeline.config import EmbeddingConfig  # noqa: E402
from pipeline.embed import Embedder  # noqa: E402

_BOLD = re.compile(r"((?:(.)\x08\2)+)")
_BROKEN = re.compile(r"([A-Za-z]{2,})[-\u2010](?:\n\s*| )([a-z]{2,})")
_WORD = re.compile(r"[A-Za-z]+")
LOCALE = "C.UTF-8"


def render(page: str) -> dict[str, str]:
    env = {**os.environ, "MANWIDTH": "80", "LC_ALL": LOCALE}
    text = subprocess.run(["man", "-l", page], capture_output=True, text=True, env=env).stdout
    raw = subprocess.run(
        ["man", "-l", page], capture_output=True, text=True, env={**env, "MAN_KEEP_FORMATTING": "1", "MANPAGER": "cat"}
    ).stdout
    raw = re.sub(r"\x1b\[[0-9;]*m", "", raw)
    bold = _BOLD.sub(lambda m: "\x00" + m.group(1)[::3] + "\x01", raw)
    bold = re.sub(r"_\x08(.)", r"\1", bold)
    pre = html.escape(bold).replace("\x00", "<b>").replace("\x01", "</b>")
    with tempfile.TemporaryDirectory() as tmp:  # grohtml writes its images beside it
        groff = subprocess.run(
            f"zcat -f {page} | groff -man -Thtml 2>/dev/null", shell=True, capture_output=True, text=True, cwd=tmp
        ).stdout
    return {"text": text, "pre": f"<html><body><pre>{pre}</pre></body></html>", "groff": groff}


_PAGE = """\
FROB(1)                      General Commands                      FROB(1)

NAME
       frob - frobnicate files

DESCRIPTION
       Frob reads each file named and frobnicates it in place; values are
       comma- or whitespace-separated, and a postmas-
       ter address receives every report the frobnicator writes at exit.

       -v     Say more about what is done, one line for each file read.

frob 1.0                         2024-01-01                        FROB(1)
"""
SMOKE = {
    "text": _PAGE,
    "pre": "<pre>"
    + _PAGE.replace("\nNAME\n", "\n<b>NAME</b>\n").replace("\nDESCRIPTION\n", "\n<b>DESCRIPTION</b>\n")
    + "</pre>",
}


def broken(text: str, words: set[str]) -> int:
    return sum((m.group(1) + m.group(2)).lower() in words or m.group(2) not in words for m in _BROKEN.finditer(text))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("pages", nargs="*")
    ap.add_argument("--ascii", action="store_true", help="typeset in the C locale: ASCII hyphens only")
    ap.add_argument("--smoke", action="store_true", help="one made-up page, in seconds")
    args = ap.parse_args()
    global LOCALE
    LOCALE = "C" if args.ascii else LOCALE
    pages = ["smoke"] if args.smoke else args.pages or sorted(glob.glob("/work/corpora/man/*.gz"))
    from pipeline.parse import parse_document  # as ingest reads a file of that name (any checkout's parsers)
    from pipeline.records import DocRef, Document

    emb = Embedder(EmbeddingConfig())
    chunker = Chunker(emb.tokenizer, emb.document_window)
    totals: dict[str, list[int]] = {}
    for page in pages:
        ways = SMOKE if args.smoke else render(page)
        words = {w.lower() for w in _WORD.findall(ways.get("groff") or ways["text"])}
        for way, content in ways.items():
            name = f"{Path(page).name}.{'txt' if way == 'text' else 'html'}"
            kind = "text" if way == "text" else "html"
            parsed = parse_document(Document(DocRef(f"m:{name}", name), kind, "", "", content, ""))
            chunks = chunker.chunk(parsed.title, parsed.sections)
            row = totals.setdefault(way, [0, 0, 0, 0, 0])
            row[0] += 1
            row[1] += len(chunks)
            row[2] += sum(not c.heading_path for c in chunks)
            row[3] += sum("```" in c.text for c in chunks)
            row[4] += sum(broken(c.text, words) for c in chunks)
    for way, (n, chunks, bare, fenced, br) in totals.items():
        print(
            f"{way:6} pages {n}  chunks {chunks}  no path {100 * bare / max(1, chunks):.1f}%  "
            f"fenced {100 * fenced / max(1, chunks):.1f}%  broken words {br}"
        )


if __name__ == "__main__":
    main()

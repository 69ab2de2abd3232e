"""Sentences of prose, and the prose blocks of a markdown text (re-exported by pipeline.answers.words)."""

from __future__ import annotations

import re

_ABBREV = re.compile(r"\b(?:e\.g|i\.e|etc|vs|cf|approx|fig|no|mr|mrs|ms|dr|st|jr|sr|inc|ltd|co|v)\.$", re.I)
_SENT_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[`*_]*[A-Z0-9])")


def split_sentences(text: str) -> list[str]:
    """Sentences of one paragraph of prose, verbatim (whitespace inside kept)."""
    out, start = [], 0
    for m in _SENT_END.finditer(text):
        piece = text[start : m.start()]
        if _ABBREV.search(piece.rstrip("\"')]")) or re.search(r"\b[A-Z]\.$", piece):
            continue  # "e.g. Foo", "J. Smith": not a sentence end
        out.append(text[start : m.end()].strip())
        start = m.end()
    tail = text[start:].strip()
    if tail:
        out.append(tail)
    return [s for s in out if s]


def prose_blocks(markdown: str) -> list[str]:
    """Paragraphs and list items of a markdown text: code fences, tables, headings and HTML left out."""
    blocks: list[str] = []
    cur: list[str] = []
    fenced = False

    def flush():
        if cur:
            blocks.append(" ".join(cur))
            cur.clear()

    for line in markdown.splitlines():
        s = line.strip()
        if s.startswith(("```", "~~~")):
            fenced = not fenced
            flush()
            continue
        if fenced or line.startswith(("    ", "\t")) and not cur:
            continue
        if not s or s.startswith(("#", "|", "<", ">", "[^")) or re.fullmatch(r"[-=*_ ]{3,}", s):
            flush()
            continue
        if re.match(r"([-*+]|\d+[.)])\s+", s):  # a list item starts a block of its own
            flush()
        cur.append(s)
    flush()
    return blocks

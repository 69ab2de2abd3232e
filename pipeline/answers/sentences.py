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

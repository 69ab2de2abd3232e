"""Near-identical hits collapsed: a page and its printable copy, a page copied with a changed line.

`distinct` (pipeline.query.fusion) lists a chunk text once when two documents hold it byte for
byte; a near copy differs in a line (a date, a "printable version" note, a link) and slips past it.
Here each hit's text is cut into word shingles (SHINGLE words each) and a hit whose shingles are
NEAR_SHARE (Jaccard) of an earlier, better hit's, from another document, is dropped: the reader
already has that text. A result list is a handful of hits, so the exact Jaccard over all pairs is
cheaper than any MinHash sketch would be.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TypeVar

from pipeline.query.hits import Hit

# Five words: short enough that one changed word spoils only five shingles of a chunk, long enough that
# two different pages of one manual share few (their common phrases are shorter).
SHINGLE = 5
# A chunk of ~200 words with one changed line (~10 words) keeps ~0.85 of its shingles; two sections of
# one manual that share a boilerplate paragraph stay under 0.5 (tests/test_near.py has both).
NEAR_SHARE = 0.8
_WORD = re.compile(r"\w+")  # any run of word characters: shingles compare raw texts, no word need be read
H = TypeVar("H", bound=Hit)


def shingles(text: str, size: int = SHINGLE) -> frozenset[tuple[str, ...]]:
    words = [w.casefold() for w in _WORD.findall(text)]
    if len(words) <= size:
        return frozenset({tuple(words)}) if words else frozenset()
    return frozenset(tuple(words[i : i + size]) for i in range(len(words) - size + 1))


def jaccard(a: frozenset, b: frozenset) -> float:
    return len(a & b) / len(a | b) if a and b else 0.0


def collapse(hits: Sequence[H], share: float = NEAR_SHARE) -> list[H]:
    """`hits` (best first) without a hit near-identical to a better one of another document."""
    kept: list[tuple[H, frozenset]] = []
    for hit in hits:
        sh = shingles(hit.text)
        if not any(k.doc_key != hit.doc_key and jaccard(sh, s) >= share for k, s in kept):
            kept.append((hit, sh))
    return [h for h, _ in kept]

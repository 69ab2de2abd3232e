"""A claim read as its evidence sentence edited: the places where it says something else.

A wrong claim is often its evidence sentence with one word or number changed, and the sentence may say the
claim's word elsewhere, of something else ("disabled by default; … have it enabled", "port 6033; its admin
interface is on port 6032"): compared as sets, nothing is missing. Here the claim is aligned word by word
with the sentence (difflib's matching blocks); where at least `edit_kept` of its words stand in the
sentence's order it is that sentence edited, and each place it replaces at most `edit_span` words is an
edit the checks read by place: logical words (logic.py), numbers (`number_replaced`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from functools import lru_cache

import pipeline.answers.verify.policy as policy
from pipeline.answers import words as tx
from pipeline.answers.verify.quantities import quantity_keys


@dataclass(frozen=True)
class Edit:
    """The claim's words, the sentence's, and each place replaced: (claim from, to, sentence from, to)."""

    claim: tuple[str, ...]
    sentence: tuple[str, ...]
    places: tuple[tuple[int, int, int, int], ...]

    def spans(self) -> list[tuple[str, str]]:
        """Each place as (the claim's words, the sentence's words), space-joined."""
        return [(" ".join(self.claim[a:b]), " ".join(self.sentence[c:d])) for a, b, c, d in self.places]


@lru_cache(maxsize=4096)
def edit(claim: str, sentence: str) -> Edit | None:
    """`claim` as `sentence` edited, or None where it rewords the sentence instead (cached: the logical words
    and the numbers of one claim read the same edit)."""
    cw, sw = tuple(tx.words(tx.as_read(claim))), tuple(tx.words(tx.as_read(sentence)))
    if not cw or not sw:
        return None
    sm = SequenceMatcher(None, cw, sw, autojunk=False)
    if sum(b.size for b in sm.get_matching_blocks()) < policy.EDIT_KEPT * len(cw):
        return None
    places = tuple(
        (i1, i2, j1, j2)
        for op, i1, i2, j1, j2 in sm.get_opcodes()
        if op == "replace" and i2 - i1 <= policy.EDIT_SPAN and j2 - j1 <= policy.EDIT_SPAN
    )
    return Edit(cw, sw, places)


def number_replaced(claim: str, sentence: str) -> str | None:
    """Why the claim is the sentence with a number replaced by another in its place ("port 6032" for "port
    6033", though the sentence names 6032 for its admin interface), or None. Quantities are read whole
    ("24 hours" is "86400 seconds"): another way of writing a number is the same number."""
    e = edit(claim, sentence)
    if e is None:
        return None
    mine, theirs = quantity_keys(e.claim), quantity_keys(e.sentence)
    for a, b, c, d in e.places:
        said, there = _values(mine[a:b]), _values(theirs[c:d])
        if said and there and said.isdisjoint(there):
            return f"number {' '.join(e.claim[a:b])!r} stands where the evidence says {' '.join(e.sentence[c:d])!r}"
    return None


def _values(keys: Sequence[str]) -> set[str]:
    """The numbers among `keys`, an ordinal as its number ("a second time" is "twice")."""
    return {k.removesuffix("th") for k in keys if k.startswith("#")}

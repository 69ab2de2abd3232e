"""A claim in the evidence's words: each word the evidence lacks, replaced by an evidence word of one of its
WordNet synsets ("chiefly" → "primarily" when the evidence says "primarily").

The reworded claim then goes through the same checks as any reworded claim (every content word, number,
name and identifier accounted for; polarity; roles), so a synonym can only stand in for a word, never make
a claim pass that says something else. Numbers, units (read with their number), stopwords, negations and
identifiers are never replaced.
Without WordNet (pipeline.answers.lexicon.available() false) the claim is returned unchanged.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache

import pipeline.answers.verify.policy as policy
from pipeline.answers import lexicon
from pipeline.answers import words as tx
from pipeline.answers.verify.blocks import Block

_TOKEN = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)*")


@lru_cache(maxsize=65536)
def synonym_words(word: str) -> tuple[str, ...]:
    """The one-word lemmas sharing a synset with `word`."""
    return tuple(s for s in lexicon.synonyms(word, policy.SYNONYM_SENSES) if s.isalpha())


def _in_block(word: str, b: Block) -> str | None:
    """A key of the block that a synonym of `word` has (only synonyms that begin as one of the block's
    keys are stemmed: a stem keeps a word's first letters)."""
    for s in synonym_words(word):
        if s[:3] in b.key_prefixes and (k := tx.key(s)) in b.keyset:
            return k
    return None


def in_evidence_words(s: str, cited: list[Block], allowed: Callable[[str, Block], bool]) -> str | None:
    """The claim with each word the cited blocks lack (and `allowed` does not let through) replaced by a
    block word of one of its synsets; None when one such word has none (the claim cannot pass so: the
    checks want every word accounted for) or nothing was replaced."""
    if not lexicon.available():
        return None
    idents = " ".join(tx.identifiers(s))
    out, last, replaced = [], 0, False
    for m in _TOKEN.finditer(s):
        folded = tx.fold(m.group(0))
        if (
            not tx.is_content(folded)
            or folded in tx.NEGATIONS
            or folded in tx.NUMBER_WORDS
            or folded in tx.UNITS
            or folded in idents
        ):
            continue
        k = tx.key(folded)
        if any(k in b.keyset or allowed(k, b) for b in cited):
            continue
        hit = next(((b, h) for b in cited if (h := _in_block(folded, b))), None)
        if hit is None:
            return None
        out += [s[last : m.start()], hit[0].word_of(hit[1])]
        last, replaced = m.end(), True
    return "".join(out) + s[last:] if replaced else None

"""A claim in the evidence's words: each word the evidence lacks, replaced by an evidence word of one of its
WordNet synsets ("chiefly" → "primarily" when the evidence says "primarily").

The reworded claim then goes through the same checks as any reworded claim (every content word, number,
name and identifier accounted for; polarity; roles), so a synonym can only stand in for a word, never make
a claim pass that says something else. Numbers, stopwords, negations and identifiers are never replaced.
Without WordNet (pipeline.answers.lexicon.available() false) the claim is returned unchanged.
"""

from __future__ import annotations

import re
from functools import lru_cache

from pipeline.answers import lexicon
from pipeline.answers import words as tx
from pipeline.answers.verify.blocks import Block

_TOKEN = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)*")


@lru_cache(maxsize=65536)
def synonym_keys(word: str) -> frozenset[str]:
    """Stems of the one-word lemmas sharing a synset with `word`."""
    return frozenset(tx.stem(s) for s in lexicon.synonyms(word) if s.isalpha())


def in_evidence_words(s: str, cited: list[Block]) -> str:
    if not lexicon.available():
        return s
    idents = " ".join(tx.identifiers(s))

    def swap(m: re.Match) -> str:
        w = m.group(0)
        folded = tx.fold(w)
        if not tx.is_content(folded) or folded in tx.NEGATIONS or folded in tx.NUMBER_WORDS or folded in idents:
            return w
        k = tx.key(folded)
        if any(k in b.keyset for b in cited):
            return w
        for b in cited:
            hit = synonym_keys(folded) & b.keyset
            if hit:
                return b.word_of(min(hit))
        return w

    return _TOKEN.sub(swap, s)

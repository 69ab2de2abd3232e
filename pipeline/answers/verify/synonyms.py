"""A claim's word found in a cited block through WordNet: an evidence word of one of its synsets ("chiefly"
→ "primarily" when the evidence says "primarily") or, failing that, a near one (a verb, adjective or adverb
a few WordNet links away and no antonym: "passes" → "forwards"). The features read these as shares; a
synonym only stands in for a word, so the other checks still see what the claim says.
Without WordNet (pipeline.answers.lexicon.available() false) no word is found so.
"""

from __future__ import annotations

from functools import lru_cache

import pipeline.answers.verify.policy as policy
from pipeline.answers import lexicon
from pipeline.answers import words as tx
from pipeline.answers.verify.blocks import KEY_PREFIX, CitedBlock

# Near words stand in as verbs, adjectives and adverbs only: another noun names another thing ("port",
# "pod"), which is what a wrong name changes.
NEAR_POS = ("verb", "adj", "adv")


@lru_cache(maxsize=65536)
def synonym_words(word: str, then: str = "") -> tuple[str, ...]:
    """The one-word lemmas sharing a synset with `word` (with `then`: with the two words as one lemma, in any of
    its senses: a two-word lemma names few things, "stand for" is "represent" in its second)."""
    return tuple(s for s in lexicon.synonyms(word, 0 if then else policy.SYNONYM_SENSES, then) if s.isalpha())


def in_block(word: str, b: CitedBlock, then: str = "") -> str | None:
    """A key of the block that a synonym of `word` (of `word then`) has (only synonyms that begin as one of
    the block's keys are stemmed: a stem keeps a word's first letters)."""
    for s in synonym_words(word, then):
        if s[:KEY_PREFIX] in b.key_prefixes and (k := tx.key(s)) in b.keyset:
            return k
    return None


def near_in_block(word: str, b: CitedBlock, claim: frozenset[str]) -> str | None:
    """A key of the block whose word is near `word` in WordNet (lexicon.near): among the words the claim
    does not use of the block's sentence holding most of the claim's words — a word stands for the one
    it replaces, not for any word of a long text."""
    lo, hi = max(b.sentences, key=lambda r: sum(k in claim for k in set(b.keys[r[0] : r[1]])))
    for w, k in zip(b.words[lo:hi], b.keys[lo:hi], strict=True):
        if (
            k not in claim
            and w.isalpha()
            and tx.is_content(w)
            and lexicon.near(word, w, policy.NEAR_SENSES, policy.NEAR_STEPS, NEAR_POS)
        ):
            return k
    return None

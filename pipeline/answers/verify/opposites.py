"""A word of the claim the opposite of a word of its evidence sentence: "temporary" for "permanent".

A wrong claim is often the evidence's sentence with one word replaced by its opposite ("turn on" for "turn
off", "includes" for "omits", "defined" for "undefined"): every other word is found, and the word shares,
the token vectors (an antonym is used in the same contexts, so its vector is near) and the polarity check
(no "not" was added) all miss it. Here a claim word the sentence lacks is compared with the sentence's
words the claim lacks: an antonym in WordNet, or the same word with a negating prefix ("un", "non"). The
model weighs the flag with the rest (`features.opposite`), and a negation the claim adds or drops turns it
back ("not temporary" for "permanent"), so a claim and sentence that differ in negations are left to the
polarity check.
"""

from __future__ import annotations

from pipeline.answers import lexicon
from pipeline.answers import words as tx

_PREFIXES = ("un", "non")  # "undefined", "nonblocking": the word's opposite, when the rest is the word


def _words(text: str) -> list[tuple[str, str]]:
    ws = tx.words(text)
    return [(w, k) for w, k in zip(ws, tx.keys(ws), strict=True) if w.isalpha() and tx.is_content(w)]


def _forms(word: str) -> set[str]:
    return {word, *(b for _, b in lexicon.base_forms(word)), *lexicon.adjective_of(word)}


def opposed(claim: str, sentence: str) -> tuple[str, str] | None:
    """(claim word, evidence word) where one is the other's opposite and neither side says both; None too
    when the two hold a different number of negations ("not acknowledged" for "unacknowledged")."""
    if tx.negations(claim) != tx.negations(sentence):
        return None
    mine, theirs = _words(claim), _words(sentence)
    ck, ek = {k for _, k in mine}, {k for _, k in theirs}
    only_mine = [w for w, k in mine if k not in ek]
    only_theirs = {w: _forms(w) for w, k in theirs if k not in ck}
    for w in only_mine:
        opp = {o for f in _forms(w) for o in lexicon.opposites(f)}
        for e, forms in only_theirs.items():
            if forms & opp or any(e == p + w or w == p + e for p in _PREFIXES):
                return w, e
    return None

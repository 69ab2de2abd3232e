"""A technical term of the claim standing where its evidence sentence names another: "imudp" for "imtcp".

A wrong claim often is its evidence sentence with one name replaced by another of its kind (a program, a
module, a signal, a version): the rest of the sentence is found word for word, the token vectors of two
such names are near, and the anchor checks see no name (a lowercase term is none) or only a number found
elsewhere in the evidence. Here the claim's content words are laid against the aligned evidence sentence's:
a claim word the sentence lacks, whose neighbours there enclose a word the claim lacks, was put in that
word's place; when both words are terms, not English words — no WordNet entry, or digits that are not a
plain number ("0.9.3", "3rd", "sigusr1") —, the claim names another thing than the evidence does. An
English word in the place of a term ("the program" for "dbmmanage") is a rewording and left alone, as are
plain numbers (the anchor checks compare those).
"""

from __future__ import annotations

from pipeline.answers import lexicon
from pipeline.answers import words as tx


def _content(text: str) -> list[tuple[str, str]]:
    ws = tx.words(text)
    return [(w, k) for w, k in zip(ws, tx.keys(ws), strict=True) if tx.is_content(w)]


def is_term(word: str) -> bool:
    """A word that names something rather than says something: digits in it, not a plain number; or
    letters WordNet does not know (with WordNet installed: without it, letters are never terms)."""
    if any(c.isdigit() for c in word):
        return tx.number_value(word) is None
    return word.isalpha() and lexicon.available() and not lexicon.base_forms(word)


def replaced(claim: str, sentence: str) -> tuple[str, str] | None:
    """(the claim's term, the sentence's term it stands in the place of), or None."""
    c, e = _content(claim), _content(sentence)
    ck, ek = [k for _, k in c], [k for _, k in e]
    cs, es = set(ck), set(ek)
    for i, (w, k) in enumerate(c):
        if k in es or not is_term(w):
            continue
        around = (ck[i - 1] if i else None, ck[i + 1] if i + 1 < len(ck) else None)
        if around == (None, None):
            continue
        for j, (v, kk) in enumerate(e):
            if kk in cs or not is_term(v):
                continue
            there = (ek[j - 1] if j else None, ek[j + 1] if j + 1 < len(ek) else None)
            if all(a is None or a == b for a, b in zip(around, there, strict=True)):
                return w, v
    return None

"""A claim in the evidence's words: each word the evidence lacks, replaced by an evidence word of one of its
WordNet synsets ("chiefly" → "primarily" when the evidence says "primarily") or, failing that, by a near
one (a verb, adjective or adverb a few WordNet links away and no antonym: "passes" → "forwards").

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
from pipeline.answers.verify.blocks import CitedBlock

_TOKEN = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)*")
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
        if s[:3] in b.key_prefixes and (k := tx.key(s)) in b.keyset:
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


def in_evidence_words(s: str, cited: list[CitedBlock], allowed: Callable[[str, CitedBlock], bool]) -> str | None:
    """The claim with each word the cited blocks lack (and `allowed` does not let through) replaced by a
    block word of one of its synsets — or, with the word after it, of the synsets of the two as one lemma
    ("stands for" → "represents", "one time" → "once") — None when one such word has none (the claim
    cannot pass so: the checks want every word accounted for) or nothing was replaced."""
    if not lexicon.available():
        return None
    idents = " ".join(tx.identifiers(s))
    claim = frozenset(tx.content_keys(s))
    out, last, replaced = [], 0, False
    tokens = list(_TOKEN.finditer(s))
    i = 0
    while i < len(tokens):
        m = tokens[i]
        folded = tx.fold(m.group(0))
        if pair := _as_one_lemma(s, tokens, i, cited, allowed):
            out += [s[last : m.start()], pair[0]]
            last, replaced, i = pair[1], True, i + 2
            continue
        i += 1
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
        hit = next(((b, h) for b in cited if (h := in_block(folded, b))), None)
        hit = hit or next(((b, h) for b in cited if (h := near_in_block(folded, b, claim))), None)
        if hit is None:
            return None
        out += [s[last : m.start()], hit[0].word_of(hit[1])]
        last, replaced = m.end(), True
    return "".join(out) + s[last:] if replaced else None


def _as_one_lemma(
    s: str, tokens: list[re.Match[str]], i: int, cited: list[CitedBlock], allowed: Callable[[str, CitedBlock], bool]
) -> tuple[str, int] | None:
    """A block word for tokens i and i + 1 read as one WordNet lemma, when one of the two is a word the
    blocks lack, and where the two-word span ends; else None."""
    if i + 1 >= len(tokens) or s[tokens[i].end() : tokens[i + 1].start()] != " ":
        return None
    first, then = tx.fold(tokens[i].group(0)), tx.fold(tokens[i + 1].group(0))
    if first in tx.NEGATIONS or then in tx.NEGATIONS:
        return None
    lacking = [
        w
        for w in (first, then)
        if tx.is_content(w) and not any((k := tx.key(w)) in b.keyset or allowed(k, b) for b in cited)
    ]
    if not lacking:
        return None
    hit = next(((b, h) for b in cited if (h := in_block(first, b, then))), None)
    return (hit[0].word_of(hit[1]), tokens[i + 1].end()) if hit else None

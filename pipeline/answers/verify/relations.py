"""Whether a claim keeps the evidence's relations between its words, not only the words.

A wrong claim is often built from the evidence's own words, recombined: every word is found, yet the words
that stood together in the evidence no longer do, or the claim keeps only a corner of the sentence it
rests on. Word shares cannot tell that from a true rewording; these three features can, in part:

    span   the longest run of the claim's content words that stand consecutively (as content words) in the
           evidence sentence holding most of them, over the claim's content words: a rewording keeps
           phrases of the evidence, a recombination breaks them
    cover  the share of that sentence's content words standing within AROUND of a word the claim says that
           the claim says too: how much of the clause it draws on the claim carries over (a claim that takes
           three words of a sentence and puts its own relation between them covers little; one that says
           one clause of a long sentence, all of it, covers it whole)
    pairs  the share of the claim's neighbouring content-word pairs that stand within NEAR content words
           of each other in one evidence sentence (either order: a passive rewording turns them round)

    order  the share of the claim's words (those it and the sentence each say once) out of the sentence's
           order: one minus their longest run in the sentence's order, over them; a passive of the two read
           actively first (pipeline.answers.verify.sense.active). A rewording keeps who does what to whom
           in order, a swap of roles ("created by A and used by B" for "created by B and used by A") or
           of a clause's parts breaks it. Under three such words it is 0.

Each is 1 for a claim without content words (order 0). Chosen by leave-one-fit-corpus-out accuracy
(`bench/verify_docs.py --loo`); their weights are fitted with the rest of the model.
"""

from __future__ import annotations

from bisect import bisect_left
from functools import lru_cache

import pipeline.answers.verify.sense as sense
from pipeline.answers import words as tx

NEAR = 3  # content words apart: an adjective and its noun, a verb and its object across an article or two
# Content words either side of a claim's word: its clause, roughly. The whole sentence scored 0.6 points more
# leave-one-corpus-out accuracy on the fit sets (87.8 % against 87.2 %) but refused more short true claims of
# long sentences ("Ada Lindqvist directed Harbour Lights" of a sentence naming three people).
AROUND = 2
NAMES = ("span", "cover", "pairs")


@lru_cache(maxsize=16384)
def _keys(sentence: str) -> tuple[str, ...]:
    return tuple(tx.content_keys(sentence))


def _positions(keys: tuple[str, ...]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for i, k in enumerate(keys):
        out.setdefault(k, []).append(i)
    return out


def _near(a: list[int], b: list[int]) -> bool:
    return min(abs(x - y) for x in a for y in b) <= NEAR


def relations(claim: str, sentences: list[str]) -> dict[str, float]:
    """span, cover, pairs and order of claim sentence `claim` against the evidence `sentences`."""
    said = _keys(claim)
    distinct = tuple(dict.fromkeys(said))
    evidence = [_keys(s) for s in sentences]
    if not distinct or not evidence:
        return {**dict.fromkeys(NAMES, 1.0), "order": 0.0}
    mine = set(distinct)
    at = max(range(len(evidence)), key=lambda i: (len(mine.intersection(evidence[i])), -len(evidence[i])))
    best = evidence[at]
    pos = [_positions(ks) for ks in evidence]
    pairs = list(zip(distinct, distinct[1:], strict=False))
    kept = sum(any(a in p and b in p and _near(p[a], p[b]) for p in pos) for a, b in pairs)
    return {
        "span": _longest_run(said, best) / len(said),
        "cover": _cover(mine, best),
        "pairs": kept / len(pairs) if pairs else 1.0,
        "order": _out_of_order(claim, sentences[at]),
    }


def _out_of_order(claim: str, sentence: str) -> float:
    """The share of the claim's words, said once on each side, outside their longest run in the sentence's
    order (0 under three such words)."""
    mine, theirs = sense.active(claim), sense.active(sentence)
    if mine and not theirs:
        claim = mine
    elif theirs and not mine:
        sentence = theirs
    c = [k for k in _keys(claim) if k not in sense.LIGHT]
    e = [k for k in _keys(sentence) if k not in sense.LIGHT]
    at = [e.index(k) for k in dict.fromkeys(c) if c.count(k) == 1 and e.count(k) == 1]
    if len(at) < 3:
        return 0.0
    tails: list[int] = []  # patience sorting: the longest increasing run's length
    for p in at:
        i = bisect_left(tails, p)
        tails[i : i + 1] = [p]
    return 1 - len(tails) / len(at)


def _longest_run(said: tuple[str, ...], sentence: tuple[str, ...]) -> int:
    """The longest run of `said` whose neighbours are neighbours in `sentence` too (a found word alone: 1)."""
    bigrams = set(zip(sentence, sentence[1:], strict=False))
    found = set(sentence)
    best = run = 0
    for i, k in enumerate(said):
        if k not in found:
            run = 0
            continue
        run = run + 1 if i and (said[i - 1], k) in bigrams else 1
        best = max(best, run)
    return best


def _cover(mine: set[str], sentence: tuple[str, ...]) -> float:
    """The share of the sentence's words within AROUND of a claim word that the claim says."""
    at = [i for i, k in enumerate(sentence) if k in mine]
    if not at:
        return 0.0
    around = {sentence[j] for i in at for j in range(max(0, i - AROUND), min(len(sentence), i + AROUND + 1))}
    return len(mine.intersection(around)) / len(around)

"""Sense checks for reworded claims: same polarity as the evidence sentence, names in the same roles."""

from __future__ import annotations

import re
from collections import Counter
from functools import lru_cache

import pipeline.answers.verify.names as names
import pipeline.answers.verify.policy as policy
from pipeline.answers import words as tx
from pipeline.answers.verify.anchors import Anchors, anchors, name_in, positions_of, together
from pipeline.answers.verify.blocks import CitedBlock, bound_cue, number_bounds, roles
from pipeline.answers.verify.polarity import LIGHT, asserted, differs, negations

# A name the evidence does not say, where its sentence has no name the claim leaves out (names.py).
ADDED = "is added: the sentence it rests on leaves out no name it could stand for"
# Two values (numbers, names, identifiers) that trade places: what each is said of is exchanged, as decisive
# as a number the evidence lacks (features.py: of the fit claims, 7 such, all wrong; words trading places
# are a rewording as often as not).
VALUES_TRADED = "the values"
TRADED = "trade places against the evidence"
OTHER_SIDE = "the evidence bounds that number from the other side"
NAME_WORDS = 4  # a bare name, capitalised, runs to four words ("Free Software Foundation Europe"): by hand


def sense_problems(s: str, anc: Anchors, cited: list[CitedBlock]) -> list[str]:
    """For claims that only share words with the evidence: same polarity, same order of names."""
    words = tx.words(s)
    foreign = [  # names the evidence does not say
        name
        for name in anc.proper
        if not any(
            name_in(name, b) or all(tx.key(w) in b.keyset for w in name.split() if tx.is_content(w)) for b in cited
        )
    ]
    keys = {tx.key(w) for w in words if tx.is_content(w) and w not in tx.NEGATIONS}
    best, best_b, best_r = -1.0, None, (0, 0)
    for b in cited:
        shared = Counter(n for k in keys for n in b.key_sentences.get(k, ()))  # only sentences it shares words with
        for n in sorted(shared) or [0]:
            (lo, hi), sk, hit = b.sentences[n], b.sentence_keys[n], shared[n]
            score = hit / (len(keys) or 1) + 0.01 * hit / (len(sk) or 1)  # ties: the more specific sentence
            if score > best:
                best, best_b, best_r = score, b, (lo, hi)
    if best_b is None:
        return [f"name {foreign[0]!r} is not in the cited evidence"] if foreign else []
    lo, hi = best_r
    if foreign:  # a name in the place of one of the evidence sentence's, or one it adds (names.py)
        said = best_b.sentence_text(lo, hi)
        if any(len(n.split()) > 1 or names.stands_for(n, s, said) for n in foreign):
            return [f"name {foreign[0]!r} is not in the cited evidence"]
        return [*_reworded(s, words, keys, anc, cited, best_b, best_r, foreign), f"name {foreign[0]!r} {ADDED}"]
    return _reworded(s, words, keys, anc, cited, best_b, best_r, [])


def _reworded(  # noqa: PLR0913
    s: str,
    words: list[str],
    keys: set[str],
    anc: Anchors,
    cited: list[CitedBlock],
    best_b: CitedBlock,
    best_r: tuple[int, int],
    added: list[str],
) -> list[str]:
    """The sense checks past the names (`added`: the names the claim adds): polarity, bounds, numbers'
    places, names' order and roles."""
    lo, hi = best_r
    # a bare name ("Ford Fusion") asserts no polarity
    short = len(words) <= NAME_WORDS and all(w[:1].isupper() or w[:1].isdigit() for w in s.split()) and not negations(s)
    if not short and differs(s, best_b.sentence_text(lo, hi), keys, " ".join(b.text for b in cited)):
        return ["negation differs from the evidence sentence it matches"]
    if flipped := _bound_flipped(tx.words(asserted(s)), cited):
        return [f"'{flipped}': {OTHER_SIDE}"]
    far = [
        n
        for n in anc.numbers
        if not any(lo - policy.WINDOW <= p < hi + policy.WINDOW for p in best_b.positions.get(n, []))
    ]
    if far:
        return [f"number {far[0][1:]} is not where the evidence says what the claim says"]
    if len(anc.proper) >= 2 and not any(together(anc.proper, anc, b) for b in cited):
        return ["its names never appear together in the cited evidence"]
    named = anc.proper + anc.idents + anc.numbers
    first = re.match(r"\s*([A-Z][\w'’-]+)", s)  # a capital at the start may be a name too
    if first and first.group(1).lower() not in tx.STOPWORDS and tx.normalise(first.group(1)).strip() not in named:
        named = [tx.normalise(first.group(1)).strip()] + named
    voiced = _same_voice(s, best_b, lo, hi)
    if pair := crossed(*voiced) or exchanged(*voiced):
        values = anc.proper + anc.idents
        if all(tx.normalise(w).strip() in values or tx.number_value(w) is not None for w in pair):
            return [f"{VALUES_TRADED} {pair[0]!r} and {pair[1]!r} {TRADED}"]
        return [f"{pair[0]!r} and {pair[1]!r} {TRADED}"]
    if len(named) >= 2 and _swapped(s, named, anc, best_b, lo, hi):
        return ["names appear in swapped roles in the evidence"]
    if bad := _other_agent(s, cited):
        return [f"the evidence says someone else {bad}"]
    # a name the claim adds (the evidence never says it) is held apart from nothing there
    if bad := _relation_apart(s, [a for a in named if a not in added], anc, cited):
        return [f"the evidence never says {bad!r} of them in one sentence"]
    if (stray := _stray_anchor(s, anc, cited)) is not None:
        said = _as_said(stray, s, anc)
        return [f"{said!r} is said elsewhere in the evidence, not in the sentence that says the rest of the claim"]
    return []


def _bound_flipped(words: list[str], cited: list[CitedBlock]) -> str | None:
    """A number the claim bounds from one side ("at most 30 minutes") that the evidence bounds only from
    the other ("at least 30 minutes"): the claim's words for it."""
    for k, sides in number_bounds(words).items():
        known = set().union(*(_bounds(b.text).get(k, {}) for b in cited))
        for side, i in sides.items():
            if side and -side in known and side not in known:
                return " ".join((*bound_cue(words, i)[0], words[i]))
    return None


@lru_cache(maxsize=4096)
def _bounds(text: str) -> dict[str, dict[int, int]]:
    """The bounds of a text's numbers as it asserts them: "can't keep more than 60 s" bounds 60 s from above
    (polarity.asserted), as the claim's "at most a minute" does."""
    return number_bounds(tx.words(asserted(text)))


def _stray_anchor(s: str, anc: Anchors, cited: list[CitedBlock]) -> str | None:
    """A name, number or identifier of the claim that no evidence sentence holding every other word of the
    claim holds, where such a sentence has one of the same kind the claim lacks: the claim put a value
    from elsewhere in its place ("changes on Monday" against "changes on Wednesday. We avoid Monday
    handovers"). One such a sentence has no counterpart for may be its subject, named before it ("This
    module requires …")."""
    if not anc.all:
        return None
    anchor_keys = {k for a in anc.all for k in ([a] if a.startswith("#") else tx.content_keys(a))}
    rest = {k for k in tx.content_keys(s) if k not in anchor_keys and k not in tx.NEGATIONS}
    if not rest:
        return None
    holding = [(b, n) for b in cited for n, sk in enumerate(b.sentence_keys) if rest <= sk]
    there = {(id(b), n): anchors(b.sentence_text(*b.sentences[n])) for b, n in holding}
    for kind in ("numbers", "idents", "proper"):
        for a in getattr(anc, kind):
            said = {id(b): ps for b in cited if (ps := positions_of(a, anc, b))}
            if not said or any(_in_sentence(said.get(id(b), []), b, n) for b, n in holding):
                continue  # not in the evidence (the anchor checks' business), or where the rest is said
            mine = set(getattr(anc, kind))  # a sentence with one of this kind the claim does not have
            if any(set(getattr(there[id(b), n], kind)) - mine for b, n in holding):
                return a
    return None


def _as_said(anchor: str, s: str, anc: Anchors) -> str:
    """An anchor as the claim writes it: a number's words ("30 minutes" for #1800), an identifier as typed."""
    if anchor.startswith("#"):
        ws = tx.words(s)
        return " ".join(w for w, k in zip(ws, tx.keys(ws), strict=True) if k == anchor) or anchor[1:]
    return next((e for e in anc.exact if tx.normalise(e).strip() == anchor), anchor)


def _in_sentence(positions: list[int], b: CitedBlock, n: int) -> bool:
    """Whether the positions are in sentence n, or name what it refers to ("It was founded in …")."""
    return any(p < 0 for p in positions) or n in b.referred(positions)


def _other_agent(s: str, cited: list[CitedBlock]) -> str | None:
    """The claim names who did something ("X directed Y"); the evidence says who did it ("directed by Z")
    and it is not X."""
    claim = roles(s, [tx.key(w) for w in tx.words(s)])
    if not claim:
        return None
    stated: dict[str, list[frozenset[str]]] = {}
    for b in cited:
        for k, agent in b.roles:
            stated.setdefault(k, []).append(agent)
    for k, agent in claim:
        if k in stated and not any(agent <= a for a in stated[k]) and any(agent <= b.keyset for b in cited):
            return next(w for w in tx.words(s) if tx.key(w) == k)
    return None


def _relation_apart(s: str, named: list[str], anc: Anchors, cited: list[CitedBlock]) -> str | None:
    """What a claim says joins two names ("X founded Y") must be said in one sentence of the evidence that
    holds both: the raw material of a fabrication is names and words the evidence holds apart."""
    claim = CitedBlock(s)
    spots = sorted((ps[0], a) for a in named if (ps := positions_of(a, anc, claim)) and ps[0] >= 0)
    for (p, x), (q, y) in zip(spots, spots[1:], strict=False):
        rel = {
            k
            for k, w in zip(claim.keys[p + len(x.split()) : q], claim.words[p + len(x.split()) : q], strict=False)
            if tx.is_content(w) and k not in LIGHT
        }
        if not rel or len(rel) > policy.MAX_RELATION:
            continue  # nothing joins them, or a clause of its own
        named_keys = claim.keys[p : p + len(x.split())] + claim.keys[q : q + len(y.split())]
        need = rel | {k for k in named_keys if k not in tx.STOPWORDS}
        if not any(need <= sk for b in cited for sk in _windows(b)):
            return " ".join(w for k, w in zip(claim.keys[p:q], claim.words[p:q], strict=False) if k in rel)
    return None


def _windows(b: CitedBlock) -> list[frozenset[str]]:
    return b.sentence_windows


def _swapped(s: str, named: list[str], anc: Anchors, b: CitedBlock, lo: int, hi: int) -> bool:
    """Two names joined by the same relation words in the claim and in the evidence sentence, but in
    the opposite order ("A acquired B" against "B acquired A"); passives ("by") are left alone."""
    claim = CitedBlock(s)
    if "by" in claim.words or "by" in b.words[lo:hi]:
        return False
    for i, x in enumerate(named):
        for y in named[i + 1 :]:
            cx, cy = positions_of(x, anc, claim), positions_of(y, anc, claim)
            ex = [p for p in positions_of(x, anc, b) if lo <= p < hi]
            ey = [p for p in positions_of(y, anc, b) if lo <= p < hi]
            if not (cx and cy and ex and ey) or cx[0] < 0 or cy[0] < 0:
                continue
            if (cx[0] < cy[0]) == (ex[0] < ey[0]):
                continue
            c_lo, c_hi = sorted((cx[0], cy[0]))
            e_lo, e_hi = sorted((ex[0], ey[0]))
            rel_c = {
                k
                for k, w in zip(claim.keys[c_lo + 1 : c_hi], claim.words[c_lo + 1 : c_hi], strict=False)
                if tx.is_content(w)
            }
            rel_e = {
                k for k, w in zip(b.keys[e_lo + 1 : e_hi], b.words[e_lo + 1 : e_hi], strict=False) if tx.is_content(w)
            }
            rel_c -= set(claim.keys[cx[0] : cx[0] + len(x.split())]) | set(claim.keys[cy[0] : cy[0] + len(y.split())])
            if rel_c and rel_c <= rel_e:
                return True
    return False


# An identifier of joined words ("git-am", "--icu-data-dir", "NODE_ICU_DATA") and a short quoted value ("on")
# are one thing each: two of them exchanged are two things exchanged, though their words are each other's
# (read word by word, "pack" is inside "pack-index"). Fit claims: swaps refused 39 → 43 of 65, no true one more.
_JOINED = re.compile(r"(?<![\w-])-{0,2}([^\W_]+(?:[-_][^\W_]+)+)")
_QUOTED = re.compile(r'"([^"\s]{1,16})"')


def _units(text: str) -> list[tuple[str, str]]:
    """The content words of `text` as (word, key), an identifier or a quoted value one word."""
    spans: dict[str, str] = {}

    def one(m: re.Match[str]) -> str:
        mark = f"zunit{len(spans)}z"  # one word to tx.words, never a word of the text
        spans[mark] = m.group(0)
        return f" {mark} "

    text = _JOINED.sub(one, _QUOTED.sub(one, tx.fold(text)))
    ws = tx.words(text)
    return [
        (spans[w], tx.normalise(spans[w]).strip()) if w in spans else (w, k)
        for w, k in zip(ws, tx.keys(ws), strict=True)
        if w in spans or (tx.is_content(w) and k not in LIGHT)
    ]


def _neighbours(seq: list[str], i: int) -> set[tuple[int, str]]:
    """The words before (-1) and after (1) position i, within CROSS_REACH."""
    return {(-1, k) for k in seq[max(0, i - policy.CROSS_REACH) : i]} | {
        (1, k) for k in seq[i + 1 : i + 1 + policy.CROSS_REACH]
    }


# A passive clause and its agent: "<patient> is <verb> by <agent>[ when/if/for … ]". Said in the active voice
# ("<agent> <verb> <patient> …"), each word keeps the company it has in an active sentence.
_PASSIVE = re.compile(
    r"^(?P<patient>.+?)\s+(?:is|are|was|were|be|been|being|gets|get|got)\s+(?:\w+ly\s+)?(?P<verb>[^\W\d]+)"
    r"\s+by\s+(?P<agent>[^,;:]+?)(?P<rest>\s+(?:when|if|unless|after|before|while|because|for|on|in|at)\b.*)?$",
    re.I,
)


def active(sentence: str) -> str | None:
    """`sentence` in the active voice when it is one passive clause with its agent ("The unit is restarted by
    the script" → "the script restarted The unit"), else None."""
    m = _PASSIVE.match(sentence.strip().rstrip("."))
    return f"{m['agent']} {m['verb']} {m['patient']}{m['rest'] or ''}" if m else None


def _same_voice(s: str, b: CitedBlock, lo: int, hi: int) -> tuple[str, CitedBlock, int, int]:
    """The claim and its evidence sentence in one voice: a passive one of the two said actively."""
    claim, evidence = active(s), active(b.sentence_text(lo, hi))
    if claim and not evidence:
        return claim, b, lo, hi
    if evidence and not claim:
        other = CitedBlock(evidence)
        return s, other, 0, len(other.words)
    return s, b, lo, hi


def crossed(s: str, b: CitedBlock, lo: int, hi: int) -> tuple[str, str] | None:
    """Two words that each occur once in the claim and once in the evidence sentence, where each keeps
    the other's company: the words next to x in the claim are next to y in the evidence and the other
    way round ("set by the Kernel and enforced by the superuser" against "set by the superuser and
    enforced by the Kernel"; "0 if … and 1 otherwise" against "1 if … and 0 otherwise"). Company, not
    word order: a reworded or passive claim keeps each word's neighbours, a swapped one trades them."""
    claim, ev = _units(s), _units(b.sentence_text(lo, hi))
    cseq, eseq = [k for _, k in claim], [k for _, k in ev]
    once = [k for k in dict.fromkeys(cseq) if cseq.count(k) == 1 and eseq.count(k) == 1]
    if len(once) < 2:
        return None
    nc = {k: _neighbours(cseq, cseq.index(k)) for k in once}
    ne = {k: _neighbours(eseq, eseq.index(k)) for k in once}
    for i, x in enumerate(once):
        for y in once[i + 1 :]:
            pair = {(side, k) for side in (-1, 1) for k in (x, y)}
            straight = len((nc[x] & ne[x]) - pair) + len((nc[y] & ne[y]) - pair)
            cross = len((nc[x] & ne[y]) - pair) + len((nc[y] & ne[x]) - pair)
            if cross - straight >= policy.CROSS_MARGIN:
                word = dict((k, w) for w, k in claim)
                return word[x], word[y]
    return None


def exchanged(s: str, b: CitedBlock, lo: int, hi: int) -> tuple[str, str] | None:
    """Two words, not next to each other, whose exchange puts the claim's words in the evidence sentence's
    order (of the words each holds once): "set by the Kernel and enforced by the superuser" against
    "set by the superuser and enforced by the Kernel" when the sentence is too short for company to
    tell. Neighbours may trade places ("reads and writes" = "writes and reads"), and a reworded claim
    that reorders more than two words is not one exchange away."""
    claim = _units(s)
    eseq = [k for _, k in _units(b.sentence_text(lo, hi))]
    cseq = [k for _, k in claim]
    once = [k for k in dict.fromkeys(cseq) if cseq.count(k) == 1 and eseq.count(k) == 1]
    at = [eseq.index(k) for k in once]  # the claim's words, as places in the evidence
    order = sorted(at)
    off = [i for i, (p, q) in enumerate(zip(at, order, strict=True)) if p != q]
    if len(off) == 2 and off[1] - off[0] > 1 and at[off[0]] == order[off[1]]:
        word = dict((k, w) for w, k in claim)
        return word[once[off[0]]], word[once[off[1]]]
    return None

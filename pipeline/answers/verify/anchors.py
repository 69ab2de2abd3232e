"""Anchors: the names, numbers, identifiers and dates a claim stands on, and where they are in a block."""

from __future__ import annotations

import re
from bisect import bisect_left
from dataclasses import dataclass, field

import pipeline.answers.verify.policy as policy
from pipeline.answers import words as tx
from pipeline.answers.verify.blocks import CitedBlock, find_dates

_CONNECT = tx.NAME_CONNECTORS - {"and", "&"}  # "A and B" are two names, not one
_NOT_COUNTS = frozenset({"one", "single", "half", "double", "twice", "triple", "dozen"})


@dataclass
class Anchors:
    proper: list[str]  # normalised multi-word (or mid-sentence) proper nouns
    numbers: list[str]  # number keys ("#3") that must occur
    idents: list[str]  # normalised code identifiers
    dates: list[tuple[int, int | None, int]]
    exact: list[str]  # the identifiers as written (folded): each must occur so, not inside a longer one
    quoted: list[str] = field(default_factory=list)  # "…"-quoted text (normalised): a quote is verbatim

    @property
    def all(self) -> list[str]:
        return self.proper + self.idents + self.numbers


def anchors(sentence: str) -> Anchors:
    folded_raw = tx.fold(sentence)
    proper = proper_nouns(sentence)
    exact = tx.identifiers(sentence)
    idents = list(dict.fromkeys(n for i in exact if (n := tx.normalise(i).strip())))
    numbers = []
    ws = tx.words(sentence)
    for w, k in zip(ws, tx.keys(ws), strict=True):
        # "one", "half" alone are no counts ("one of them"); with a unit they are ("one day", "half an hour")
        if (w in _NOT_COUNTS and k == tx.key(w)) or w in tx.ORDINALS or not k.startswith("#") or k.endswith("th"):
            continue
        if k not in numbers:
            numbers.append(k)
    quoted = [q for m in tx.QUOTED.finditer(folded_raw) if (q := tx.normalise(m.group(1)).strip())]
    return Anchors(proper, numbers, idents, find_dates(folded_raw), exact, quoted)


def proper_nouns(sentence: str) -> list[str]:
    """Runs of capitalised words (inner 'of'/'for'/… allowed): multi-word ones, or single ones not
    at the start of a sentence (a capital there says nothing)."""
    # not words.words: a name keeps its case, "&", "-" and dots ("AT&T", "Node.js"), and punctuation ends a run
    tokens = re.findall(r"[\w'’&-]+(?:\.\w+)*|[.!?:;,()\"]", sentence)
    out: list[str] = []
    run: list[tuple[str, bool]] = []

    def close() -> None:
        words = [w for w, _ in run]
        initial = bool(run) and run[0][1]
        while words and words[-1].lower() in _CONNECT:
            words.pop()
        # "Lowering the MTU …", "Using the API …": a verb's -ing form opening the sentence, its object after
        # "the"; its capital is the sentence's ("Alexander the Great", "First for Women" stay names)
        if initial and len(words) > 2 and words[0].lower().endswith("ing") and words[1].lower() == "the":
            words, initial = words[2:], False
        while words and words[0].lower() in tx.STOPWORDS:  # "The Open Group" → "Open Group"
            words.pop(0)
            initial = False
        if len(words) >= 2 or (len(words) == 1 and not initial):
            phrase = tx.normalise(" ".join(words)).strip()
            if phrase and phrase not in out:
                out.append(phrase)
        run.clear()

    start = True
    for i, t in enumerate(tokens):
        if t in ".!?:;":
            close()
            start = True
            continue
        if t in ',()"':
            close()
            continue
        if t.lower() in tx.UNITS and i and tx.number_value(tokens[i - 1].lower()) is not None:
            close()  # "16 KiB", "10 MB": a unit read with its number, not a name
        elif t[0].isupper() and t != "I":
            run.append((t, start))
        elif run and t.lower() in _CONNECT and i + 1 < len(tokens) and tokens[i + 1][0].isupper():
            run.append((t, False))
        else:
            close()
        start = False
    close()
    return out


def positions_of(a: str, anc: Anchors, b: CitedBlock) -> list[int]:
    if a.startswith("#"):
        return b.positions.get(a, [])
    return b.phrase_at(" " + a + " ") or b.phrase_at(" " + a + "s ")  # "Paul Allen" in "Paul Allen's sister"


def near(spots: list[list[int]], b: CitedBlock) -> bool:
    """Some choice of one position per anchor lies within WINDOW tokens (unknown positions match)."""
    known = [[p for p in ps if p >= 0] for ps in spots]
    known = [ps for ps in known if ps]
    if len(known) < 2:
        return True
    return within(known, policy.WINDOW)


def within(spots: list[list[int]], span: int) -> bool:
    """Some position of the first list has one of every other list within `span` tokens (lists are
    ascending: a binary search each, not a scan)."""
    return any(
        all((j := bisect_left(ps, start - span)) < len(ps) and ps[j] <= start + span for ps in spots[1:])
        for start in spots[0]
    )


def together(names: list[str], anc: Anchors, b: CitedBlock) -> bool:
    """Two or more names must meet in one sentence of the block (or within TIGHT tokens): names that
    the evidence only mentions apart are the raw material of swapped-entity fabrications."""
    spots = [[p for p in positions_of(a, anc, b) if p >= 0] for a in names]
    spots = [ps for ps in spots if ps]
    if len(spots) < 2:
        return True
    if set.intersection(*(b.referred(ps) for ps in spots)):
        return True
    return within(spots, policy.TIGHT)


def anchor_problems(anc: Anchors, cited: list[CitedBlock], skip: frozenset[str] = frozenset()) -> list[str]:
    """What the evidence lacks of the claim's anchors (`skip`: identifiers judged elsewhere)."""
    problems = []
    for d in anc.dates:
        if not any(_date_in(d, b) for b in cited):
            month = list(tx.MONTHS)[d[0] - 1].title()
            day = "" if d[1] is None else f"{d[1]} "
            problems.append(f"date {month} {day}{d[2]} is not in the cited evidence")
    for n in anc.numbers:
        if not any(n in b.keyset for b in cited):
            problems.append(f"number {n[1:]} is not in the cited evidence")
    for ident in anc.exact:
        if ident not in skip and not ident_cited(ident, cited):
            problems.append(f"identifier {ident!r} is not in the cited evidence")
    for q in anc.quoted:  # quotation marks say "these very words": "001" is not "0001"
        if not any(f" {q} " in f" {hay} " for b in cited for hay in (b.norm, b.norm_plain)):
            problems.append(f"the quoted {q!r} is not in the cited evidence")
    if anc.proper and not any(name_in(p, b) for p in anc.proper for b in cited):
        problems.append(f"none of its names ({', '.join(anc.proper)}) is in the cited evidence")
    return problems


def ident_cited(ident: str, cited: list[CitedBlock]) -> bool:
    """Whether a cited block holds the identifier (folded) as written, not inside a longer one."""
    return any(tx.ident_in(ident, b.folded_plain) or tx.ident_in(ident, b.folded) for b in cited)


def name_in(p: str, b: CitedBlock) -> bool:
    """The name as written, or in the possessive: "Paul Allen's" in the evidence, "Jon Ellis's" in the claim."""
    forms = (p, p + "s", p[:-1]) if p.endswith("s") else (p, p + "s")
    return any(f" {f} " in hay for f in forms for hay in (b.norm, b.norm_plain))


def _date_in(d: tuple[int, int | None, int], b: CitedBlock) -> bool:
    month, day, year = d
    return any(m == month and y == year and (day is None or dd == day) for m, dd, y in b.dates)

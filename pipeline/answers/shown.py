"""What an extractive reply shows of its ranked lines (pipeline.answers.extractive ranks them).

Sure (`choose`): the best line and the next best scoring `follow` of it, each with what it needs to be
read — the code block a line introduces, the entry a line is of (term first), an entry section's first
line. Unsure (`candidates`): a passage from each of the best sections, best first (`passage`: the best
line with the whole lines that complete it, bounded), a section another document's shown chunk already
holds word for word skipped (a manual's one-page copy). Every line shown is a whole line of its chunk
(pipeline.answers.units), so it is quoted verbatim: STRICT by construction.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Protocol

import numpy as np

from pipeline.answers import words as tx
from pipeline.answers.units import MAX_WORDS, Unit, units


class Scored(Protocol):
    """A question's ranked lines (pipeline.answers.extractive.Ranked): each line and its logit."""

    @property
    def units(self) -> list[Unit]: ...

    @property
    def logits(self) -> np.ndarray: ...

    @property
    def sims(self) -> np.ndarray: ...  # each line's cosine to the question (0 where not embedded)


# Passages offered when unsure, the best of as many different sections (issue 46: 2–3), each its best line
# with the lines that complete it, at most PASSAGE_WORDS words: the rest of its paragraph after it, then
# before it, then the lines after and before it in its chunk (a short section, such as a man page's
# option, whole). Fitted together on the kept rankings of 14 fit corpora's 450 answerable asks
# (bench/phrase_losses.py --keep; 2026-12-07), the answer phrase in the reply, and a reply's median words:
#     3 passages of  80 words  385  222        2 passages of 120 words  382  198
#     3 passages of 100 words  391  258        2 passages of 140 words  389  216
#     3 passages of 160 words  402  331        2 passages of 160 words  392  228 (180, 200: 392)
# For as many words, more of the best section buys more answers than a third section does; 160 is where
# more words stop buying any.
CANDIDATES = 2
PASSAGE_WORDS = 160
# A section's best line seldom stands alone in a long section: its other lines scoring within CLOSE_LOGITS of
# it (the line model's logits; at most CLOSE_LINES, each with up to CLOSE_WORDS words around it) come with
# its passage. Replayed on the shipped line model's rankings (the candidates alone, 80-word passages):
# 16 fit corpora's 514 answerable asks, their earlier stores, 439 hold the phrase without; (δ 0.1, 40 words)
# 448, (0.3, 40) 457, (0.5, 40) 466, (0.5, 20) 463, (1.0, 30) 470 at 226 words a reply; three fit corpora's
# whole HTML manuals (60 asks of bench/phrase_losses.py --whole) 39 → 41 at (0.5, 40).
# The median reply grows from 193 to 209 words.
CLOSE_LOGITS = 0.5
CLOSE_LINES = 2
CLOSE_WORDS = 40


def candidates(r: Scored, order: list[int], n: int = CANDIDATES) -> list[Unit]:
    """The passage (`passage`) of the best line of each of the `n` best sections (document and
    section), best first, with its chunk's lines scoring close to it (`_close`, each with a short
    passage); an entry section's under its first line, a definition under its term."""
    out: list[Unit] = []
    seen: set[tuple[str, str]] = set()
    copies: set[tuple[str, str]] = set()  # sections whose best passage another document already showed
    for i in order:
        u = r.units[i]
        where = (u.evidence.doc_key, u.evidence.section)
        if len(seen) >= n or not np.isfinite(r.logits[i]):
            break
        if where in seen or where in copies or any(_same(u, c) for c in out):
            continue
        shows = passage(u, PASSAGE_WORDS)
        if _copied(shows, out):
            copies.add(where)
            continue
        seen.add(where)
        for j in _close(r, order, i):  # a line of its chunk scoring about as well comes with it
            if not any(_same(r.units[j], v) for v in shows):
                shows += [v for v in passage(r.units[j], CLOSE_WORDS) if not any(_same(v, w) for w in shows)]
        out += _in_order([v for v in shows if v.kind != "heading" and not any(_same(v, c) for c in out)])
    return out


def _close(r: Scored, order: list[int], i: int) -> list[int]:
    """The CLOSE_LINES best other lines of line `i`'s chunk scoring within CLOSE_LOGITS of it, then its
    line nearest the question by meaning (`_nearest`) where that is not line `i`."""
    u = r.units[i]
    floor = r.logits[i] - CLOSE_LOGITS
    same = [j for j in order if j != i and r.units[j].evidence.pointer == u.evidence.pointer]
    close = [j for j in same if np.isfinite(r.logits[j]) and r.logits[j] >= floor][:CLOSE_LINES]
    near = _nearest(r, i, same)
    return close + [near] if near is not None and near not in close else close


def _nearest(r: Scored, i: int, same: list[int]) -> int | None:
    """Of the ranked lines `same` of line `i`'s chunk, the one nearest the question by the embedding
    model's cosine, when it is nearer than line `i`: the line model weighs a line's words and place
    too, and a terse line that states the answer ("The default is 32 minutes") can lose to one that
    repeats the question's words. No threshold: nearer or not. Replayed on six fit corpora's kept
    rankings (144 answerable asks, bench/phrase_losses.py: four whole HTML manuals and the two
    regression sets): the answer phrase in the reply 107 → 109, none lost, the median reply 218 → 223 words
    (a margin of 0.05 in cosine: 110 at 225; the nearest line always: 111 at 249)."""
    ranked = [j for j in same if np.isfinite(r.logits[j])]
    if not ranked:
        return None
    j = max(ranked, key=lambda k: r.sims[k])
    return j if r.sims[j] > r.sims[i] else None


def _copied(lines: list[Unit], shown: list[Unit]) -> bool:
    """Every line of `lines` is text of a chunk of another document already shown: the same section in
    a manual's one-page and per-chapter copies, which would take a candidate's place and add nothing."""
    mine = {v.evidence.doc_key for v in lines}
    others = {c.evidence.pointer: c.evidence for c in shown if c.evidence.doc_key not in mine}
    texts = [" ".join(e.text.split()) for e in others.values()]
    return bool(texts) and all(any(" ".join(v.text.split()) in t for t in texts) for v in lines)


def held(r: Scored, shown: list[Unit]) -> dict[str, float]:
    """For rendering: each shown evidence block's (by pointer) best line's P(holds the answer) by the
    line model — a candidate's confidence (one candidate, one block: its lines come from its chunk)."""
    blocks = {u.evidence.pointer for u in shown}
    out: dict[str, float] = {}
    for u, logit in zip(r.units, r.logits, strict=True):
        if u.evidence.pointer in blocks and np.isfinite(logit):
            p = round(float(1 / (1 + np.exp(-logit))), 3)
            out[u.evidence.pointer] = max(out.get(u.evidence.pointer, 0.0), p)
    return out


def passage(u: Unit, words: int = PASSAGE_WORDS) -> list[Unit]:
    """`u` as a reader would want it shown, in chunk order: under its entry's first line (an entry
    section, `_entry_section`) or its term (a definition), `u` and whole lines while at most `words`
    words — the rest of its block after it, then before it, then the lines after and before it in its
    chunk (a short section, such as a man page's option, whole). Adding the chunk's next best line by
    the line model before the neighbours, whatever it scored, bought no answer on the fit corpora (111
    → 108 of 140); one scoring close to the best does (`candidates`, CLOSE_LOGITS)."""
    chunk = units(u.evidence)
    at = u.position - 1
    if not (0 <= at < len(chunk)) or chunk[at].text != u.text:
        return [u]
    head = chunk[:1] if _entry_section(u) else [t for t in (_term(u),) if t is not None]
    floor = head[0].position if head else 0  # the head is shown apart: never grown into
    keep = {at}
    size = len(tx.words(u.text)) + sum(len(tx.words(t.text)) for t in head if t.position - 1 != at)

    def fits(j: int) -> bool:
        nonlocal size
        add = len(tx.words(chunk[j].text))
        if j in keep or size + add > words:
            return j in keep
        keep.add(j)
        size += add
        return True

    def around(within: Callable[[Unit], bool]) -> None:
        for step in (1, -1):
            j = at + step
            while floor <= j < len(chunk) and within(chunk[j]) and fits(j):
                j += step

    around(lambda v: v.block == u.block)  # its paragraph or entry line, then its packed section, then the chunk
    around(lambda v: v.heading == u.heading)
    around(lambda v: True)
    return _in_order([t for t in head if t.position - 1 not in keep] + [chunk[j] for j in keep])


def choose(r: Scored, order: list[int], follow: float, max_lines: int) -> list[Unit]:
    """The best line, then each next best scoring `follow` of its probability (never one saying the
    same as a chosen line); a line introducing a code block is followed by the block, and a line of an
    entry (a term and its definition: an option, a setting, a command) brings the whole entry, term
    first, when it is at most ENTRY_LINES long (else the term and the line); a line of an entry section
    (`_entry_section`) brings that entry, its first line with the default first."""
    p = 1 / (1 + np.exp(-r.logits))
    chosen: list[Unit] = []
    lead = 0
    for i in order:
        if lead >= max_lines or (chosen and p[i] < follow * p[order[0]]):
            break
        u = r.units[i]
        if any(_same(u, c) for c in chosen):
            continue
        entry = _entry_section(u) or _entry(u)
        if entry:
            chosen += [e for e in entry if not any(_same(e, c) for c in chosen)]
        else:
            if (term := _term(u) or _heading(u)) is not None and not any(_same(term, c) for c in chosen):
                chosen.append(term)
            chosen.append(u)
        lead += 1
        nxt = _next(r.units, i)
        if u.text.rstrip().endswith(":") and nxt is not None and nxt.kind == "code" and nxt not in chosen:
            chosen.append(nxt)
    return chosen


# A line that shares more than this share of the shorter line's content words (and the same code) with a
# chosen line says the same thing: set by hand, not fitted (a reworded repeat keeps most of its words).
SAME_WORDS = 0.7
_LABELS = frozenset({"heading", "term"})  # lines that name what other lines speak of
ENTRY_LINES = 6  # an entry up to this many lines is quoted whole (a manual's option: name, text, default)


ENTRY_WORDS = 2 * MAX_WORDS  # an entry section quoted whole: at most two of the longest lines quoted whole


def _entry_section(u: Unit) -> list[Unit]:
    """The entry section `u` is in, quoted: its first line (the entry's term with the rest of it, such
    as "name (default: 102400)"), then its lines in order up to ENTRY_WORDS words; the first line and
    `u` where `u` lies beyond. A parser makes each entry of a reference its own section, its heading
    the entry's term (pipeline.parse.events): the chunk is such a section when its first line opens
    with its section's last heading. [] for any other chunk."""
    chunk = units(u.evidence)
    name = " ".join(u.evidence.section.rsplit(" > ", 1)[-1].split())
    if len(chunk) < 2 or not name or not re.match(re.escape(name) + r"(?!\w)", " ".join(chunk[0].text.split())):
        return []
    out: list[Unit] = []
    size = 0
    for v in chunk:
        size += len(tx.words(v.text))
        if out and size > ENTRY_WORDS:
            break
        out.append(v)
    if all(v.position != u.position for v in out):
        out = [chunk[0], chunk[u.position - 1]]
    return out


def _entry(u: Unit) -> list[Unit]:
    """The entry `u` belongs to — its term and every line after it up to the next term, in its chunk —
    when it has a definition and is at most ENTRY_LINES long; else []."""
    term: Unit | None = u
    steps = 0
    while term is not None and term.kind != "term" and steps < ENTRY_LINES:
        term, steps = term.previous, steps + 1
    if term is None or term.kind != "term":
        return []
    chunk = units(u.evidence)
    start = term.position - 1
    out = [chunk[start]] if start < len(chunk) and chunk[start].text == term.text else []
    for v in chunk[start + 1 :] if out else []:
        if v.kind == "term" or len(out) > ENTRY_LINES:
            break
        out.append(v)
    if len(out) < 2 or len(out) > ENTRY_LINES or out[1].kind != "definition":
        return []
    return out


def _term(u: Unit) -> Unit | None:
    """The term a definition defines: the line before it in its chunk, when that is a term."""
    prev = u.previous
    return prev if u.kind == "definition" and prev is not None and prev.kind == "term" else None


def _in_order(lines: list[Unit]) -> list[Unit]:
    """Lines of one chunk in its order (a passage and the close lines it brings), each packed section's
    lines under its heading."""
    out: list[Unit] = []
    for v in sorted({v.position: v for v in lines if v.kind != "heading"}.values(), key=lambda v: v.position):
        if (h := _heading(v)) is not None and not (out and out[-1].heading == h.heading):
            out.append(h)
        out.append(v)
    return out


def _heading(u: Unit) -> Unit | None:
    """The heading line of the packed section `u` is in, as a line to show above it: a reader is told
    which entry ("4.2. timeout") a line of a chunk packing several is about."""
    return Unit(u.heading, "heading", u.evidence, 0, heading=u.heading) if u.heading else None


def _next(us: list[Unit], i: int) -> Unit | None:
    if i + 1 < len(us) and us[i + 1].evidence.pointer == us[i].evidence.pointer:
        return us[i + 1] if us[i + 1].position == us[i].position + 1 else None
    return None


def _same(a: Unit, b: Unit) -> bool:
    """Says the same as an already chosen line: the same text, or mostly the same words and code. A
    heading or a term only names what lines speak of: it is the same only as its own text (a line
    repeating a heading's two words says more than the heading)."""
    if " ".join(a.text.split()) == " ".join(b.text.split()):
        return True
    if {a.kind, b.kind} & _LABELS:
        return False
    if set(a.code) != set(b.code):
        return False
    ka, kb = set(tx.content_keys(a.text)), set(tx.content_keys(b.text))
    return len(ka & kb) / (min(len(ka), len(kb)) or 1) > SAME_WORDS

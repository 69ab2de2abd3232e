"""What the extractive answerer measures of each candidate line, and of a question's best lines.

Nothing here names a corpus, a language, a product or a syntax: a line is described by the model's
similarity to the question, by how much of the question's rare words (IDF over the index's chunks) it,
its headings, its neighbours and its document carry, by its block kind and place, by its document's
own retrieval rank, and by whether it holds a value of the kind the question asks for. The kinds
(params "kinds": a number, an option, a path, a command, an identifier) are told apart in a question by
the model — its similarity to each kind's description — and in a line by its block kind and its code
spans, never by a list of names. A question is described by its best line's scores, the share of its
words the index lacks and the share of its anchors (capitalised names, identifiers, quoted strings) its
best line's document lacks. How the measures combine is fitted (pipeline.answers.params).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from pipeline.answers import lexicon
from pipeline.answers import words as tx
from pipeline.answers.subject import CorpusStats, Question, read
from pipeline.answers.units import Unit

LINE = (
    "sim",  # cosine of the question and the line (the index's model)
    "sim_gap",  # the line's similarity less the best line's
    "terms",  # IDF-weighted share of the question's words the line carries
    "head",  # ... its document title and section carry
    "ctx",  # ... the lines either side of it carry
    "doc_terms",  # ... its whole document (the retrieved chunks) carries
    "doc_rr",  # 1 / its document's retrieval rank
    "chunk_rr",  # 1 / its chunk's retrieval rank
    "score_rel",  # its chunk's retrieval score ÷ the best chunk's
    "about_gap",  # how close its document's opening is to the question, less the closest opening
    "lead",  # it is the first line of its chunk
    "pos_rr",  # 1 / its position in its chunk
    "k_sentence",
    "k_item",
    "k_row",
    "k_code",
    "k_term",
    "k_note",
    "has_code",  # holds an inline code span (or is code)
    "log_words",
    "lower_start",  # starts lowercase: often a sentence cut at a chunk's edge
    "colon_end",  # ends with ':' (introduces what follows)
    "want_match",  # Σ over kinds: how much the question asks for the kind × the line holds one
    "want_next",  # the same for the line after it (a sentence that introduces a code block)
)
# No IDF scale, and nothing of the runner-up line: a fact a page says once is as answerable as one it repeats
# (with the second line's score, a small wiki whose every fact has one line looked unanswerable).
QUESTION = (
    "best",  # the best line's logit
    "best_sim",
    "best_terms",
    "best_doc_terms",
    "unseen",  # IDF share of the question's words the whole index lacks
    "anchors_missing",  # share of its anchors (names, identifiers, quoted strings) the best line's document lacks
    # Whether the index holds what the question is about at all (issue 46: another product's feature, an
    # option that does not exist): the whole index's word statistics, not only the retrieved chunks.
    "rare_df",  # log(1 + chunks of the whole index holding its rarest word or anchor as written)
    "anchors_absent",  # share of its anchors no chunk of the whole index holds as written
    "sec_terms",  # IDF share of its words the best line's section (its retrieved lines, headings) carries
    "sec_rare",  # share of its RARE rarest words the best line's section carries (or a WordNet synonym)
    "pool_rare",  # ... any retrieved line or heading carries
)
RARE = 2  # the question's rarest words read by sec_rare and pool_rare: a product and its feature
# What the confidence model reads besides QUESTION: whether search agrees with the line chosen, by how much
# the chosen line beats the best of another section, and how much of the question it answers by meaning.
AGREEMENT = (
    "best_doc_rr",  # 1 / the retrieval rank of the best line's document (1: search ranked it first)
    "best_score_rel",  # its chunk's retrieval score ÷ the best chunk's
    "best_about_gap",  # its document's opening's similarity less the closest opening's (0: the closest)
    "retrieval_margin",  # the top document's retrieval score less the next document's, ÷ the top one's
    "line_margin",  # the best line's logit less the best logit of a line of another section (capped)
    "cover",  # IDF share of the question's words the best line, its headings and neighbours carry,
    # a word counting when a WordNet synonym of it is there (by meaning, not spelling)
    "best_head",  # ... its document title and section carry (an entry named as asked)
    "best_want",  # it holds a value of the kind the question asks for
    "rare",  # the question's rarest word (highest IDF) is carried as for `cover`
    "sim_first",  # 1 / the best line's rank by similarity alone among the lines
    "terms_first",  # its share of the question's words less the most any line carries
    "rivals",  # log(1 + sections whose best line scores within one logit of it)
)
CONFIDENCE = QUESTION + AGREEMENT
# What the shown model reads besides CONFIDENCE when unsure: the reply is the candidates' passages, right or
# wrong by what they hold, not only by the best line (issue 46: the one answer's confidence told replies apart
# with AUROC ~0.65).
OFFERED = (
    "offered_cover",  # IDF share of the question's words the passages shown, their titles and sections carry
    "offered_rare",  # ... of its RARE rarest words
    "offered_top",  # a passage is from the document search ranked first
    "offered_want",  # a line shown holds a value of the kind the question asks for
)
SHOWN = CONFIDENCE + OFFERED
MARGIN_CAP = 6.0  # logits: a line with no rival of another section is this far ahead (beyond: all certain)
KINDS = ("number", "option", "path", "command", "identifier")
_DIGIT = re.compile(r"\d")


def question(
    text: str, idf: dict[str, float], absent: frozenset[str], want: dict[str, float], stats: CorpusStats | None = None
) -> Question:
    """`read`, with what the extractive model reads: the kinds it asks for, its words' synonyms, and from
    the index's statistics (`stats`) how many chunks hold each word and each hard anchor as written."""
    q = read(text, idf, absent)
    stats = stats or CorpusStats()
    named = [h for h in q.hard if tx.content_keys(h)]
    anchor_df = tuple(stats.anchor_df[h] for h in named if h in stats.anchor_df) if stats.chunks else ()
    df = {k: n for k, n in stats.df.items() if k in q.keys}
    return replace(q, want=want, near=near(text, q.keys), df=df, anchor_df=anchor_df)


def near(text: str, keys: dict[str, float] | dict[str, None]) -> dict[str, frozenset[str]]:
    """Each content word's WordNet synonyms (its first sense), as keys: "biggest" meets "largest"."""
    out: dict[str, frozenset[str]] = {}
    for w in tx.words(text):
        k = next(iter(tx.content_keys(w)), "")
        if k in keys and k not in out:
            out[k] = frozenset(s for syn in lexicon.synonyms(w.lower(), senses=1) for s in tx.content_keys(syn)) - {k}
    return out


def kinds_of(u: Unit) -> dict[str, float]:
    """Which kinds of value a line holds, from its block kind and code spans."""
    spans = [" ".join(c.split()) for c in u.code]
    code = u.kind == "code"
    return {
        "number": 1.0 if _DIGIT.search(u.text) else 0.0,
        "option": 1.0
        if any(s.startswith("-") or "=" in s for s in spans) or (u.kind in ("term", "table_row") and spans)
        else 0.0,
        "path": 1.0 if any("/" in s or _has_extension(s) for s in spans) else 0.0,
        "command": 1.0 if code or any(" " in s and s[:1].islower() for s in spans) else 0.0,
        "identifier": 1.0 if any(s and " " not in s for s in spans) else 0.0,
    }


def _read(u: Unit) -> str:
    """A line as a reader meets it: under its document's title and section."""
    return f"{u.evidence.title}\n{u.evidence.section}\n{u.text}"


def _has_extension(span: str) -> bool:
    """A file name of any extension: a dot inside a word, a letter after it."""
    stem, dot, ext = span.rpartition(".")
    return bool(dot and ext[:1].isalpha() and ext.isalnum() and (stem == "" or stem[-1:].isalnum()))


def line_features(
    q: Question,
    units: Sequence[Unit],
    sims: Sequence[float],
    about: dict[str, float],
) -> np.ndarray:
    """One row of LINE per unit. `about`: doc_key → its opening's similarity to the question."""
    total = sum(q.keys.values()) or 1.0
    ukeys = [frozenset(tx.content_keys(u.text)) for u in units]

    def share(keys: frozenset[str] | set[str]) -> float:
        return sum(w for k, w in q.keys.items() if k in keys) / total

    docs: dict[str, set[str]] = {}
    heads: dict[str, frozenset[str]] = {}
    doc_rank: dict[str, int] = {}
    chunk_rank: dict[str, int] = {}
    for u, ks in zip(units, ukeys, strict=True):
        e = u.evidence
        docs.setdefault(e.doc_key, set()).update(ks)
        if e.pointer not in heads:
            heads[e.pointer] = frozenset(tx.content_keys(f"{e.title} {e.section}"))
            docs[e.doc_key].update(heads[e.pointer])
        doc_rank.setdefault(e.doc_key, len(doc_rank) + 1)
        chunk_rank.setdefault(e.pointer, len(chunk_rank) + 1)
    top_score = max((u.evidence.score for u in units), default=0.0) or 1.0
    best_sim = max(sims, default=0.0)
    best_about = max(about.values(), default=0.0)
    kinds = [kinds_of(u) for u in units]
    match = [sum(q.want.get(k, 0.0) * v for k, v in ks.items()) for ks in kinds]
    rows = []
    for i, (u, ks, sim) in enumerate(zip(units, ukeys, sims, strict=True)):
        e = u.evidence
        same_before = i > 0 and units[i - 1].evidence.pointer == e.pointer
        same_after = i + 1 < len(units) and units[i + 1].evidence.pointer == e.pointer
        ctx = (ukeys[i - 1] if same_before else frozenset()) | (ukeys[i + 1] if same_after else frozenset())
        words = len(tx.words(u.text))
        rows.append(
            [
                sim,
                sim - best_sim,
                share(ks),
                share(heads[e.pointer]),
                share(ctx),
                share(docs[e.doc_key]),
                1.0 / doc_rank[e.doc_key],
                1.0 / chunk_rank[e.pointer],
                max(0.0, e.score) / top_score if top_score > 0 else 0.0,
                about.get(e.doc_key, best_about) - best_about,
                1.0 if u.position == 1 else 0.0,
                1.0 / u.position,
                1.0 if u.kind == "sentence" else 0.0,
                1.0 if u.kind == "list_item" else 0.0,
                1.0 if u.kind == "table_row" else 0.0,
                1.0 if u.kind == "code" else 0.0,
                1.0 if u.kind in ("term", "definition") else 0.0,
                1.0 if u.kind in ("note", "quote") else 0.0,
                1.0 if u.code else 0.0,
                math.log1p(words),
                1.0 if u.text[:1].islower() else 0.0,
                1.0 if u.text.rstrip().endswith(":") else 0.0,
                match[i],
                match[i + 1] if same_after else 0.0,
            ]
        )
    return np.array(rows, dtype=np.float64).reshape(len(units), len(LINE))


def question_features(q: Question, logits: np.ndarray, x: np.ndarray, units: Sequence[Unit]) -> np.ndarray:
    """QUESTION for a question whose lines (`units`) scored `logits` (line features `x`)."""
    best = int(np.argmax(logits))
    doc = units[best].evidence.doc_key
    have = {k for u in units if u.evidence.doc_key == doc for k in tx.content_keys(_read(u))}
    missing = sum(not a <= have for a in q.anchors) / len(q.anchors) if q.anchors else 0.0
    col = {n: i for i, n in enumerate(LINE)}
    where = (units[best].evidence.doc_key, units[best].evidence.section)
    section = {k for u in units if (u.evidence.doc_key, u.evidence.section) == where for k in tx.content_keys(_read(u))}
    pool = {k for u in units for k in tx.content_keys(_read(u))}
    return np.array(
        [
            logits[best],
            x[best, col["sim"]],
            x[best, col["terms"]],
            x[best, col["doc_terms"]],
            q.unseen,
            missing,
            rare_df(q, units),
            sum(n == 0 for n in q.anchor_df) / len(q.anchor_df) if q.anchor_df else 0.0,
            _carried(q, section),
            _carried(q, section, RARE),
            _carried(q, pool, RARE),
        ],
        dtype=np.float64,
    )


def rare_df(q: Question, units: Sequence[Unit]) -> float:
    """log(1 + the chunks of the whole index holding the question's rarest word or anchor as written);
    without the index's statistics (a restricted caller), the retrieved lines holding its rarest word."""
    if q.df or q.anchor_df:
        return math.log1p(min([*q.df.values(), *q.anchor_df]))
    seen = [frozenset(tx.content_keys(u.text)) for u in units]
    return math.log1p(min((sum(k in s for s in seen) for k in q.keys), default=0))


def _carried(q: Question, have: set[str], rarest: int = 0) -> float:
    """IDF share of the question's words (`rarest`: of its `rarest` rarest only) that `have` carries, a
    word counting when a WordNet synonym of it is there."""
    keys = q.keys
    if rarest:
        keys = {k: keys[k] for k in sorted(keys, key=lambda k: -keys[k])[:rarest]}
    total = sum(keys.values()) or 1.0
    return sum(w for k, w in keys.items() if k in have or q.near.get(k, frozenset()) & have) / total


def confidence_features(q: Question, logits: np.ndarray, x: np.ndarray, units: Sequence[Unit]) -> np.ndarray:
    """CONFIDENCE: QUESTION, then AGREEMENT for the best line."""
    base = question_features(q, logits, x, units)
    best = int(np.argmax(logits))
    col = {n: i for i, n in enumerate(LINE)}
    u = units[best]
    where = (u.evidence.doc_key, u.evidence.section)
    rivals = [float(v) for v, o in zip(logits, units, strict=True) if (o.evidence.doc_key, o.evidence.section) != where]
    rival = max((v for v in rivals if np.isfinite(v)), default=float(logits[best]) - MARGIN_CAP)
    tops: dict[str, float] = {}
    for o in units:
        tops[o.evidence.doc_key] = max(tops.get(o.evidence.doc_key, 0.0), max(0.0, o.evidence.score))
    ranked = sorted(tops.values(), reverse=True)
    margin = (ranked[0] - ranked[1]) / ranked[0] if len(ranked) > 1 and ranked[0] > 0 else 1.0
    return np.concatenate(
        [
            base,
            [
                x[best, col["doc_rr"]],
                x[best, col["score_rel"]],
                x[best, col["about_gap"]],
                margin,
                min(MARGIN_CAP, float(logits[best]) - rival),
                cover(q, units, best),
                x[best, col["head"]],
                x[best, col["want_match"]],
                cover(q, units, best, rarest=True),
                1.0 / (1 + int((x[:, col["sim"]] > x[best, col["sim"]]).sum())),
                x[best, col["terms"]] - float(x[:, col["terms"]].max()),
                math.log1p(len(_close_sections(logits, units, best))),
            ],
        ]
    )


def _close_sections(logits: np.ndarray, units: Sequence[Unit], best: int) -> set[tuple[str, str]]:
    """The other sections (document, section) with a line within one logit of the best line."""
    where = (units[best].evidence.doc_key, units[best].evidence.section)
    return {
        (u.evidence.doc_key, u.evidence.section)
        for v, u in zip(logits, units, strict=True)
        if np.isfinite(v) and v >= logits[best] - 1.0
    } - {where}


def cover(q: Question, units: Sequence[Unit], i: int, rarest: bool = False) -> float:
    """IDF share of the question's words that line `i`, its headings and its neighbours in its chunk carry,
    by spelling or by a WordNet synonym (`rarest`: whether its rarest word is carried, 1 or 0)."""
    u = units[i]
    near_lines = [units[j] for j in (i - 1, i + 1) if 0 <= j < len(units)]
    same = [o.text for o in near_lines if o.evidence.pointer == u.evidence.pointer]
    have = set(tx.content_keys(" ".join([_read(u), *same])))
    keys = q.keys
    if rarest and keys:
        top = max(keys, key=lambda k: keys[k])
        keys = {top: keys[top]}
    total = sum(keys.values()) or 1.0
    return sum(w for k, w in keys.items() if k in have or q.near.get(k, frozenset()) & have) / total


def shown_features(
    q: Question, logits: np.ndarray, x: np.ndarray, units: Sequence[Unit], shown: Sequence[Unit]
) -> np.ndarray:
    """SHOWN: CONFIDENCE, then OFFERED for the lines `shown` (the candidates' passages)."""
    have = {k for u in shown for k in tx.content_keys(_read(u))}
    top = {u.evidence.doc_key for u, r in zip(units, x[:, LINE.index("doc_rr")], strict=True) if r >= 1.0}
    want = max((sum(q.want.get(k, 0.0) * v for k, v in kinds_of(u).items()) for u in shown), default=0.0)
    offered = [_carried(q, have), _carried(q, have, RARE), float(any(u.evidence.doc_key in top for u in shown)), want]
    return np.concatenate([confidence_features(q, logits, x, units), offered])

"""Answers without an LLM: the lines of the evidence that answer the question, verbatim, with pointers.

Candidates are the whole lines of the retrieved chunks (pipeline.answers.units: sentences, list items,
table rows, terms, code blocks). Each is described by general measures (pipeline.answers.features) and
scored by the fitted line model (pipeline.answers.params): the probability that it holds the answer.
The answer is the best line and the next best that score at least `follow` of it (1–max lines, best
first; a line that introduces a code block brings the block). Whether to answer at all is the question
model's: fed the best line's scores, how much of the question the index knows, it gives the
probability that what was retrieved answers the question, and below its fitted threshold the answer
abstains. The reported confidence is the confidence model's: the fitted probability that the answer
holds the answer. Every line is verbatim text of the block it cites, so the answer is STRICT by
construction (the loop drops a line the verifier would not pass as quoted).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from pipeline.answers import features as ft
from pipeline.answers import words as tx
from pipeline.answers.model import Evidence
from pipeline.answers.params import Params
from pipeline.answers.shown import candidates, choose, held
from pipeline.answers.subject import CorpusStats, idf
from pipeline.answers.units import Unit, units

MAX_LINES = 4  # lines an answer shows at most: the parameters were fitted with it (bench/fit_answers.py)
MAX_CANDIDATES = 64  # lines considered per question: those carrying most of its words, then retrieval order
# Of those, the lines embedded: the best by the line model read without what embeddings decide (what the
# others cost is a forward pass each, the most of a cold ask). Measured on the fit corpora's 275
# questions with the shipped parameters (bench/fit_answers.py --embedded): the same answer for 275 at 24
# (16: 273, 12: 265); the confidence moves on some, the best line's similarity gap being taken over
# fewer lines. 0 (a fit): all of them.
EMBEDDED = 24
LEAD_CHARS = 400  # of a document's opening, embedded to tell which document the question is about


Embed = Callable[[Sequence[str]], "Sequence[Sequence[float]]"]  # question first, then documents


@dataclass(frozen=True)
class Extract:
    lines: list[tuple[str, Evidence]]  # (line, the evidence it is quoted from), best first
    reason: str = ""  # why it abstained, when lines is empty
    confidence: float = 0.0  # fitted P(the answer holds the answer)
    answerable: float = 0.0  # fitted P(what was retrieved answers the question)
    similarity: float = 0.0  # of the best line to the question (cosine)
    score: float = 0.0  # the best line's P(holds the answer)
    sure: bool = False  # confidence ≥ the fitted `sure`: labelled as answering; else `lines` are candidates
    single: float = 0.0  # fitted P(the answer chosen holds the answer): what `sure` and `floor` read
    held: dict[str, float] = field(default_factory=dict)  # unsure: each candidate's P by pointer (shown.held)


@dataclass(frozen=True)
class Ranked:
    """Every embedded candidate of a question with its features and line-model score."""

    question: ft.Question
    units: list[Unit]
    x: np.ndarray  # features.LINE per unit
    logits: np.ndarray
    reason: str = ""  # when there is nothing to rank

    @property
    def sims(self) -> np.ndarray:
        """Each line's cosine to the question (0 for a line not embedded)."""
        return self.x[:, _SIM] if len(self.x) else np.zeros(0)

    def order(self) -> list[int]:
        return [int(i) for i in np.argsort(-self.logits, kind="stable")]

    def question_x(self) -> np.ndarray:
        return ft.question_features(self.question, self.logits, self.x, self.units)

    def confidence_x(self) -> np.ndarray:
        return ft.confidence_features(self.question, self.logits, self.x, self.units)

    def shown_x(self, shown: list[Unit], names: tuple[str, ...] = ft.SHOWN) -> np.ndarray:
        """features.SHOWN for the lines `shown`, in `names` order (a model fitted on CONFIDENCE reads those)."""
        row = dict(zip(ft.SHOWN, ft.shown_features(self.question, self.logits, self.x, self.units, shown), strict=True))
        return np.array([row[n] for n in names])


def rank(
    question: str,
    evidence: list[Evidence],
    params: Params,
    *,
    embed: Embed | None = None,
    stats: CorpusStats | None = None,
    leads: dict[str, tuple[str, str]] | None = None,
    embedded: int | None = None,
) -> Ranked:
    """The candidate lines of `evidence` (in retrieval order) scored against `question`: the `embedded`
    best by what needs no embedding of them (`worth_embedding`) are embedded and ranked; the others keep
    their place in the list (a line's neighbours) and are never chosen."""
    stats = stats or CorpusStats()
    every = [u for e in evidence for u in units(e)]
    kinds = list(params.kinds)
    openings = {k: lead_line(*v) for k, v in (leads or {}).items()} if embed else {}
    q0 = ft.question(question, stats.idf or _local_idf(question, every), stats.absent, {}, stats)
    if not q0.keys or not every:
        why = "nothing retrieved" if not every else "the question names no subject"
        return Ranked(q0, [], np.zeros((0, len(ft.LINE))), np.zeros(0), why)
    cands = _prefilter(every, q0)
    want = _cosines(question, [params.kinds[k] for k in kinds], embed)  # constant texts: looked up after once
    mean = sum(want) / len(want) if want else 0.0
    q = replace(q0, want={k: w - mean for k, w in zip(kinds, want, strict=True)})  # its synonyms kept
    rows = worth_embedding(ft.line_features(q, cands, [0.0] * len(cands), {}), params, embedded)
    # the documents' openings and the chosen lines in one pass of the model
    sims = _cosines(question, [*openings.values(), *(cands[i].text for i in rows)], embed)
    about = dict(zip(openings, sims[: len(openings)], strict=True))
    line_sims = np.zeros(len(cands))
    line_sims[rows] = sims[len(openings) :]
    x, logits = ranked_rows(ft.line_features(q, cands, line_sims.tolist(), about), rows, params)
    return Ranked(q, cands, x, logits)


# What a line's embedding decides: its similarity, its gap to the best line's, and (through the openings,
# embedded in the same pass) its document's gap to the best-matching document's.
_BLIND = [ft.LINE.index(n) for n in ("sim", "sim_gap", "about_gap")]
_SIM, _SIM_GAP = _BLIND[:2]


def worth_embedding(x: np.ndarray, params: Params, embedded: int | None = None) -> np.ndarray:
    """The rows to embed, in list order: the `embedded` (default EMBEDDED; 0: all) best by the line model
    read with what embeddings decide at its mean."""
    n = EMBEDDED if embedded is None else embedded
    if not n or len(x) <= n:
        return np.arange(len(x))
    blind = x.copy()
    blind[:, _BLIND] = params.line.mean[_BLIND]
    return np.sort(np.argsort(-params.line.logit(blind), kind="stable")[:n])


def ranked_rows(x: np.ndarray, rows: np.ndarray, params: Params) -> tuple[np.ndarray, np.ndarray]:
    """Line-model logits of the embedded `rows` (their similarity gap taken to the best of them); the
    others' is -inf: never chosen."""
    x = x.copy()
    if len(rows):
        x[rows, _SIM_GAP] = x[rows, _SIM] - x[rows, _SIM].max()
    logits = np.full(len(x), -np.inf)
    logits[rows] = params.line.logit(x[rows])
    return x, agree(x, logits, params.overrule)


_DOC_RR = ft.LINE.index("doc_rr")


def agree(x: np.ndarray, logits: np.ndarray, overrule: float) -> np.ndarray:
    """Logits where the line choice agrees with search: the best line of the page search ranked first
    wins unless another page's line scores more than `overrule` (fitted) above it — a better-ranked page
    loses only for a measured reason. The winner is raised just above the best; nothing else moves."""
    if not len(logits) or overrule <= 0:
        return logits
    first = np.flatnonzero((x[:, _DOC_RR] >= 1.0) & np.isfinite(logits))
    if not len(first):
        return logits
    top = int(first[np.argmax(logits[first])])
    best = int(np.argmax(logits))
    if best == top or logits[best] - logits[top] > overrule:
        return logits
    out = logits.copy()
    out[top] = logits[best] + 1e-6
    return out


def extract(
    question: str,
    evidence: list[Evidence],
    params: Params,
    max_lines: int = MAX_LINES,
    *,
    embed: Embed | None = None,
    stats: CorpusStats | None = None,
    leads: dict[str, tuple[str, str]] | None = None,
) -> Extract:
    """The lines of `evidence` that answer `question`, or none with a reason."""
    return decide(question, rank(question, evidence, params, embed=embed, stats=stats, leads=leads), params, max_lines)


def decide(question: str, r: Ranked, params: Params, max_lines: int = MAX_LINES) -> Extract:
    """Answer, offer candidates, or abstain from ranked lines: below the question model's threshold, or
    below the confidence `floor`, it abstains; at a confidence ≥ `sure` the chosen lines are the answer;
    between, the best lines of CANDIDATES different sections are offered, best first, as candidates, and
    the confidence reported is theirs (params `shown`: P(one of them holds the answer)), the reply's."""
    if r.reason:
        return Extract([], r.reason)
    if gone := r.question.unknown():  # a name the documentation never mentions: about something else
        return Extract([], f"the index does not know {', '.join(gone[:3])}")
    answerable = float(params.question.prob(r.question_x()))
    cx = r.confidence_x()
    confidence = round(float(params.confidence.prob(cx)), 3)
    order = r.order()
    best = order[0]
    sim = round(float(r.x[best, ft.LINE.index("sim")]), 3)
    score = round(float(1 / (1 + np.exp(-r.logits[best]))), 3)
    if answerable < params.threshold:
        return Extract([], _why(question, r, answerable, params.threshold), confidence, answerable, sim, score)
    if confidence < params.floor:
        why = f"no passage answers it closely enough (confidence {confidence:.2f}, {params.floor:.2f} needed)"
        return Extract([], why, confidence, round(answerable, 3), sim, score)
    sure = confidence >= params.sure
    chosen = choose(r, order, params.follow, max_lines) if sure else candidates(r, order)
    lines = [(u.text, u.evidence) for u in chosen]
    m = params.shown
    shown = confidence if sure or m is None else round(float(m.prob(r.shown_x(chosen, m.names))), 3)
    each = {} if sure else held(r, chosen)
    return Extract(lines, "", shown, round(answerable, 3), sim, score, sure, confidence, each)


def _why(question: str, r: Ranked, answerable: float, threshold: float) -> str:
    named = [h for h in r.question.hard if tx.content_keys(h)]
    if len(named) == len(r.question.anchor_df) and (
        gone := [h for h, n in zip(named, r.question.anchor_df, strict=True) if not n]
    ):
        return f"the index does not know {', '.join(gone[:3])}"  # a name or option no chunk holds as written
    if r.question.unseen >= 0.5:  # most of it unknown to the index: said so (the fitted model abstained)
        missing = [k for k in r.question.keys if k in _absent(r)][:3]
        if missing:
            return f"the index does not know {', '.join(tx.as_written(question, missing))}"
    return f"no passage answers it closely enough (answerable {answerable:.2f}, {threshold:.2f} needed)"


def _absent(r: Ranked) -> set[str]:
    seen = {k for u in r.units for k in tx.content_keys(f"{u.evidence.title} {u.evidence.section} {u.text}")}
    return {k for k in r.question.keys if k not in seen}


def _cosines(question: str, texts: list[str], embed: Embed | None) -> list[float]:
    if embed is None or not texts:
        return [0.0] * len(texts)
    vecs = np.asarray(embed([question, *texts]), dtype=np.float64)
    return [float(v) for v in vecs[1:] @ vecs[0]]


def _prefilter(us: list[Unit], q: ft.Question) -> list[Unit]:
    """At most MAX_CANDIDATES to embed: those carrying most of the question's weight, then retrieval
    order (kept in retrieval order: the features read neighbours)."""
    if len(us) <= MAX_CANDIDATES:
        return us
    carried = [sum(w for k, w in q.keys.items() if k in set(tx.content_keys(u.text))) for u in us]
    keep = set(sorted(range(len(us)), key=lambda i: (-carried[i], i))[:MAX_CANDIDATES])
    return [u for i, u in enumerate(us) if i in keep]


def _local_idf(question: str, us: list[Unit]) -> dict[str, float]:
    """IDF over the candidates, for an index without keyword statistics."""
    keys = [frozenset(tx.content_keys(u.text)) for u in us]
    n = len(keys)
    return {k: idf(n, sum(k in ks for ks in keys)) for k in tx.content_keys(question)}


def lead_line(title: str, text: str) -> str:
    """What a document says it is about: its title and its first sentence-bearing paragraph."""
    for e in (Evidence("E0", "", "", text, title, "", "", "", "", 0, 0.0),):
        for u in units(e):
            if u.kind in ("sentence", "list_item") and len(tx.words(u.text)) >= 6:  # prose, not a label
                return f"{title}: {u.text[:LEAD_CHARS]}"
    return title


def answer_text(lines: list[tuple[str, Evidence]]) -> str:
    """The raw answer: one verbatim line per claim (whitespace folded), ending with its pointer."""
    return "\n".join(f"{' '.join(s.split())} [{e.pointer}]" for s, e in lines)

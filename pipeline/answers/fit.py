"""Fitting the extractive answerer's parameters on labelled questions (bench/fit_answers.py, `docforge tune`).

A labelled question is {"question": ..., "phrases": [...]} — the short phrases one of which a right
answer holds — or "phrases": null for one the documentation does not answer. Each is asked through the
answer loop's own retrieval; every candidate line's features are recorded with whether it holds a
phrase. Then, with numpy (L2-regularised logistic regression by Newton's method, features standardised):

    line        P(a line holds the answer): a listwise ranker over each question's lines (what matters is
                which line of a question wins), its scores calibrated by one logistic (positives
                weighted up to balance the classes);
    question    P(the question is answerable), over questions (labelled answerable or not), from their
                best line's scores and how much of the question the index knows; the threshold is the
                lowest at which at least PRECISION of the answered questions are answerable (the target
                chosen leaving one corpus out: abstentions_left_out);
    confidence  P(the answer shown holds the answer), over answered questions (an unanswerable one's
                never does): a logistic fit of the question features and features.AGREEMENT (does
                search rank the line's page first, the margins to the next page and section, how much
                of the question the line covers by meaning), so a band of confidence holds about that
                share of right answers;
    floor       the confidence below which an answer abstains after all: the one of FLOORS whose added
                abstentions are most often right on the left-out predictions;
    sure        the confidence at which an answer is labelled as answering the question: the lowest at
                which SURE_PRECISION of the so-labelled answers hold the answer, on predictions leaving
                one corpus out (left_out: each corpus's questions scored by models fitted on the others);
    follow      the share of the best line's probability a further line needs (the highest losing none);
    overrule    the logit margin a line of a lower-ranked page needs over the best line of search's
                first page (extractive.agree), the smallest of OVERRULES with the most answers right.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from pipeline.answers import extractive, features, retrieve, subject
from pipeline.answers import words as tx
from pipeline.answers.calibrate import SURE_PRECISION, LeftOut, calibration, floor_threshold, sure_threshold
from pipeline.answers.calibrate import precision_threshold as _threshold
from pipeline.answers.params import Logistic, Params
from pipeline.answers.run import Tools
from pipeline.answers.shown import candidates, choose
from pipeline.errors import AnswerError
from pipeline.query.leads import document_leads

# Of answered questions, the share that are answerable. Refit with five whole HTML manuals (18 corpora, 711
# questions, 118 unanswerable; one corpus left out): 0.98 abstains right on 101/118, wrongly on 8/554, and on
# the suite's paraphrase ("give a customer their money back" of a refunds page: 0.51 < 0.56); 0.97: 99/118,
# 5/554, the paraphrase answered. (Earlier, 15 corpora: 0.96 84/106, 1/514; 0.98 94/106, 5/514; 0.99 98/106,
# 7/514.) Held out: 5 of 6 unanswerable, at most 2 of 20 wrongly.
PRECISION = 0.97
L2 = 1.0  # ridge penalty on standardised weights (a few hundred questions: keep the weights modest)
FOLLOWS = (0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)  # `follow` values tried (a second line shown): kept by left-out fit
NEWTON_STEPS = 50  # the listwise ranker converges in a handful of Newton steps; the bound guards a bad design
MIN_POSITIVES = 5  # lines holding an answer below which a ranker would fit noise: refuse to fit
OVERRULES = (0.0, 0.25, 0.5, 1.0, 2.0)  # logit margins tried for `overrule` (extractive.agree)
KINDS = {  # what each kind of value is, in words the model reads: how a question asking for one sounds
    "number": "How many, how much, how long, what size, what limit, what default number or timeout?",
    "option": "Which option, setting, flag, parameter or configuration directive controls this?",
    "path": "Which file, directory or path is it stored in or read from?",
    "command": "What command do I run, and how do I invoke it?",
    "identifier": "What is the name of the function, variable, type or keyword?",
}


@dataclass
class Asked:
    """One labelled question, asked: its line features and labels."""

    corpus: str
    question: str
    answerable: bool
    q: features.Question
    x: np.ndarray
    y: np.ndarray  # per line: holds a phrase
    units: list[Any]  # the candidate lines (pipeline.answers.units.Unit)
    phrases: list[str]


def holds_phrase(text: str, phrases: Iterable[str]) -> bool:
    """Whether `text` holds one of `phrases` as a reader reads it (words.as_read): a phrase copied from a
    page says "will not fire any ON DELETE triggers", the line "… any `ON DELETE` triggers …"."""
    read = tx.as_read(text)
    return any(tx.as_read(p) in read for p in phrases)


def read_questions(path: Path) -> list[dict[str, Any]]:
    rows = []
    for n, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            r = json.loads(line)
        except ValueError as e:
            raise AnswerError(f"{path}:{n}: not JSON ({e})") from None
        if not isinstance(r, dict) or not isinstance(r.get("question"), str):
            raise AnswerError(f'{path}:{n}: expected {{"question": "...", "phrases": [...] or null}}')
        phrases = r.get("phrases")
        if phrases is not None and not (isinstance(phrases, list) and all(isinstance(p, str) for p in phrases)):
            raise AnswerError(f"{path}:{n}: 'phrases' must be a list of strings or null")
        rows.append(r)
    if not rows:
        raise AnswerError(f"{path}: no questions")
    return rows


def prior(kinds: dict[str, str] | None = None) -> Params:
    """Parameters to collect features with before any fit (the line scores are not used then)."""
    n, m, c = len(features.LINE), len(features.QUESTION), len(features.CONFIDENCE)
    zero = Logistic(features.LINE, np.zeros(n), 0.0, np.zeros(n), np.ones(n))
    qz = Logistic(features.QUESTION, np.zeros(m), 0.0, np.zeros(m), np.ones(m))
    cz = Logistic(features.CONFIDENCE, np.zeros(c), 0.0, np.zeros(c), np.ones(c))
    return Params({}, "", zero, qz, cz, 0.0, 0.5, dict(kinds or KINDS), 1.0)


def ask(answerer: Tools, corpus: str, rows: Iterable[dict[str, Any]], params: Params) -> list[Asked]:
    """Each question through the answer loop's retrieval and candidate lines (no answer is recorded)."""
    from pipeline.answers.run import Run

    out = []
    cfg = answerer.cfg
    for r in rows:
        run = Run(r["question"], retrieve.Scope(None, "hybrid", None, ()), None, 1)
        hits = answerer.retrieve(run, run.question, 1, cfg.max_evidence)
        with answerer.connection() as conn:
            evidence = retrieve.evidence(conn, hits)  # as the extractive draft reads them
            stats = subject.corpus_stats(conn, subject.question_words(run.question), subject.hard_anchors(run.question))
            leads = document_leads(conn, list(dict.fromkeys(e.doc_key for e in evidence)))
        ranked = extractive.rank(
            run.question, evidence, params, embed=answerer.embed, stats=stats, leads=leads, embedded=0
        )
        phrases = r.get("phrases") or []
        texts = [u.text for u in ranked.units]
        y = np.array([holds_phrase(t, phrases) for t in texts], dtype=np.float64)
        out.append(Asked(corpus, run.question, bool(phrases), ranked.question, ranked.x, y, ranked.units, phrases))
    return out


def logistic(x: np.ndarray, y: np.ndarray, names: tuple[str, ...], weight: np.ndarray | None = None) -> Logistic:
    """L2-regularised logistic regression (Logistic.fit) with this module's ridge, L2."""
    return Logistic.fit(x, y, names, L2, weight)


def ranker(groups: list[tuple[np.ndarray, np.ndarray]], names: tuple[str, ...]) -> Logistic:
    """A listwise ranker: per question, a softmax over its lines, maximising the mean log share of the
    lines that hold the answer (convex; L2 on standardised weights, Newton's method); then one logistic
    over its scores calibrates them into P(a line holds the answer). A feature constant within a
    question (its retrieval as a whole) buys no ranking, so the line's own measures carry it."""
    x = np.vstack([g for g, _ in groups])
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale < 1e-9] = 1.0
    zs = [((g - mean) / scale, y) for g, y in groups if y.any()]
    d = x.shape[1]
    w = np.zeros(d)
    for _ in range(NEWTON_STEPS):
        grad = L2 * w
        hess = np.eye(d) * L2
        for z, y in zs:
            s = z @ w
            p = np.exp(s - s.max())
            p /= p.sum()
            mp = z.T @ p
            grad += mp - z[y > 0].mean(axis=0)
            hess += (z * p[:, None]).T @ z - np.outer(mp, mp)
        step = np.linalg.solve(hess + np.eye(d) * 1e-6, grad)  # a constant feature keeps it solvable
        w -= step
        if np.abs(step).max() < 1e-8:  # no probability moves by a step this small
            break
    s = np.concatenate([((g - mean) / scale) @ w for g, _ in groups])[:, None]
    y = np.concatenate([y for _, y in groups])
    balance = np.where(y > 0, (len(y) - y.sum()) / max(y.sum(), 1.0), 1.0)
    cal = logistic(s, y, ("score",), balance)
    a = float(cal.weights[0] / cal.scale[0])
    return Logistic(names, w * a, cal.bias - a * float(cal.mean[0]), mean, scale)


@dataclass(frozen=True)
class Models:
    """The models fitted on some questions: what `fit` writes, and what leaving a corpus out refits."""

    line: Logistic
    question: Logistic
    threshold: float
    follow: float
    confidence: Logistic
    overrule: float
    holds: np.ndarray  # per question fitted on: its answer holds the answer (False when it abstains)
    answered: np.ndarray  # per question fitted on: the question model answers it
    shown: Logistic  # P(the candidates offered when unsure hold the answer), over the answered


def models(asked: list[Asked], max_lines: int, target: float = PRECISION) -> Models:
    """Line ranker, question model and its threshold, follow share, and the confidence model: P(the
    answer shown holds the answer) over the answered questions (an unanswerable one's never does)."""
    line = ranker([(a.x, a.y) for a in asked if a.answerable], features.LINE)
    overrule = _overrule(asked, line, max_lines)
    logits = [extractive.agree(a.x, line.logit(a.x), overrule) for a in asked]
    qx = np.array([features.question_features(a.q, g, a.x, a.units) for a, g in zip(asked, logits, strict=True)])
    answerable = np.array([a.answerable for a in asked], dtype=np.float64)
    question = logistic(qx, answerable, features.QUESTION)
    threshold = _threshold(question.prob(qx), answerable, target)
    follow, hits = _follow(asked, line, max_lines, overrule)
    answered = question.prob(qx) >= threshold
    holds = np.array(hits, dtype=np.float64) * answered
    cx = np.array([features.confidence_features(a.q, g, a.x, a.units) for a, g in zip(asked, logits, strict=True)])
    y = holds[answered]
    confidence = logistic(cx[answered], y, features.CONFIDENCE) if 0 < y.sum() < len(y) else _flat(y)
    shown = _shown([(a, g, _candidates(a, g)) for a, g in zip(asked, logits, strict=True)], answered)
    return Models(line, question, threshold, follow, confidence, overrule, holds.astype(bool), answered, shown)


def _shown(offers: list[tuple[Asked, np.ndarray, list[Any]]], answered: np.ndarray) -> Logistic:
    """P(the candidates offered hold the answer) over the answered, from features.SHOWN (the passages' own)."""
    y = np.array([_holds(a, c) for a, _, c in offers])[answered]
    sx = np.array([features.shown_features(a.q, g, a.x, a.units, c) for a, g, c in offers])[answered]
    return logistic(sx, y, features.SHOWN) if 0 < y.sum() < len(y) else _flat(y, features.SHOWN)


def _candidates(a: Asked, logits: np.ndarray) -> list[Any]:
    """The candidates an unsure answer offers (shown.candidates) for an asked question."""
    r = extractive.Ranked(a.q, a.units, a.x, logits)
    return candidates(r, r.order())


def _flat(y: np.ndarray, names: tuple[str, ...] = features.CONFIDENCE) -> Logistic:
    """A constant probability (every answered question alike): its share of right answers."""
    n, share = len(names), float(np.clip(y.mean() if len(y) else 0.5, 0.01, 0.99))
    return Logistic(names, np.zeros(n), float(np.log(share / (1 - share))), np.zeros(n), np.ones(n))


def predict(m: Models, asked: list[Asked], max_lines: int, answerable: np.ndarray) -> LeftOut:
    """Per question, with models fitted elsewhere: answered, the confidence of the answer chosen and of the
    candidates, and whether each holds the answer."""
    answered, conf, holds, shown, offered = [], [], [], [], []
    for a in asked:
        logits = extractive.agree(a.x, m.line.logit(a.x), m.overrule)
        answered.append(bool(m.question.prob(features.question_features(a.q, logits, a.x, a.units)) >= m.threshold))
        cx = features.confidence_features(a.q, logits, a.x, a.units)
        conf.append(float(m.confidence.prob(cx)))
        r, cands = extractive.Ranked(a.q, a.units, a.x, logits), _candidates(a, logits)
        shown.append(float(m.shown.prob(r.shown_x(cands, m.shown.names))))
        holds.append(answered[-1] and _holds(a, choose(r, r.order(), m.follow, max_lines)))
        offered.append(answered[-1] and _holds(a, cands))
    arrays = (np.array(answered, dtype=bool), np.array(conf), np.array(holds, dtype=bool))
    return LeftOut([a.corpus for a in asked], *arrays, answerable, np.array(shown), np.array(offered, dtype=bool))


def left_out(asked: list[Asked], max_lines: int) -> LeftOut:
    """Each corpus's questions predicted by the models fitted on the other corpora."""
    with_lines = [a for a in asked if len(a.y)]
    parts: list[LeftOut] = []
    for corpus in sorted({a.corpus for a in with_lines}):
        rest = [a for a in with_lines if a.corpus != corpus]
        left = [a for a in with_lines if a.corpus == corpus]
        if not any(a.answerable and a.y.any() for a in rest):
            continue
        parts.append(predict(models(rest, max_lines), left, max_lines, np.array([a.answerable for a in left])))

    def cat(field: str, kind: type = float) -> np.ndarray:
        return np.concatenate([getattr(p, field) for p in parts]).astype(kind) if parts else np.zeros(0, kind)

    names = [c for p in parts for c in p.corpus]
    return LeftOut(
        names,
        cat("answered", bool),
        cat("confidence"),
        cat("holds", bool),
        cat("answerable", bool),
        cat("shown"),
        cat("shown_holds", bool),
    )


def fit(asked: list[Asked], kinds: dict[str, str], max_lines: int, lo: LeftOut | None = None) -> dict[str, Any]:
    """The parameters (params file content, without "format" and "verifier") fitted on `asked` (`lo`: its
    left-out predictions, when already computed)."""
    with_lines = [a for a in asked if len(a.y)]
    y = np.concatenate([a.y for a in with_lines if a.answerable])
    if y.sum() < MIN_POSITIVES:
        raise AnswerError(f"{int(y.sum())} candidate lines hold an answer phrase: too few ({MIN_POSITIVES} needed)")
    m = models(with_lines, max_lines)
    if lo is None and len({a.corpus for a in with_lines}) > 1:
        lo = left_out(with_lines, max_lines)
    if lo is None:  # one corpus (a team's own questions): its own predictions, an optimistic `sure`
        lo = predict(m, with_lines, max_lines, np.array([a.answerable for a in with_lines]))
    sure = sure_threshold(lo)
    floor = floor_threshold(lo)
    unanswerable = [not a.answerable for a in with_lines]
    fitted: dict[str, Any] = {
        "questions": len(asked),
        "answerable": sum(a.answerable for a in asked),
        "lines": int(len(y)),
        "positive_lines": int(y.sum()),
        "corpora": sorted({a.corpus for a in asked}),
        "precision_target": PRECISION,
        "answered": int(m.answered.sum()),
        "answer_holds_phrase": int(m.holds.sum()),
        "unanswerable_abstained": int(sum(u and not ok for u, ok in zip(unanswerable, m.answered, strict=True))),
        "unanswerable": int(sum(unanswerable)),
        "sure_precision_target": SURE_PRECISION,
    }
    labelled = lo.answered & (lo.confidence >= sure)
    # The candidates' own confidence is reported below `sure` only where it tells right from wrong better (LOO AUROC).
    ece, auroc = calibration(*(v[lo.answered] for v in lo.reply(sure)))
    ece1, auroc1 = calibration(*(v[lo.answered] for v in lo.reply(sure, shown=False)))
    use_shown = bool(auroc > auroc1)
    if not use_shown:
        ece, auroc = ece1, auroc1
    fitted |= {
        "sure_from": "one corpus left out at a time" if len(set(lo.corpus)) > 1 else "the questions themselves",
        "left_out_answered": int(lo.answered.sum()),
        "left_out_sure": int(labelled.sum()),
        "left_out_sure_right": int((labelled & lo.holds).sum()),
        "left_out_ece": round(ece, 4),
        "left_out_auroc": round(auroc, 4),
        "left_out_auroc_one_answer": round(auroc1, 4),  # the one answer's confidence for every reply
        "left_out_floor_abstained": int((lo.answered & (lo.confidence < floor) & ~lo.answerable).sum()),
        "left_out_floor_wrongly": int((lo.answered & (lo.confidence < floor) & lo.answerable).sum()),
    }
    return {
        "line": m.line.dump(),
        "question": m.question.dump(),
        "confidence": m.confidence.dump(),
        "shown": m.shown.dump() if use_shown else None,
        "threshold": round(m.threshold, 6),
        "sure": round(sure, 6),
        "floor": floor,
        "follow": m.follow,
        "overrule": m.overrule,
        "kinds": kinds,
        "fitted": fitted,
    }


def abstentions_left_out(asked: list[Asked], targets: Iterable[float]) -> dict[float, tuple[int, int, int, int]]:
    """Per precision target, leaving one corpus out at a time (the line ranker, question model and
    threshold fitted on the others): right abstentions, unanswerable questions, wrong abstentions,
    answerable questions, summed over the left-out corpora."""
    with_lines = [a for a in asked if len(a.y)]
    out = {t: (0, 0, 0, 0) for t in targets}
    for corpus in sorted({a.corpus for a in with_lines}):
        rest = [a for a in with_lines if a.corpus != corpus]
        if not any(a.answerable and a.y.any() for a in rest):
            continue  # nothing to fit on without it
        line = ranker([(a.x, a.y) for a in rest if a.answerable], features.LINE)
        qx = np.array([features.question_features(a.q, line.logit(a.x), a.x, a.units) for a in rest])
        answerable = np.array([a.answerable for a in rest], dtype=np.float64)
        question = logistic(qx, answerable, features.QUESTION)
        p = question.prob(qx)
        left = [a for a in with_lines if a.corpus == corpus]
        lp = question.prob(np.array([features.question_features(a.q, line.logit(a.x), a.x, a.units) for a in left]))
        for t in out:
            answered = lp >= _threshold(p, answerable, t)
            right = sum(not a.answerable and not ok for a, ok in zip(left, answered, strict=True))
            wrong = sum(a.answerable and not ok for a, ok in zip(left, answered, strict=True))
            n_un = sum(not a.answerable for a in left)
            r0, u0, w0, a0 = out[t]
            out[t] = (r0 + right, u0 + n_un, w0 + wrong, a0 + len(left) - n_un)
    return out


def _overrule(asked: list[Asked], line: Logistic, max_lines: int) -> float:
    """The smallest logit margin for `overrule` whose answers hold the answer most often (ties: the
    line model alone, 0, when search's first page buys nothing)."""
    table = {m: sum(_follow(asked, line, max_lines, m, (FOLLOWS[len(FOLLOWS) // 2],))[1]) for m in OVERRULES}
    most = max(table.values())
    return min(m for m, n in table.items() if n >= most)


def _follow(
    asked: list[Asked], line: Logistic, max_lines: int, overrule: float = 0.0, follows: tuple[float, ...] = FOLLOWS
) -> tuple[float, list[bool]]:
    """The highest follow share losing no answer against the lowest, and each question's hit with it."""

    def hits(follow: float) -> list[bool]:
        out = []
        for a in asked:
            if not a.answerable:
                out.append(False)
                continue
            r = extractive.Ranked(a.q, a.units, a.x, extractive.agree(a.x, line.logit(a.x), overrule))
            out.append(_holds(a, choose(r, r.order(), follow, max_lines)))
        return out

    table = {f: hits(f) for f in follows}
    most = max(sum(h) for h in table.values())
    follow = max(f for f, h in table.items() if sum(h) >= most)
    return follow, table[follow]


def _holds(a: Asked, shown: list[Any]) -> bool:
    """Whether the lines shown (an entry's lines are not all candidates) hold one of the question's phrases."""
    return bool(a.phrases) and any(holds_phrase(u.text, a.phrases) for u in shown)

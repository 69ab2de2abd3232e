"""Fitting the calibrated model: labelled (answer, evidence) pairs → features → logistic weights.

`examine` runs each answer through the verifier up to the model (quoted, refused by an exact check, or
its features), its embedding work batched over all of them; `fit_model` fits the logistic model on the
undecided ones and picks the decision threshold; `bench/verify_docs.py --fit` writes the result into
the parameters file with what it was fitted on.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

import pipeline.answers.verify.features as features
import pipeline.answers.verify.judge as judge
import pipeline.answers.verify.strategies as strategies
from pipeline.answers.verify.blocks import LazyBlocks
from pipeline.answers.verify.claims import parse_claims


@dataclass
class Examined:
    """One answer before the model: decided (True/False) without it, or its merged features."""

    decided: bool | None
    x: dict[str, float] | None


def examine(pairs: Sequence[tuple[str, str]], nli: judge.NliJudge | None = None) -> list[Examined]:
    """Each (answer, evidence text) pair — every line of the answer resting on the evidence — up to the model."""
    firsts = []
    for answer, evidence in pairs:
        blocks = LazyBlocks({"E1": evidence})
        firsts.append([strategies.first_pass(c.text, ("E1",), blocks) for c in parse_claims(answer)])
    pending = [c for cs in firsts for c in cs if isinstance(c, strategies.Pending)]
    features.aligned([r for c in pending for r in c.readings], [c.cited for c in pending for _ in c.readings])
    if nli is not None:
        pairs_ = [(features.logic.align(s, features.sentences_of(c.cited)), s) for c in pending for s, _ in c.readings]
        it = iter(nli.scores(pairs_))
        for c in pending:
            for _, r in c.readings:
                r.x["nli"] = next(it)
    out = []
    for cs in firsts:
        waiting = [c for c in cs if isinstance(c, strategies.Pending)]
        if not cs or any(not isinstance(c, strategies.Pending) and not c.verified for c in cs):
            out.append(Examined(False, None))
        elif not waiting:
            out.append(Examined(True, None))
        else:
            out.append(Examined(None, strategies.merged([r for c in waiting for _, r in c.readings])))
    return out


def fit_model(
    xs: list[dict[str, float]], y: Sequence[bool], names: tuple[str, ...], weight: np.ndarray | None = None
) -> dict[str, Any]:
    """The logistic model over `names`, and the threshold that maximises the mean of the two rates
    (supported accepted, unsupported rejected) on the same examples, as the parameters file holds them."""
    x = np.array([[d[n] for n in names] for d in xs], dtype=np.float64)
    yy = np.array(y, dtype=np.float64)
    model = judge.fit(x, yy, names, weight)
    p = model.prob(x)
    sw = np.ones(len(yy)) if weight is None else weight
    pos, neg = sw * (yy == 1), sw * (yy == 0)
    best, best_t = -1.0, 0.5
    # thresholds 0.2-0.8 by 0.02: outside it one rate collapses; finer steps only fit the sample's noise
    for t in np.round(np.arange(0.2, 0.81, 0.02), 2):
        acc = (pos * (p >= t)).sum() / max(pos.sum(), 1e-9) + (neg * (p < t)).sum() / max(neg.sum(), 1e-9)
        if acc > best + 1e-9 or (abs(acc - best) <= 1e-9 and abs(t - 0.5) < abs(best_t - 0.5)):
            best, best_t = acc, float(t)
    return {**model.dump(), "threshold": best_t}


def raised(
    fitted: dict[str, Any], xs: list[dict[str, float]], y: Sequence[bool], decided: tuple[int, int], floor: float
) -> dict[str, Any]:
    """The fitted model with its threshold raised by the fit's steps (0.02) until one set of examples — `xs`
    with labels `y` for the model, and `decided` (right, of how many) decided without it — is judged right
    at least `floor` of the time, or the steps run out. The threshold that maximises the two rates on all
    the fit examples may trade one set's accuracy for little: a floor keeps what a bar promises on it."""
    model = judge.Model.load(fitted)
    assert model is not None
    p = np.array([model.probability(x) for x in xs])
    yy = np.array(y, dtype=bool)
    right, n = decided
    t = fitted["threshold"]
    while (right + ((p >= t) == yy).sum()) / max(n + len(yy), 1) < floor and t < 0.8 - 1e-9:
        t = round(t + 0.02, 2)
    return {**fitted, "threshold": t}

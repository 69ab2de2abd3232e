"""How well the extractive answerer's confidence is calibrated, and the thresholds read from it.

Every function here reads predictions made leaving one corpus out (pipeline.answers.fit.left_out: each
corpus's questions scored by the models fitted on the others), so a threshold is chosen on questions its
models never saw:

    sure   the confidence at which an answer is labelled as answering the question: the lowest at which
           SURE_PRECISION of the so-labelled answers hold the answer;
    floor  the confidence below which an answer abstains after all: of FLOORS, the one whose added
           abstentions are most often right;

and `calibration` gives the expected calibration error and AUROC that bench/fit_answers.py reports.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# Of the answers labelled "answers the question", the share that must hold the answer (issue 46: ≥ 0.9):
# the confidence threshold `sure` is the lowest reaching it on predictions leaving one fit corpus out.
SURE_PRECISION = 0.9


@dataclass(frozen=True)
class LeftOut:
    """Every question predicted by models fitted on the other corpora."""

    corpus: list[str]
    answered: np.ndarray
    confidence: np.ndarray
    holds: np.ndarray
    answerable: np.ndarray


FLOORS = tuple(round(0.05 * i, 2) for i in range(11))  # confidences tried for `floor`: 0 to 0.5


def floor_threshold(lo: LeftOut) -> float:
    """The confidence below which an answer abstains: of FLOORS, the one whose abstentions, added to the
    question model's on the left-out predictions, are most often right (unanswerable abstained less
    answerable abstained; ties: the lowest)."""

    def gain(f: float) -> int:
        added = lo.answered & (lo.confidence < f)
        return int((added & ~lo.answerable).sum()) - int((added & lo.answerable).sum())

    best = max(gain(f) for f in FLOORS)
    return min(f for f in FLOORS if gain(f) >= best)


def sure_threshold(lo: LeftOut, target: float = SURE_PRECISION) -> float:
    """The lowest confidence at which, on the left-out predictions, at least `target` of the answers
    labelled "answers the question" hold the answer: the most such labels at that precision."""
    p, y = lo.confidence[lo.answered], lo.holds[lo.answered]
    for t in sorted(set(np.round(p, 3))):
        ok = p >= t
        if ok.any() and y[ok].mean() >= target:
            return float(t)
    return 1.0


def calibration(p: np.ndarray, y: np.ndarray, bins: int = 10) -> tuple[float, float]:
    """Expected calibration error (equal-width bins) and AUROC (ties shared) of probabilities `p` for `y`."""
    p, y = np.asarray(p, dtype=np.float64), np.asarray(y, dtype=bool)
    if not len(p):
        return float("nan"), float("nan")
    which = np.minimum((p * bins).astype(int), bins - 1)
    ece = sum(
        abs(p[which == b].mean() - y[which == b].mean()) * (which == b).sum() for b in range(bins) if (which == b).any()
    )
    pos, neg = p[y], p[~y]
    if not len(pos) or not len(neg):
        return float(ece / len(p)), float("nan")
    wins = (pos[:, None] > neg[None, :]).sum() + 0.5 * (pos[:, None] == neg[None, :]).sum()
    return float(ece / len(p)), float(wins / (len(pos) * len(neg)))

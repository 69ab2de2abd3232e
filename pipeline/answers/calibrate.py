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
# With a margin: the precision's one-sided lower confidence bound (Wilson; z standard deviations) must reach
# SURE_PRECISION, not the measured share. A threshold picked where the measured precision first touches the
# target sits on a favourable draw: the report corpora's precision ran below the fit's (71 % against 90 %).
# One standard error (one-sided 84 %): on the 15 fit corpora's left-out predictions (515 answered) the
# precision reaches 0.93 on the 140 most confident, whose 90 % bound (z = 1.28) is 0.895: at 1.28 nothing
# would be labelled; at 1.0, `sure` ≈ 0.92 labels about 150 (0 margin: 0.86, about 300 at 89 %).
SURE_Z = 1.0


@dataclass(frozen=True)
class LeftOut:
    """Every question predicted by models fitted on the other corpora."""

    corpus: list[str]
    answered: np.ndarray
    confidence: np.ndarray  # P(the answer chosen holds the answer): the label `sure` is read from it
    holds: np.ndarray  # the answer chosen holds it (False when it abstains)
    answerable: np.ndarray
    shown: np.ndarray | None = None  # P(the candidates offered when unsure hold it)
    shown_holds: np.ndarray | None = None  # ... they do

    def reply(self, sure: float, shown: bool = True) -> tuple[np.ndarray, np.ndarray]:
        """The confidence reported for each reply and whether the reply holds the answer: at `sure` and above
        the answer chosen's; below it, what the reader is shown is the candidates, and the confidence the
        candidates' (`shown`) or still the one answer's."""
        if self.shown is None or self.shown_holds is None:
            return self.confidence, self.holds
        above = self.confidence >= sure
        held = np.where(above, self.holds, self.shown_holds)
        return (np.where(above, self.confidence, self.shown) if shown else self.confidence), held


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


def precision_threshold(p: np.ndarray, answerable: np.ndarray, target: float) -> float:
    """The question model's threshold: the lowest at which `target` of the answered questions are
    answerable (the most answered)."""
    for t in sorted(set(np.round(p, 6))):
        ok = p >= t
        if ok.any() and answerable[ok].mean() >= target:
            return float(t)
    return float(p.max())


def sure_threshold(lo: LeftOut, target: float = SURE_PRECISION, z: float | None = None) -> float:
    """The lowest confidence at which, on the left-out predictions, the answers labelled "answers the
    question" hold the answer with a precision whose lower confidence bound (Wilson, `z`: SURE_Z) is at
    least `target`: the most such labels at that precision, with a margin for how few they are."""
    z = SURE_Z if z is None else z
    p, y = lo.confidence[lo.answered], lo.holds[lo.answered]
    for t in sorted(set(np.round(p, 3))):
        if wilson_lower(int(y[p >= t].sum()), int((p >= t).sum()), z) >= target:
            return float(t)
    return 1.0


def wilson_lower(k: int, n: int, z: float) -> float:
    """The Wilson score interval's lower bound for k successes in n (0 for n = 0)."""
    if n == 0:
        return 0.0
    p = k / n
    centre = p + z * z / (2 * n)
    spread = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return float((centre - spread) / (1 + z * z / n))


def calibration(p: np.ndarray, y: np.ndarray, bins: int = 10) -> tuple[float, float]:  # ten bins: the usual ECE
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

"""Confidence from measured quantities, calibrated on the labelled answer set (bench/answers.py --dev).

An extractive answer's confidence combines how similar its best line is to the question (cosine, same model
as the index), how much of the question's subject its document carries (IDF-weighted), and how far its best
line scores above the best line of any other document (the retrieval margin). The weights and the mapping
below were fitted so that each confidence band's share of answers containing the expected phrase roughly
matches the band (bench/answers.py prints the bands).
"""

from __future__ import annotations

import math

# logit = B0 + B_SIM·similarity + B_COV·coverage + B_MARGIN·margin
B0, B_SIM, B_COV, B_MARGIN = -3.6, 5.0, 2.0, 4.0
CAP = 0.9  # lexical evidence never makes an answer certain


def extractive_confidence(ex) -> float:
    z = B0 + B_SIM * ex.similarity + B_COV * ex.coverage + B_MARGIN * ex.margin
    return round(min(CAP, 1 / (1 + math.exp(-z))), 3)

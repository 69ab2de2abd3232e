"""Questions grouped by meaning: greedy average-link clustering on cosine similarity.

Deterministic: the questions come in a fixed order (the report sorts them by when each was first
asked) and each joins the group it is closest to on average, when that reaches the threshold, else
starts a group of its own. So a question asked later never moves an earlier one, and the same
questions land in the same groups on every run. A group's representative is its medoid (the member
closest on average to the others; the earliest on a tie).
"""

from __future__ import annotations

import numpy as np


def unit(vectors: np.ndarray) -> np.ndarray:
    v = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(v, axis=1, keepdims=True)
    return v / np.where(norms == 0, 1.0, norms)


def groups(vectors: np.ndarray, threshold: float) -> list[list[int]]:
    """Row indices grouped (each group in row order, groups in the order they started)."""
    v = unit(vectors)
    sims = v @ v.T
    out: list[list[int]] = []
    for i in range(len(v)):
        best, best_sim = -1, threshold
        for g, members in enumerate(out):
            s = float(sims[i, members].mean())
            if s >= best_sim:
                best, best_sim = g, s
        if best < 0:
            out.append([i])
        else:
            out[best].append(i)
    return out


def medoid(vectors: np.ndarray, members: list[int]) -> int:
    """The member with the highest mean similarity to the group (the first such)."""
    v = unit(vectors[members])
    mean = (v @ v.T).mean(axis=1)
    return members[int(np.argmax(mean))]


def purity(found: list[list[int]], labels: list[str]) -> float:
    """The share of items whose group's most common label is their own (1.0: no group mixes meanings)."""
    right = sum(max(sum(1 for i in g if labels[i] == lab) for lab in {labels[i] for i in g}) for g in found)
    return right / max(1, len(labels))


def completeness(found: list[list[int]], labels: list[str]) -> float:
    """The share of items in the group that holds most of their label (1.0: every meaning in one group)."""
    where = {i: g for g, members in enumerate(found) for i in members}
    total = 0
    for lab in set(labels):
        items = [i for i, x in enumerate(labels) if x == lab]
        total += max(sum(1 for i in items if where[i] == g) for g in {where[i] for i in items})
    return total / max(1, len(labels))

"""IR metrics as BEIR reports them (pytrec_eval definitions), averaged over judged queries.

nDCG@k: DCG = sum over ranks i (1-based) of rel / log2(i + 1); divided by the DCG
of the ideal ordering of that query's judged documents. Recall@k: relevant
documents (rel > 0) in the top k / all relevant documents of the query.
A judged query with no results scores 0 on both. For questions with one expected
answer: hit@k = share answered within the top k, MRR@k = mean of 1 / rank of the
first right item (0 beyond k). And the one percentile every bench's latency figures use (`pct`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

Run = Mapping[str, Sequence[str]]  # query id → ranked document ids, best first
Qrels = Mapping[str, Mapping[str, int]]  # query id → document id → relevance grade


def dcg(gains: Sequence[float]) -> float:
    return sum(g / math.log2(i + 2) for i, g in enumerate(gains))


def ndcg_at_k(ranked: Sequence[str], judged: Mapping[str, int], k: int) -> float:
    ideal = dcg(sorted((g for g in judged.values() if g > 0), reverse=True)[:k])
    if ideal == 0:
        return 0.0
    return dcg([judged.get(d, 0) for d in _dedupe(ranked)[:k]]) / ideal


def recall_at_k(ranked: Sequence[str], judged: Mapping[str, int], k: int) -> float:
    relevant = {d for d, g in judged.items() if g > 0}
    if not relevant:
        return 0.0
    return len(relevant & set(_dedupe(ranked)[:k])) / len(relevant)


def mean_metric(metric, run: Run, qrels: Qrels, k: int) -> float:
    """Mean of `metric` over every judged query (missing from the run → 0)."""
    if not qrels:
        return 0.0
    return sum(metric(run.get(q, ()), judged, k) for q, judged in qrels.items()) / len(qrels)


def _dedupe(ranked: Sequence[str]) -> list[str]:
    seen: set[str] = set()
    return [d for d in ranked if not (d in seen or seen.add(d))]


def first_rank(ranked: Sequence[str], wanted: str | Sequence[str], k: int) -> int | None:
    """1-based rank of the first item in `wanted` within the top k, or None."""
    wanted = {wanted} if isinstance(wanted, str) else set(wanted)
    return next((i for i, d in enumerate(ranked[:k], 1) if d in wanted), None)


def hit_rates(ranks: Sequence[int | None], ks: Sequence[int] = (1, 5, 10), mrr_k: int = 10) -> dict[str, float]:
    """hit@k (share of questions answered within the top k) and MRR@mrr_k from first-hit ranks."""
    n = max(1, len(ranks))
    out = {f"hit@{k}": sum(1 for r in ranks if r is not None and r <= k) / n for k in ks}
    out[f"mrr@{mrr_k}"] = sum(1 / r for r in ranks if r is not None and r <= mrr_k) / n
    return out


def pct(values: Sequence[float], p: float) -> float:
    """The p-th percentile, nearest rank (of 10 values: p50 is the 5th, p95 the largest); NaN of none."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)] if ordered else float("nan")

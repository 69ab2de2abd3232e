"""A search's candidates ranked as its mode ranks them: one chunk a hit for dense and keyword, passages
of neighbouring chunks for hybrid (pipeline.query.fusion), capped per document."""

from __future__ import annotations

from pipeline.config import SearchConfig
from pipeline.query.fusion import Candidate, Fused, Passage, diversify, fuse, passages, per_document
from pipeline.query.plan import Plan


def rank(
    plan: Plan, dense: list[dict], keyword: list[dict], whole: dict[str, float], cfg: SearchConfig
) -> list[Passage]:
    """The legs' candidates ranked as the mode ranks them, capped per document, as hits: one chunk each
    for dense and keyword (their raw scores), passages of neighbours for hybrid."""
    if plan.mode != "hybrid":
        rows = dense or keyword
        ranks = [i + 1 for i in range(len(rows))]
        cands = [candidate(row, rank if plan.mode == "dense" else None, rank if plan.mode == "keyword" else None)
                 for row, rank in zip(rows, ranks, strict=True)]  # fmt: skip
        scored = [Fused(c, float(row["score"])) for c, row in zip(cands, rows, strict=True)]
        return [Passage(f, (f,)) for f in per_document(scored, plan.cap, lambda f: f.candidate.doc)[: plan.n]]
    found: dict[str, dict] = {}
    for leg, rows in (("dense", dense), ("keyword", keyword)):
        for rank, row in enumerate(rows, 1):
            found.setdefault(row["chunk_id"], {"row": row})[leg] = (rank, float(row["score"]))
    cands = []
    for f in found.values():
        row, (dr, ds), (kr, ks) = f["row"], f.get("dense", (None, None)), f.get("keyword", (None, None))
        boost = 1 + cfg.tag_boost if any(t.lower() in plan.tags for t in row["tags"] or ()) else 1.0
        if (row.get("link_share") or 0.0) >= cfg.index_link_share:
            boost *= cfg.index_weight  # an index page: it points at the answer, the page it names holds it
        cands.append(Candidate(row["chunk_id"], row["doc_key"], row["ordinal"], dr, ds, kr, ks, boost))
    fused = fuse(
        cands,
        cfg.fusion,
        rrf_k=plan.rrf_k,
        weights=plan.weights,
        centroids=whole,
        centroid_share=cfg.centroid_share,
        keyword_confidence=cfg.keyword_confidence,
    )
    return passages(diversify(fused, plan.cap, cfg.repeat_discount))[: plan.n]


def candidate(row: dict, dense_rank: int | None, keyword_rank: int | None) -> Candidate:
    return Candidate(row["chunk_id"], row["doc_key"], row["ordinal"], dense_rank, None, keyword_rank, None)

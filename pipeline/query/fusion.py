"""Hybrid fusion and result diversity, in plain Python over each leg's candidates.

Hybrid search fetches the dense and the keyword candidates (chunks, with their
document, position, rank and score in each leg) and fuses them here. Fusion is
document-aware: long documents are many chunks, and the two legs often find
*different* chunks of the right document (dense its opening, keyword the section
that names the query's terms). Fused per chunk, neither chunk is in both lists
and chunks of other documents that both legs rank lower outrank them. So:

1. each leg's chunks are collapsed to documents (a document ranks and scores
   as its best chunk in that leg);
2. documents are fused: a convex combination of each leg's scores relative to
   the leg's best (`convex`, the default), or RRF over the document ranks (`rrf`);
3. a chunk scores its document's fused score × how good its own evidence is
   next to its document's best chunk (fused the same way, per chunk): the best
   chunk of a document carries the document's score, the others trail it.

Each leg's rows are `distinct` first: a chunk text that two documents hold (identical pages)
is listed once. Then `diversify` discounts (× `discount`, search.repeat_discount) each further chunk of a
document already listed and keeps at most N chunks of one document (dense and
keyword results only get the cap, `per_document`), and `passages` joins a chunk
to a listed neighbour of its document (position ± 1): one hit, led by the
better chunk's score and place. docs/query.md has the measurements behind the
defaults.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, TypeVar

Method = Literal["convex", "rrf"]
METHODS = ("convex", "rrf")
# Where each leg's relevance starts: dense scores are (1 + cos) / 2, so 0.5 is cosine 0
# (nothing in common); keyword scores are BM25 / a constant, 0 when no term matches.
FLOORS = (0.5, 0.0)
T = TypeVar("T")


@dataclass(frozen=True)
class Candidate:
    """One chunk from either leg of a hybrid search; a leg that did not find it has None."""

    id: str
    doc: str  # the document's key
    ordinal: int  # the chunk's position in its document
    dense_rank: int | None = None  # 1-based
    dense_score: float | None = None
    keyword_rank: int | None = None
    keyword_score: float | None = None
    boost: float = 1.0  # tag boost of the document (× on its fused score)


@dataclass(frozen=True)
class Fused:
    candidate: Candidate
    score: float  # in [0, 1]


def fuse(
    cands: Sequence[Candidate],
    method: Method = "convex",
    *,
    rrf_k: int = 60,
    weights: tuple[float, float] = (1.0, 1.0),
    floors: tuple[float, float] = FLOORS,
    centroids: Mapping[str, float] | None = None,
    centroid_share: float = 0.0,
    keyword_confidence: float = 0.0,
) -> list[Fused]:
    """Document-aware fusion of both legs' candidates, best first (ties: dense rank, then id).

    convex: Σ wᵢ·nᵢ / Σ wᵢ with nᵢ = (score − floorᵢ) / (best score of the leg − floorᵢ), clipped at 0,
    0 when the leg did not find it (theoretical-min-max normalisation: a short or weak list keeps its
    scores' proportions, unlike min-max, which sends its last candidate to 0).
    rrf: Σ wᵢ / (rrf_k + rankᵢ) / the best possible (first in both).

    Bridging vocabulary (convex only; docs/query.md has the measurements):
    `centroids` (document → dense score of its centroid, the mean of its chunks' vectors): a document's
    dense score is (1 − centroid_share) × its best chunk's + centroid_share × its centroid's, each
    relative to the leg's best, so a document about the question gains on one that merely has a
    matching chunk. `keyword_confidence` c > 0: the keyword weight × min(1, best keyword score / c),
    the keyword score being BM25 / the most the query's terms could score: a question whose words the
    corpus hardly holds leans on the dense leg."""
    if method not in METHODS:
        raise ValueError(f"unknown fusion method {method!r}: choose one of {', '.join(METHODS)}")
    if keyword_confidence > 0:
        best = max((c.keyword_score for c in cands if c.keyword_score is not None), default=0.0)
        weights = (weights[0], weights[1] * min(1.0, best / keyword_confidence))
    if method == "rrf":
        chunk, doc = _rrf(cands, weights, rrf_k)
    else:
        chunk, doc = _convex(cands, weights, floors, centroids if centroid_share > 0 else None, centroid_share)
    top: dict[str, float] = {}
    for c in cands:
        top[c.doc] = max(top.get(c.doc, 0.0), chunk[c.id])
    out = [Fused(c, min(1.0, doc[c.doc] * c.boost * (chunk[c.id] / top[c.doc] if top[c.doc] else 1.0))) for c in cands]
    out.sort(key=lambda f: (-f.score, f.candidate.dense_rank or 1 << 30, f.candidate.id))
    return out


Scores = tuple[dict[str, float], dict[str, float]]  # (chunk id → fused score, document → fused score)


def _rrf(cands: Sequence[Candidate], weights: tuple[float, float], rrf_k: int) -> Scores:
    """Σ wᵢ / (rrf_k + rankᵢ), per chunk and per document (its rank among the leg's documents)."""
    wd, wk = weights
    legs = [(wd, _ranks(cands, _dense_rank)), (wk, _ranks(cands, _keyword_rank))]
    best = (wd + wk) / (rrf_k + 1) or 1.0
    chunk = {c.id: sum(w / (rrf_k + r[0][c.id]) for w, r in legs if c.id in r[0]) / best for c in cands}
    doc = {d: sum(w / (rrf_k + r[1][d]) for w, r in legs if d in r[1]) / best for d in {c.doc for c in cands}}
    return chunk, doc


def _convex(
    cands: Sequence[Candidate],
    weights: tuple[float, float],
    floors: tuple[float, float],
    centroids: Mapping[str, float] | None = None,
    share: float = 0.0,
) -> Scores:
    """Σ wᵢ·nᵢ / Σ wᵢ per chunk, and per document with each leg's best chunk of it (dense: blended with
    the document's centroid, when given)."""
    wd, wk = weights
    total = (wd + wk) or 1.0
    legs = [
        (wd / total, _relative(cands, _dense_score, floors[0])),
        (wk / total, _relative(cands, _keyword_score, floors[1])),
    ]
    chunk = {c.id: sum(w * n[c.id] for w, n in legs if c.id in n) for c in cands}
    doc: dict[str, float] = {}
    for leg, (w, n) in enumerate(legs):
        best: dict[str, float] = {}
        for c in cands:
            if c.id in n:
                best[c.doc] = max(best.get(c.doc, 0.0), n[c.id])
        if leg == 0 and centroids:
            whole = _relative_to_best(centroids, floors[0])
            best = {d: (1 - share) * v + share * whole.get(d, 0.0) for d, v in best.items()}
        for d, v in best.items():
            doc[d] = doc.get(d, 0.0) + w * v
    return chunk, doc


def distinct(dense: Sequence[dict], keyword: Sequence[dict], key: str = "text_hash") -> tuple[list[dict], list[dict]]:
    """Each leg's rows, best first, with one chunk for each text: two byte-identical pages of a source
    (two file names, a page and its copy) hold the same chunks, which would take two places of one
    result list. Every leg keeps its best row of a text under one identity, the same in all legs (the
    least document key holding it), so hybrid fusion sees one chunk found by both legs."""
    ident = ("chunk_id", "doc_key", "ordinal")
    first: dict = {}
    legs = (dense, keyword)
    for rows in legs:
        for row in rows:
            best = first.get(row[key])
            if best is None or row["doc_key"] < best["doc_key"]:
                first[row[key]] = row
    out = []
    for rows in legs:
        seen: set = set()
        kept = []
        for row in rows:
            if row[key] not in seen:
                seen.add(row[key])
                rep = first[row[key]]
                kept.append(row if rep is row else {**row, **{k: rep[k] for k in ident}})
        out.append(kept)
    return out[0], out[1]


def diversify(fused: Sequence[Fused], per_doc: int | None, discount: float) -> list[Fused]:
    """`fused` (best first) with the j-th further chunk of a document scored × discount^j, re-sorted,
    and at most `per_doc` chunks of each document (None: all). A document's second chunk then
    outranks another document's best only when it is clearly better, not merely close."""
    seen: dict[str, int] = {}
    out = []
    for f in fused:
        j = seen.get(f.candidate.doc, 0)
        seen[f.candidate.doc] = j + 1
        out.append(Fused(f.candidate, f.score * discount**j) if j else f)
    out.sort(key=lambda f: (-f.score, f.candidate.dense_rank or 1 << 30, f.candidate.id))
    return per_document(out, per_doc, lambda f: f.candidate.doc)


def per_document(items: Iterable[T], per_doc: int | None, doc: Callable[[T], str]) -> list[T]:
    """`items` (best first) keeping at most `per_doc` of each document; None keeps all."""
    if per_doc is None:
        return list(items)
    seen: dict[str, int] = {}
    kept = []
    for it in items:
        d = doc(it)
        if seen.get(d, 0) < per_doc:
            seen[d] = seen.get(d, 0) + 1
            kept.append(it)
    return kept


@dataclass(frozen=True)
class Passage:
    """One hit: a document's best chunk among neighbours that both made the list (`lead`), and those
    neighbours in document order (`chunks`, the lead among them)."""

    lead: Fused
    chunks: tuple[Fused, ...]


def passages(fused: Sequence[Fused]) -> list[Passage]:
    """`fused` (best first) as hits: a chunk next to (position ± 1) a listed chunk of its document that
    leads a hit joins that hit, which keeps its place and its lead's score; so a hit is a document's
    chunk with at most one neighbour on each side, and a list never shows a weaker chunk of a
    document above its best one. Every other hit keeps its order."""
    runs: list[list[Fused]] = []
    for f in fused:
        c = f.candidate
        home = next(
            (r for r in runs if r[0].candidate.doc == c.doc and abs(r[0].candidate.ordinal - c.ordinal) == 1), None
        )
        if home is None:
            runs.append([f])
        else:
            home.append(f)
    return [Passage(r[0], tuple(sorted(r, key=lambda f: f.candidate.ordinal))) for r in runs]


def _dense_rank(c: Candidate) -> int | None:
    return c.dense_rank


def _keyword_rank(c: Candidate) -> int | None:
    return c.keyword_rank


def _dense_score(c: Candidate) -> float | None:
    return c.dense_score


def _keyword_score(c: Candidate) -> float | None:
    return c.keyword_score


def _ranks(cands: Sequence[Candidate], rank: Callable[[Candidate], int | None]) -> tuple[dict, dict]:
    """(chunk id → rank in the leg, document → rank among the leg's documents by their best chunk)."""
    found = sorted((r, c.id, c.doc) for c in cands if (r := rank(c)) is not None)
    docs: dict[str, int] = {}
    for _, _, d in found:
        docs.setdefault(d, len(docs) + 1)
    return {cid: r for r, cid, _ in found}, docs


def _relative(cands: Sequence[Candidate], score: Callable[[Candidate], float | None], floor: float) -> dict[str, float]:
    """chunk id → the leg's score above `floor`, relative to the leg's best (0 when none is above it)."""
    return _relative_to_best({c.id: s for c in cands if (s := score(c)) is not None}, floor)


def _relative_to_best(scores: Mapping[str, float], floor: float) -> dict[str, float]:
    """key → its score above `floor` relative to the best one's (0 when none is above it)."""
    hi = max(scores.values(), default=floor)
    return {k: max(0.0, s - floor) / (hi - floor) if hi > floor else 0.0 for k, s in scores.items()}

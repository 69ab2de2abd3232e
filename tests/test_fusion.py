"""pipeline.query.fusion without a database: document-aware fusion, per-document caps, reading order."""

from __future__ import annotations

import pytest

from pipeline.query.fusion import Candidate, Fused, diversify, fuse, passages, per_document


def legs(dense: list[str], keyword: list[str], dense_scores=None, keyword_scores=None) -> list[Candidate]:
    """Candidates from two ranked lists of "doc#ordinal" names (best first)."""
    dense_scores = dense_scores or [1.0 - i / 100 for i in range(len(dense))]
    keyword_scores = keyword_scores or [1.0 - i / 50 for i in range(len(keyword))]
    found: dict[str, dict] = {}
    for leg, names, scores in (("dense", dense, dense_scores), ("keyword", keyword, keyword_scores)):
        for rank, (name, score) in enumerate(zip(names, scores, strict=False), 1):
            doc, ordinal = name.split("#")
            c = found.setdefault(name, {"id": name, "doc": doc, "ordinal": int(ordinal)})
            c[f"{leg}_rank"], c[f"{leg}_score"] = rank, score
    return [Candidate(**c) for c in found.values()]


def ids(fused: list[Fused]) -> list[str]:
    return [f.candidate.id for f in fused]


@pytest.mark.parametrize("method", ["rrf", "convex"])
def test_a_document_both_legs_find_through_different_chunks_ranks_as_found_by_both(method):
    # The case: dense ranks A's opening first, keyword ranks another chunk of A third;
    # B..E are each in both lists. Per chunk, A's chunks are in one list each, so all of B..E
    # outrank them; by document, A has ranks 1 and 3 and comes second, after B (2 and 1).
    dense = ["A#0", "B#0", "C#0", "D#0", "E#0"]
    keyword = ["B#0", "C#0", "A#7", "D#0", "E#0"]
    per_chunk = sorted(
        legs(dense, keyword), key=lambda c: -sum(1 / (60 + r) for r in (c.dense_rank, c.keyword_rank) if r)
    )
    assert [c.doc for c in per_chunk][:5] == ["B", "C", "D", "E", "A"]
    fused = fuse(legs(dense, keyword), method)
    assert list(dict.fromkeys(f.candidate.doc for f in fused)) == ["B", "A", "C", "D", "E"]
    a = [f.candidate.id for f in fused if f.candidate.doc == "A"]
    assert a == ["A#0", "A#7"]  # the chunk with the better evidence of its own leads


def test_rrf_scores_documents_by_their_best_rank_in_each_leg():
    fused = {f.candidate.id: f.score for f in fuse(legs(["A#0", "B#0", "A#1"], ["B#0", "A#1"]), "rrf")}
    best = 2 / 61
    doc_a = (1 / 61 + 1 / 62) / best  # A: first document in dense, second in keyword
    doc_b = (1 / 62 + 1 / 61) / best
    assert fused["B#0"] == pytest.approx(doc_b)  # B's only chunk carries B's score
    a0, a1 = 1 / 61 / best, (1 / 63 + 1 / 62) / best  # per-chunk evidence: A#1 is the better chunk
    assert fused["A#1"] == pytest.approx(doc_a)
    assert fused["A#0"] == pytest.approx(doc_a * a0 / a1)


def test_first_in_both_legs_scores_one_and_scores_are_in_unit_range():
    for method in ("rrf", "convex"):
        fused = fuse(legs(["A#0", "B#3", "C#1"], ["A#0", "C#1", "D#2"]), method)
        assert ids(fused)[0] == "A#0" and fused[0].score == pytest.approx(1.0)
        assert all(0 <= f.score <= 1 for f in fused)
        assert [f.score for f in fused] == sorted((f.score for f in fused), reverse=True)


def test_convex_uses_normalised_scores_not_ranks():
    # Keyword: B far ahead of C; dense: C barely ahead of B. Ranks tie B and C, scores do not.
    cands = legs(
        ["C#0", "B#0", "D#0"], ["B#0", "C#0", "D#0"], dense_scores=[0.80, 0.79, 0.5], keyword_scores=[0.9, 0.1, 0.05]
    )
    assert fuse(cands, "rrf")[0].score == pytest.approx(fuse(cands, "rrf")[1].score)
    assert ids(fuse(cands, "convex"))[0] == "B#0"
    assert ids(fuse(cands, "convex", weights=(1.0, 0.0)))[0] == "C#0"


def test_a_short_weak_list_keeps_its_proportions():
    # Dense finds R clearly first; keyword matches D and R almost equally on one common word.
    # Scores relative to each leg's best keep R's keyword score (0.89 of D's): R wins. Min-max
    # normalisation would send R's keyword score to 0, its list's minimum, and D would win.
    cands = legs(["R#0", "D#0"], ["D#0", "R#0"], dense_scores=[0.75, 0.59], keyword_scores=[0.092, 0.082])
    fused = fuse(cands, "convex")
    assert ids(fused) == ["R#0", "D#0"]
    assert fused[0].score == pytest.approx((1 + 0.082 / 0.092) / 2)
    assert fused[1].score == pytest.approx((0.09 / 0.25 + 1) / 2)


def test_a_leg_with_weight_zero_keeps_the_other_legs_document_order():
    dense = ["A#0", "A#1", "B#0", "C#2", "B#1", "D#0"]
    keyword = ["D#0", "C#2", "B#1"]
    for method in ("rrf", "convex"):
        fused = fuse(legs(dense, keyword), method, weights=(1.0, 0.0))
        docs = list(dict.fromkeys(f.candidate.doc for f in fused))
        assert docs == ["A", "B", "C", "D"], method


def test_tag_boost_multiplies_and_caps_at_one():
    cands = legs(["A#0", "B#0"], ["A#0", "B#0"])
    boosted = [Candidate(**{**c.__dict__, "boost": 1.1}) if c.doc == "B" else c for c in cands]
    plain = {f.candidate.id: f.score for f in fuse(cands)}
    got = {f.candidate.id: f.score for f in fuse(boosted)}
    assert got["A#0"] == 1.0 and got["B#0"] == pytest.approx(min(1.0, plain["B#0"] * 1.1))


def test_unknown_method_is_refused():
    with pytest.raises(ValueError, match="unknown fusion method 'max'"):
        fuse(legs(["A#0"], []), "max")  # type: ignore[arg-type]


def test_per_document_keeps_the_best_n_of_each_document_in_order():
    items = ["A#0", "A#1", "B#0", "A#2", "C#0", "B#1", "B#2", "A#3"]

    def doc(s):
        return s.split("#")[0]

    assert per_document(items, 1, doc) == ["A#0", "B#0", "C#0"]
    assert per_document(items, 2, doc) == ["A#0", "A#1", "B#0", "C#0", "B#1"]
    assert per_document(items, None, doc) == items


def test_diversify_discounts_further_chunks_of_a_document_then_caps():
    def f(name, score):
        doc, ordinal = name.split("#")
        return Fused(Candidate(name, doc, int(ordinal)), score)

    ranked = [f("A#0", 0.9), f("A#1", 0.85), f("B#0", 0.8), f("A#2", 0.7), f("C#0", 0.3)]
    out = diversify(ranked, per_doc=2, discount=0.5)
    assert ids(out) == ["A#0", "B#0", "A#1", "C#0"]  # A#1 at 0.425 now trails B's best; A#2 is capped
    assert [f.score for f in out] == pytest.approx([0.9, 0.8, 0.425, 0.3])
    assert ids(diversify(ranked, per_doc=None, discount=1.0)) == ids(ranked)  # no discount, no cap: as given
    assert ids(diversify(ranked, per_doc=1, discount=0.8)) == ["A#0", "B#0", "C#0"]


def test_passages_join_neighbours_led_by_the_best_chunk_and_keep_every_other_place():
    def f(name, score):
        doc, ordinal = name.split("#")
        return Fused(Candidate(name, doc, int(ordinal)), score)

    ranked = [f("A#5", 0.9), f("B#0", 0.8), f("A#4", 0.7), f("C#3", 0.6), f("C#9", 0.5), f("C#2", 0.4)]
    out = passages(ranked)
    # the best chunk leads its hit (A#5 before its weaker neighbour A#4, which joins it); others keep their order
    assert [p.lead.candidate.id for p in out] == ["A#5", "B#0", "C#3", "C#9"]
    assert [ids(p.chunks) for p in out] == [["A#4", "A#5"], ["B#0"], ["C#2", "C#3"], ["C#9"]]
    assert [p.lead.score for p in out] == [0.9, 0.8, 0.6, 0.5]
    # chunks of one document that are not neighbours stay hits of their own, best first
    apart = [f("A#1", 0.9), f("B#0", 0.8), f("A#3", 0.7), f("D#8", 0.6), f("D#1", 0.5)]
    assert [p.lead.candidate.id for p in passages(apart)] == ids(apart)
    assert all(len(p.chunks) == 1 for p in passages(apart))
    # a hit is its lead with at most one neighbour each side: a neighbour's neighbour leads a hit of its own
    chain = [f("A#5", 0.9), f("A#4", 0.8), f("A#6", 0.7), f("A#3", 0.6)]
    assert [ids(p.chunks) for p in passages(chain)] == [["A#4", "A#5", "A#6"], ["A#3"]]


def test_a_centroid_share_lifts_the_document_that_is_about_the_question():
    # A has the single best-matching chunk; B's chunks are all close, so its centroid is nearer the query
    cands = [
        Candidate("A#0", "A", 0, dense_rank=1, dense_score=0.80),
        Candidate("B#0", "B", 0, dense_rank=2, dense_score=0.78),
    ]
    centroids = {"A": 0.60, "B": 0.77}
    assert ids(fuse(cands, weights=(1.0, 0.0))) == ["A#0", "B#0"]
    assert ids(fuse(cands, weights=(1.0, 0.0), centroids=centroids, centroid_share=0.0)) == ["A#0", "B#0"]  # off
    both = fuse(cands, weights=(1.0, 0.0), centroids=centroids, centroid_share=0.5)
    assert ids(both) == ["B#0", "A#0"]
    # B: 0.5 × its best chunk relative to the leg's best ((0.78 − 0.5) / 0.3) + 0.5 × the best centroid's 1
    assert both[0].score == pytest.approx(0.5 * (0.28 / 0.30) + 0.5 * 1.0)
    assert ids(fuse(cands, "rrf", weights=(1.0, 0.0), centroids=centroids, centroid_share=0.5)) == ["A#0", "B#0"]


def test_keyword_confidence_leans_on_the_dense_leg_when_the_words_barely_match():
    cands = [
        Candidate("K#0", "K", 0, keyword_rank=1, keyword_score=0.1),  # the keyword leg's best is weak
        Candidate("D#0", "D", 0, dense_rank=1, dense_score=0.8),
    ]
    assert fuse(cands)[0].score == fuse(cands)[1].score == pytest.approx(0.5)  # equal weights: a tie
    scaled = fuse(cands, keyword_confidence=0.5)  # keyword weight × 0.1 / 0.5
    assert ids(scaled) == ["D#0", "K#0"]
    assert [f.score for f in scaled] == pytest.approx([1 / 1.2, 0.2 / 1.2])
    strong = [Candidate("K#0", "K", 0, keyword_rank=1, keyword_score=0.6), cands[1]]
    assert [f.score for f in fuse(strong, keyword_confidence=0.5)] == pytest.approx([0.5, 0.5])  # full weight


def test_distinct_lists_a_text_once_under_one_identity_in_both_legs():
    from pipeline.query.fusion import distinct

    def row(doc, chunk, h, score):
        return {"chunk_id": chunk, "doc_key": doc, "ordinal": 0, "text_hash": h, "score": score}

    dense = [row("s:b.html", "b0", "same", 0.9), row("s:a.html", "a0", "same", 0.9), row("s:c.html", "c0", "c", 0.5)]
    keyword = [row("s:a.html", "a0", "same", 0.4), row("s:c.html", "c0", "c", 0.3), row("s:b.html", "b0", "same", 0.4)]
    one_dense, one_keyword = distinct(dense, keyword)
    assert [(r["chunk_id"], r["score"]) for r in one_dense] == [("a0", 0.9), ("c0", 0.5)]
    assert [r["chunk_id"] for r in one_keyword] == ["a0", "c0"]  # the same identity: fused as one chunk
    assert distinct([], []) == ([], [])

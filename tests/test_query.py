"""pipeline.query on a real ingested corpus: modes, BM25, fusion, scores, explain ranks."""

from __future__ import annotations

import math

import psycopg
import pytest

from pipeline.config import Settings, load_settings
from pipeline.errors import OutdatedStore, QueryError
from pipeline.ingest import IngestContext, ingest_source
from pipeline.query import MODES, SearchConfig, Searcher
from pipeline.store.schema import migrate, migrations


@pytest.mark.parametrize(
    "query, expected, modes",
    [
        ("how can I undo a bad release?", "handbook:docs/deploy.md", MODES),
        ("what should I do on my first day at work?", "handbook:docs/onboarding.md", ("dense", "hybrid")),
        ("give a customer their money back", "payments:docs/refunds.md", ("dense", "hybrid")),
        ("change the postgres password", "handbook:docs/credentials.md", MODES),
        ("how are balances reconciled with the bank?", "payments:docs/ledger.md", MODES),
    ],
)
def test_paraphrased_question_finds_its_document_first(searcher, query, expected, modes):
    for mode in modes:
        hits = searcher.search(query, limit=3, mode=mode)
        assert hits and hits[0].doc_key == expected, (mode, [h.doc_key for h in hits])


@pytest.mark.parametrize("mode", MODES)
def test_scores_are_normalised_and_sorted(searcher, mode):
    hits = searcher.search("deploy the payments ledger with vault", limit=10, mode=mode)
    assert hits
    scores = [h.score for h in hits]
    assert all(0.0 <= s <= 1.0 for s in scores)
    assert scores == sorted(scores, reverse=True)
    assert len({h.chunk_id for h in hits}) == len(hits)


def test_hit_carries_citation_fields(searcher):
    h = searcher.search("refund a customer", limit=1)[0]
    assert (h.doc_key, h.source, h.type, h.title, h.section) == (
        "payments:docs/refunds.md",
        "payments",
        "git",
        "Issuing refunds",
        "Issuing refunds",
    )
    assert h.url.endswith("payments/docs/refunds.md") and h.chunk_index == 0 and "payments console" in h.text
    assert h.page is None and h.rerank_score is None


def test_explain_ranks_and_fused_scores(searcher):
    q = "rotate the vault secret"
    hybrid = searcher.search(q, limit=7, mode="hybrid")
    dense = {h.chunk_id: h for h in searcher.search(q, limit=50, mode="dense", per_doc=0)}
    keyword = {h.chunk_id: h for h in searcher.search(q, limit=50, mode="keyword", per_doc=0)}
    for h in hybrid:
        assert h.dense_rank == (dense[h.chunk_id].dense_rank if h.chunk_id in dense else None)
        assert h.keyword_rank == (keyword[h.chunk_id].keyword_rank if h.chunk_id in keyword else None)
    top = hybrid[0]
    assert top.doc_key == "handbook:docs/credentials.md" and top.dense_rank == 1 and top.keyword_rank == 1
    assert top.score == 1.0  # first in both rankings: the best fused score there is
    # Default fusion: each leg's score above its floor (dense: cosine 0, keyword: 0) relative to the
    # leg's best, combined with the configured weights (every document of this corpus is one chunk,
    # so a document's score is its chunk's).
    cfg = SearchConfig()
    wd, wk = (
        cfg.dense_weight / (cfg.dense_weight + cfg.keyword_weight),
        cfg.keyword_weight / (cfg.dense_weight + cfg.keyword_weight),
    )

    def relative(leg: dict, cid: str, floor: float) -> float:
        best = max(h.score for h in leg.values())
        return max(0.0, leg[cid].score - floor) / (best - floor) if cid in leg else 0.0

    for h in hybrid[1:]:
        want = wd * relative(dense, h.chunk_id, 0.5) + wk * relative(keyword, h.chunk_id, 0.0)
        assert h.score == pytest.approx(want, abs=1e-5)


def test_keyword_is_or_of_terms(searcher):
    hits = searcher.search("zebra unicorn refund", mode="keyword")
    assert [h.doc_key for h in hits][:1] == ["payments:docs/refunds.md"]
    assert searcher.search("zebra unicorn", mode="keyword") == []
    assert searcher.search("the and of", mode="keyword") == []  # stop words only


@pytest.mark.parametrize("heading_weight", [1.0, 3.0])
def test_keyword_scores_are_okapi_bm25(corpus, embedder, heading_weight):
    """Scores equal a reference BM25 computed in Python from the same tsvectors; with a heading
    weight w, an occurrence in the heading path ('A'-weighted positions) counts w times in the term
    frequency (BM25F's), lengths unchanged. w = 1 is plain Okapi BM25."""
    query = "refund the payments charge"
    cfg = SearchConfig(bm25_heading_weight=heading_weight)
    with Searcher(corpus.settings, url=corpus.url, embedder=embedder, reranker=None, config=cfg) as searcher:
        got = {h.chunk_id: h.score for h in searcher.search(query, limit=50, mode="keyword", per_doc=0)}
        with searcher.connection() as conn:
            terms = [
                r[0] for r in conn.execute("SELECT unnest(tsvector_to_array(to_tsvector('english', %s)))", (query,))
            ]
            docs: dict[str, dict[str, int]] = {}
            heads: dict[str, dict[str, int]] = {}
            for cid, lexeme, n, head in conn.execute(
                "SELECT c.id, u.lexeme, coalesce(array_length(u.positions, 1), 1), "
                "coalesce(cardinality(array_positions(u.weights, 'A')), 0) FROM chunks c, unnest(c.tsv) u"
            ):
                docs.setdefault(cid, {})[lexeme] = n
                heads.setdefault(cid, {})[lexeme] = head
    n_docs, avgdl = len(docs), sum(sum(d.values()) for d in docs.values()) / len(docs)
    k1, b = 1.2, 0.75
    idf = {t: math.log(1 + (n_docs - (df := sum(t in d for d in docs.values())) + 0.5) / (df + 0.5)) for t in terms}
    best = sum(idf.values()) * (k1 + 1)

    def weight(cid: str, t: str) -> float:
        d = docs[cid]
        tf = d[t] + (heading_weight - 1) * heads[cid][t]
        return idf[t] * tf * (k1 + 1) / (tf + k1 * (1 - b + b * sum(d.values()) / avgdl))

    want = {
        cid: sum(weight(cid, t) for t in terms if t in d) / best
        for cid, d in docs.items()
        if any(t in d for t in terms)
    }
    assert got.keys() == want.keys()
    for cid, score in got.items():
        assert score == pytest.approx(want[cid], abs=1e-5)


def test_a_heading_weight_favours_the_chunk_whose_heading_holds_the_term(corpus, embedder):
    """ "refund" is in the heading of refunds.md ("Issuing refunds") and only in the body of ledger.md."""
    lead = {}
    for w in (1.0, 4.0):
        with Searcher(
            corpus.settings,
            url=corpus.url,
            embedder=embedder,
            reranker=None,
            config=SearchConfig(bm25_heading_weight=w),
        ) as s:
            scores = {h.doc_key: h.score for h in s.search("refund", mode="keyword", per_doc=0)}
        lead[w] = scores["payments:docs/refunds.md"] / scores["payments:docs/ledger.md"]
    assert lead[4.0] > lead[1.0] > 1


def test_bm25_statistics_match_the_chunks(searcher):
    with searcher.connection() as conn:
        n, total = conn.execute("SELECT n, total_len FROM bm25_stats").fetchone()
        assert n == conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
        assert total == conn.execute("SELECT sum(docforge_tsv_length(tsv)) FROM chunks").fetchone()[0]
        assert _df_mismatches(conn) == []
        assert _posting_mismatches(conn) == []


def _posting_mismatches(conn) -> list:
    """Postings that differ from the chunks' own tsvectors (term, tf, length), either way."""
    return conn.execute(
        "SELECT coalesce(a.seq, b.seq), coalesce(a.term, b.term) FROM "
        "(SELECT p.seq, t.term, p.tf, p.dl FROM bm25_postings p JOIN bm25_terms t ON t.id = p.term_id) a "
        "FULL JOIN (SELECT c.seq, u.lexeme AS term, coalesce(array_length(u.positions, 1), 1) AS tf, "
        "docforge_tsv_length(c.tsv) AS dl FROM chunks c, unnest(c.tsv) u) b ON a.seq = b.seq AND a.term = b.term "
        "WHERE (a.tf, a.dl) IS DISTINCT FROM (b.tf, b.dl)"
    ).fetchall()


def _df_mismatches(conn) -> list:
    return conn.execute(
        "SELECT coalesce(a.term, b.term), a.df, b.df FROM bm25_terms a FULL JOIN "
        "(SELECT u.lexeme AS term, count(*) AS df FROM chunks c, unnest(c.tsv) u GROUP BY 1) b ON a.term = b.term "
        "WHERE a.df IS DISTINCT FROM b.df"
    ).fetchall()


def test_statistics_follow_edits_and_deletes(database_url, embedder, make_repo, write_config):
    """Triggers keep BM25 statistics exact through re-ingest, edits and deletions."""
    repo = make_repo({"docs/a.md": "# Alpha\n\nalpha beta gamma", "docs/b.md": "# Beta\n\nbeta beta delta"})
    settings = load_settings(write_config([{"name": "s", "type": "git", "repo": str(repo)}]))
    ctx = IngestContext(settings, url=database_url, embedder=embedder)
    ingest_source(ctx, "s")
    (repo / "docs/a.md").write_text("# Alpha\n\nepsilon only now")
    (repo / "docs/b.md").unlink()
    ingest_source(ctx, "s")
    with Searcher(settings, url=database_url, embedder=embedder, reranker=None) as s:
        with s.connection() as conn:
            assert conn.execute("SELECT n FROM bm25_stats").fetchone()[0] == 1
            assert _df_mismatches(conn) == [] and _posting_mismatches(conn) == []
        assert [h.doc_key for h in s.search("delta beta", mode="keyword")] == []
        assert [h.doc_key for h in s.search("epsilon", mode="keyword")] == ["s:docs/a.md"]


def test_weights_and_rrf_k(corpus, embedder, searcher):
    q = "how do I undo a release with argocd?"
    dense_only = searcher.search(q, limit=5, mode="hybrid", weights=(1.0, 0.0))
    assert [h.chunk_id for h in dense_only] == [h.chunk_id for h in searcher.search(q, limit=5, mode="dense")]
    with Searcher(
        corpus.settings, url=corpus.url, embedder=embedder, reranker=None, config=SearchConfig(fusion="rrf")
    ) as rrf:
        dense_only = rrf.search(q, limit=5, mode="hybrid", weights=(1.0, 0.0))
        assert [h.chunk_id for h in dense_only] == [h.chunk_id for h in rrf.search(q, limit=5, mode="dense")]
        flat = rrf.search(q, limit=5, mode="hybrid", rrf_k=1000)
        assert flat[0].score == 1.0 and all(h.score > 0.98 for h in flat if h.dense_rank and h.keyword_rank)


def test_tag_boost(searcher):
    q = "how does the team work"
    plain = {h.chunk_id: h for h in searcher.search(q, limit=10, mode="hybrid")}
    boosted = {h.chunk_id: h for h in searcher.search(q, limit=10, mode="hybrid", boost_tags=["Payments"])}
    for cid, h in boosted.items():
        factor = 1.1 if h.source == "payments" else 1.0
        assert h.score == pytest.approx(min(1.0, plain[cid].score * factor), abs=1e-5)


def test_a_query_word_that_is_a_tag_boosts(corpus, embedder, searcher):
    q = "how does the team handle payments"
    with Searcher(
        corpus.settings, url=corpus.url, embedder=embedder, reranker=None, config=SearchConfig(tag_boost=0)
    ) as unboosted:
        plain = {h.chunk_id: h.score for h in unboosted.search(q, limit=10)}
    for h in searcher.search(q, limit=10):
        factor = 1.1 if h.source == "payments" else 1.0
        assert h.score == pytest.approx(min(1.0, plain[h.chunk_id] * factor), abs=1e-5)


def test_config_from_environment(monkeypatch):
    monkeypatch.setenv("DOCFORGE_SEARCH_FETCH_K", "80")
    monkeypatch.setenv("DOCFORGE_SEARCH_BM25_B", "0.4")
    cfg = Settings().search
    assert (cfg.fetch_k, cfg.bm25_b, cfg.rrf_k) == (80, 0.4, 60)


def test_bad_requests(searcher):
    with pytest.raises(QueryError, match="unknown mode 'fuzzy'"):
        searcher.search("x", mode="fuzzy")  # type: ignore[arg-type]
    with pytest.raises(QueryError, match="limit must be at least 1"):
        searcher.search("x", limit=0)
    assert searcher.search("   ") == []
    assert searcher.search("nul\x00byte refund", mode="keyword")[0].doc_key == "payments:docs/refunds.md"


def test_empty_store_returns_nothing(database_url, write_config, tmp_path, embedder):
    settings = load_settings(write_config([]))
    with Searcher(settings, url=database_url, embedder=embedder) as s:
        assert s.search("anything") == []


def test_a_store_from_before_the_postings_is_upgraded(database_url, embedder):
    """A store built by migrations 0001-0002 is refused by search until `docforge db migrate` (schema.migrate)
    backfills its postings."""
    vec = embedder.encode(["rotate the vault secret"])[0]
    with psycopg.connect(database_url, autocommit=True) as conn, conn.transaction():
        conn.execute("CREATE TABLE schema_migrations (version text PRIMARY KEY, applied_at timestamptz DEFAULT now())")
        conn.execute("CREATE TABLE docforge_meta (key text PRIMARY KEY, value text NOT NULL)")
        for version, text in migrations()[:2]:
            conn.execute(text.replace("{dim}", str(embedder.dimension)))
            conn.execute("INSERT INTO schema_migrations (version) VALUES (%s)", (version,))
        conn.execute(
            "INSERT INTO docforge_meta VALUES ('model', %s), ('dimension', %s)",
            (embedder.model_id, str(embedder.dimension)),
        )
        conn.execute(
            "INSERT INTO sources (key, partition, type, uri, url, title, content_hash) "
            "VALUES ('s:vault.md', 's', 'git', 'vault.md', 'u', 'Vault', 'h')"
        )
        conn.execute(
            "INSERT INTO chunks (id, source_key, ordinal, heading_path, section, text, token_count, "
            "text_hash, model, embedding) VALUES ('c1', 's:vault.md', 0, '{Vault}', 'Vault', "
            "'Rotate the vault secret every month.', 9, 'h1', %s, %s)",
            (embedder.model_id, "[" + ",".join(map(str, vec.tolist())) + "]"),
        )
    with Searcher(Settings(), url=database_url, embedder=embedder, reranker=None) as s:
        with pytest.raises(OutdatedStore, match="docforge db migrate"):
            s.search("vault secret rotation", mode="keyword")
        with psycopg.connect(database_url, autocommit=True) as conn:
            assert migrate(conn) == [v for v, _ in migrations()[2:]]
        assert [h.chunk_id for h in s.search("vault secret rotation", mode="keyword")] == ["c1"]
        with s.connection() as conn:
            assert _posting_mismatches(conn) == [] and _df_mismatches(conn) == []


def test_keyword_search_reads_the_packed_lists(searcher):
    """Candidates come from each term's first blocks, one index probe a block (docforge_bm25_top, inlined
    into the statement), exact scores from one probe of each candidate's term list (bm25_docs): no scan
    of every posting (migration 0008)."""
    from psycopg import sql

    from pipeline.query.statements import Reading, statement

    r = Reading.first("refund the payments charge", 10, False, searcher.config)
    with searcher.connection() as conn, conn.transaction():
        conn.execute("SET LOCAL enable_seqscan = off")  # a tiny table would not need any index
        plan = "\n".join(
            r[0] for r in conn.execute(sql.SQL("EXPLAIN ") + statement("keyword", r, sql.SQL("TRUE")), r.binds())
        )
    assert "Recursive Union" in plan and "Index Scan Backward using bm25_blocks_list" in plan, plan
    assert "Function Scan on docforge_bm25_top" not in plan, plan  # inlined: the planner sees its probes
    assert "Index Scan using bm25_docs_pkey" in plan, plan


def test_filtered_search_reads_deeper_until_the_filter_is_served(corpus, embedder):
    """With lists cut to one posting, a filter still gets the exact filtered top-k: deeper lists, then
    every chunk the filter keeps."""
    tight = SearchConfig(bm25_per_term=1, bm25_pool=1)
    whole = SearchConfig(bm25_per_term=100_000, bm25_pool=100_000)
    q, only = "refund the payments charge and rotate the secret", {"source": "handbook"}
    with (
        Searcher(corpus.settings, url=corpus.url, embedder=embedder, reranker=None, config=tight) as a,
        Searcher(corpus.settings, url=corpus.url, embedder=embedder, reranker=None, config=whole) as b,
    ):
        passes = []
        leg = a._leg
        a._leg = lambda conn, name, *args: (name == "keyword" and passes.append(1)) or leg(conn, name, *args)
        for mode in ("keyword", "hybrid"):
            got = [(h.chunk_id, h.score, h.keyword_rank) for h in a.search(q, limit=5, mode=mode, filters=only)]
            want = [(h.chunk_id, h.score, h.keyword_rank) for h in b.search(q, limit=5, mode=mode, filters=only)]
            assert got == want and got, mode
            assert all(h.source == "handbook" for h in a.search(q, limit=5, mode=mode, filters=only))
        passes.clear()
        a.search(q, limit=5, mode="keyword", filters=only)
        assert len(passes) > 1  # the cut lists were read deeper
        passes.clear()
        assert a.search(q, limit=5, mode="keyword") and passes == [1]  # unfiltered: one pass


def test_explain_prints_each_statement_as_sent_and_its_plan(searcher):
    """docs/query.md's EXPLAIN recipe: each leg's complete statement, the filter composed in, then its plan."""
    from pipeline.query.explain import explain

    dense, dense_plan, keyword, keyword_plan = explain(searcher, "refund the payments charge", {"source": "payments"})
    assert dense.startswith("-- dense\n") and "ORDER BY v.embedding <=>" in dense and "doc.source" in dense
    assert keyword.startswith("-- keyword\n") and "docforge_bm25_top" in keyword and "doc.source" in keyword
    assert "{" not in dense + keyword  # every placeholder filled
    assert "Limit" in dense_plan and "Limit" in keyword_plan


def test_document_centroids_are_the_mean_of_their_chunk_vectors(corpus, embedder):
    """centroids.sql: each document's mean chunk vector against the query, as (1 + cos) / 2; hybrid
    search blends it in when centroid_share > 0."""
    import numpy as np

    from pipeline.query.statements import centroids
    from pipeline.store import generations

    q = "refund the payments charge"
    config = SearchConfig(centroid_share=0.5)
    with Searcher(corpus.settings, url=corpus.url, embedder=embedder, reranker=None, config=config) as s:
        assert s.search(q, limit=5, mode="hybrid")
        vec = s.embedder.encode([q], kind="query")[0]
        with s.connection() as conn:
            gen = generations.live(conn)
            rows = conn.execute(
                f"SELECT c.doc_key, v.embedding::vector FROM chunks c JOIN {gen.table_name} v ON v.seq = c.seq"
            ).fetchall()
            by_doc: dict[str, list] = {}
            for key, v in rows:
                by_doc.setdefault(key, []).append(v.to_numpy())
            got = dict(conn.execute(centroids(gen), {"vec": vec, "docs": sorted(by_doc)}).fetchall())
    assert set(got) == set(by_doc)
    for key, vs in by_doc.items():
        mean = np.mean(vs, axis=0)
        cos = float(mean @ vec / np.linalg.norm(mean) / np.linalg.norm(vec))
        assert got[key] == pytest.approx((1 + cos) / 2, abs=1e-3), key


def test_a_query_is_embedded_once(corpus):
    """The query embedder's cache is the only one: a repeated query is one forward pass, across modes and
    across Searchers sharing the embedder; a new query is one more."""
    embedding = corpus.settings.embedding.model_copy(update={"query_backend": "torch"})
    settings = corpus.settings.model_copy(update={"embedding": embedding})
    with Searcher(settings, url=corpus.url, reranker=None) as s:
        emb = s.embedder
        for mode in ("dense", "hybrid", "dense"):
            assert s.search("rotate the vault secret", limit=3, mode=mode)
        assert emb.batches == 1
        with Searcher(settings, url=corpus.url, embedder=emb, reranker=None) as other:
            assert other.search("rotate the vault secret", limit=3, mode="dense")
        assert emb.batches == 1
        s.search("deploy with argo", limit=3, mode="dense")
        assert emb.batches == 2

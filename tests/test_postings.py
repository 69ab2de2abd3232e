"""The packed keyword postings (migration 0008): exact through every write, and an upgrade in place.

Chunks are written straight into the store (the triggers are what is tested), from
a small vocabulary with Zipf-like frequencies, so that common terms have lists of
many blocks that split, shrink and vanish as chunks come and go.
"""

from __future__ import annotations

import math
import random

import numpy as np
import psycopg
import pytest

from pipeline.errors import OutdatedStore
from pipeline.query import Searcher
from pipeline.store import bm25
from pipeline.store.schema import ensure_schema, migrate, migrations

WORDS = [f"w{i}x" for i in range(80)]  # not English words: the 'english' config keeps them as they are


def _text(rng: random.Random) -> str:
    # Zipf-like: w0x is in most chunks, w79x in few; a word repeats (tf > 1) now and then.
    return " ".join(rng.choice(WORDS[: rng.randint(1, len(WORDS))]) for _ in range(rng.randint(3, 40)))


def _insert(conn, rows: list[tuple[str, str]], model: str | None = None, vectors=None) -> None:
    """One statement inserting chunks (id, text), each in a document of its own; `model` and `vectors`
    for a store from before migration 0007, whose chunks held their vectors."""
    with conn.cursor() as cur:
        cur.executemany(
            "INSERT INTO documents (key, source, type, uri, url, title, content_hash) "
            "VALUES (%s, 's', 'git', %s, 'u', 't', 'h') ON CONFLICT DO NOTHING",
            [(f"s:{cid}", cid) for cid, _ in rows],
        )
    p = {
        "ids": [c for c, _ in rows],
        "texts": [t for _, t in rows],
        "model": model,
        "vecs": ["[" + ",".join(map(str, v.tolist())) + "]" for v in vectors] if vectors is not None else None,
    }
    old = ", model, embedding" if vectors is not None else ""
    conn.execute(
        f"INSERT INTO chunks (id, doc_key, ordinal, heading_path, section, text, token_count, text_hash{old}) "
        "SELECT r.id, 's:' || r.id, 0, '{}', '', r.text, 1, md5(r.text)"
        + (", %(model)s, r.vec::vector" if old else "")
        + " FROM unnest(%(ids)s::text[], %(texts)s::text[], %(vecs)s::text[]) r(id, text, vec)",
        p,
    )


def _block_violations(conn) -> list:
    """Blocks out of shape: size outside 1..BLOCK, a posting below its block's key or not below the key of
    the block above it (list order: impact down, seq up; a block is a range, in no order inside), or a
    posting listed twice."""
    return conn.execute(f"""
        WITH b AS (
            SELECT term_id, imp, nseq, postings, cardinality(postings) AS n,
                   lag(imp) OVER w AS up_imp, lag(nseq) OVER w AS up_nseq
            FROM bm25_blocks WINDOW w AS (PARTITION BY term_id ORDER BY imp DESC, nseq DESC)),
        e AS (
            SELECT b.*, docforge_bm25_impact(docforge_bm25_tf(u.x), docforge_bm25_dl(u.x)) AS pimp,
                   -docforge_bm25_seq(u.x) AS pnseq
            FROM b, unnest(b.postings) u(x))
        SELECT term_id, imp, nseq FROM e
        WHERE n NOT BETWEEN 1 AND {bm25.BLOCK} OR (pimp, pnseq) < (imp, nseq)
           OR (up_imp IS NOT NULL AND (pimp, pnseq) >= (up_imp, up_nseq))
        UNION ALL
        SELECT term_id, NULL, seq FROM bm25_postings GROUP BY term_id, seq HAVING count(*) > 1""").fetchall()


def _posting_mismatches(conn) -> list:
    """Postings (the view over the blocks) or chunk term lists that differ from the chunks' own tsvectors."""
    truth = (
        "SELECT c.seq, u.lexeme AS term, coalesce(array_length(u.positions, 1), 1) AS tf, "
        "docforge_tsv_length(c.tsv) AS dl FROM chunks c, unnest(c.tsv) u"
    )
    listed = "SELECT p.seq, t.term, p.tf, p.dl FROM bm25_postings p JOIN bm25_terms t ON t.id = p.term_id"
    forward = (
        "SELECT d.seq, t.term, u.tf, d.dl FROM bm25_docs d, unnest(d.terms, d.tfs) u(term_id, tf) "
        "JOIN bm25_terms t ON t.id = u.term_id"
    )
    return [
        r
        for other in (listed, forward)
        for r in conn.execute(
            f"SELECT coalesce(a.seq, b.seq), coalesce(a.term, b.term) FROM ({other}) a FULL JOIN ({truth}) b "
            "ON a.seq = b.seq AND a.term = b.term WHERE (a.tf, a.dl) IS DISTINCT FROM (b.tf, b.dl)"
        ).fetchall()
    ]


def _top_mismatches(conn, k: int) -> list:
    """Terms whose best k by docforge_bm25_top (all terms in one call) are not the first k of the
    list's reference order: impact down, seq up."""
    got: dict[int, list] = {}
    for term_id, seq, tf, dl in conn.execute(
        "SELECT q.ids[p.term_no], p.seq, p.tf, p.dl "
        "FROM (SELECT array_agg(id) AS ids FROM bm25_terms) q, docforge_bm25_top(q.ids, %s) p",
        (k,),
    ):
        got.setdefault(term_id, []).append((seq, tf, dl))
    want: dict[int, list] = {}
    for term_id, seq, tf, dl in conn.execute(
        "SELECT term_id, seq, tf, dl FROM (SELECT p.*, row_number() OVER (PARTITION BY term_id "
        "ORDER BY docforge_bm25_impact(tf, dl) DESC, seq) AS r FROM bm25_postings p) p WHERE r <= %s",
        (k,),
    ):
        want.setdefault(term_id, []).append((seq, tf, dl))
    return [t for t in want.keys() | got.keys() if sorted(got.get(t, [])) != sorted(want.get(t, []))]


def _check(conn) -> None:
    assert _block_violations(conn) == []
    assert _posting_mismatches(conn) == []
    for k in (1, 100, bm25.BLOCK, 300):
        assert _top_mismatches(conn, k) == [], k


def _store(url: str):
    conn = psycopg.connect(url, autocommit=True)
    ensure_schema(conn, "test-model", 8)
    return conn


def test_lists_stay_exact_through_inserts_deletes_and_updates(database_url):
    rng = random.Random(5)
    with _store(database_url) as conn:
        n = 0
        for size in (1, 300, 7, 150):  # one statement each: blocks are cut, then grow and split
            _insert(conn, [(f"c{n + i}", _text(rng)) for i in range(size)])
            n += size
        assert conn.execute("SELECT max(cardinality(postings)) FROM bm25_blocks").fetchone()[0] > bm25.BLOCK / 2
        assert (
            conn.execute(
                "SELECT count(*) FROM bm25_blocks WHERE term_id = (SELECT id FROM bm25_terms WHERE term = 'w0x')"
            ).fetchone()[0]
            > 2
        )
        _check(conn)
        for _ in range(4):
            ids = rng.sample([r[0] for r in conn.execute("SELECT id FROM chunks")], 60)
            conn.execute("DELETE FROM chunks WHERE id = ANY(%s)", (ids[:40],))
            for cid in ids[40:]:  # edits one by one, then many in one statement
                conn.execute("UPDATE chunks SET text = %s WHERE id = %s", (_text(rng), cid))
            conn.execute(
                "UPDATE chunks SET text = text || ' w1x w2x' WHERE id = ANY(%s)",
                ([r[0] for r in conn.execute("SELECT id FROM chunks ORDER BY random() LIMIT 50")],),
            )
            conn.execute("UPDATE chunks SET token_count = 2")  # nothing BM25 sees: the lists stay as they are
            _insert(conn, [(f"c{n + i}", _text(rng)) for i in range(30)])
            n += 30
            _check(conn)
        conn.execute("DELETE FROM chunks WHERE id IN (SELECT id FROM chunks ORDER BY random() LIMIT 200)")
        _check(conn)
        conn.execute("DELETE FROM chunks")
        assert conn.execute(
            "SELECT (SELECT count(*) FROM bm25_blocks), (SELECT count(*) FROM bm25_docs)"
        ).fetchone() == (0, 0)
        _insert(conn, [(f"d{i}", _text(rng)) for i in range(20)])
        conn.execute("TRUNCATE chunks CASCADE")
        assert conn.execute(
            "SELECT (SELECT count(*) FROM bm25_blocks), (SELECT count(*) FROM bm25_docs)"
        ).fetchone() == (0, 0)


def test_impact_order_is_the_one_of_bm25_py(database_url):
    """The SQL list order (docforge_bm25_impact) gives the very doubles pipeline.store.bm25.impact does:
    its constants, its operations."""
    grid = [(tf, dl) for tf in (1, 2, 3, 7, 40, 256) for dl in (0, 1, 9, 57, 100, 101, 333, 4096, 900_000)]
    with _store(database_url) as conn:
        got = conn.execute(
            f"SELECT {bm25.IMPACT_FUNCTION}(tf, dl) FROM unnest(%s::int[], %s::int[]) g(tf, dl)",
            ([tf for tf, _ in grid], [dl for _, dl in grid]),
        ).fetchall()
    assert [g for (g,) in got] == [bm25.impact(tf, dl) for tf, dl in grid]


def _reference_scores(conn, query: str, k1: float = 1.2, b: float = 0.75) -> dict[str, float]:
    """BM25 of every chunk matching `query`, from the tsvectors, normalised as keyword search does."""
    terms = [r[0] for r in conn.execute("SELECT unnest(tsvector_to_array(to_tsvector('english', %s)))", (query,))]
    docs: dict[str, dict[str, int]] = {}
    for cid, lexeme, n in conn.execute(
        "SELECT c.id, u.lexeme, coalesce(array_length(u.positions, 1), 1) FROM chunks c, unnest(c.tsv) u"
    ):
        docs.setdefault(cid, {})[lexeme] = n
    avgdl = sum(sum(d.values()) for d in docs.values()) / len(docs)
    idf = {t: math.log(1 + (len(docs) - (df := sum(t in d for d in docs.values())) + 0.5) / (df + 0.5)) for t in terms}
    best = sum(idf.values()) * (k1 + 1)
    return {
        cid: sum(
            idf[t] * d[t] * (k1 + 1) / (d[t] + k1 * (1 - b + b * sum(d.values()) / avgdl)) for t in terms if t in d
        )
        / best
        for cid, d in docs.items()
        if any(t in d for t in terms)
    }


def test_a_store_from_the_previous_release_upgrades_in_place(database_url, embedder):
    """A store with 0003's posting rows (migrations before 0008, chunks and their vectors as the last
    release wrote them) gets packed lists holding the very same postings, and answers keyword queries
    with the same, exact scores; writes after the upgrade keep the lists exact."""
    rng = random.Random(11)
    dim = embedder.dimension
    before_0008 = [(v, text) for v, text in migrations() if v < "0008"]
    release = [(v, text) for v, text in before_0008 if v < "0007"]  # the release: vectors in chunks.embedding
    with psycopg.connect(database_url, autocommit=True) as conn:
        with conn.transaction():
            conn.execute(
                "CREATE TABLE schema_migrations (version text PRIMARY KEY, "
                "applied_at timestamptz NOT NULL DEFAULT now())"
            )
            conn.execute("CREATE TABLE docforge_meta (key text PRIMARY KEY, value text NOT NULL)")
            for version, text in release:
                conn.execute(text.replace("{dim}", str(dim)))
                conn.execute("INSERT INTO schema_migrations (version) VALUES (%s)", (version,))
            conn.execute(
                "INSERT INTO docforge_meta VALUES ('model', %s), ('dimension', %s)", (embedder.model_id, str(dim))
            )
        vecs = np.random.default_rng(1).standard_normal((400, dim)).astype(np.float32)
        rows = [(f"c{i}", _text(rng)) for i in range(400)]
        for start in (0, 250):  # two statements: the second adds to lists the first made
            _insert(conn, rows[start : start + 250], embedder.model_id, vecs[start : start + 250])
        old = conn.execute("SELECT term_id, seq, tf, dl FROM bm25_postings ORDER BY 1, 2").fetchall()
        assert conn.execute("SELECT relkind FROM pg_class WHERE relname = 'bm25_postings'").fetchone() == ("r",)
        queries = ["w0x w5x w40x", "w3x w3x w77x", "w10x", "w60x w61x w1x"]
        want = {q: _reference_scores(conn, q) for q in queries}
    with Searcher(_settings(), url=database_url, embedder=embedder, reranker=None) as s:
        with pytest.raises(OutdatedStore, match="docforge db migrate"):  # search never migrates
            s.search(queries[0], mode="keyword")
        with psycopg.connect(database_url, autocommit=True) as conn:
            migrate(conn)
        for q in queries:
            got = {h.chunk_id: h.score for h in s.search(q, limit=len(want[q]) + 5, mode="keyword")}
            assert got.keys() == want[q].keys(), q
            for cid, score in got.items():
                assert score == pytest.approx(want[q][cid], abs=1e-5), (q, cid)
    with psycopg.connect(database_url, autocommit=True) as conn:
        assert {v for (v,) in conn.execute("SELECT version FROM schema_migrations")} >= {v for v, _ in migrations()}
        assert conn.execute("SELECT relkind FROM pg_class WHERE relname = 'bm25_postings'").fetchone() == ("v",)
        assert conn.execute("SELECT term_id, seq, tf, dl FROM bm25_postings ORDER BY 1, 2").fetchall() == old
        _check(conn)
        conn.execute("DELETE FROM chunks WHERE id IN ('c1', 'c2', 'c300')")
        conn.execute("UPDATE chunks SET text = 'w0x w0x w79x' WHERE id = 'c5'")
        _check(conn)


def _settings():
    from pipeline.config import Settings

    return Settings()

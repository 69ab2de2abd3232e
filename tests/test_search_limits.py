"""The Searcher's bounds: pooled connections (a blocked search stalls no other), a per-statement time
limit that becomes a clear error, per-connection HNSW settings, the filter complexity budget, and
text with no UTF-8 form refused as a QueryError. Real Postgres, the shared query corpus."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import psycopg
import pytest

from pipeline.config import SearchConfig
from pipeline.errors import QueryError, StoreError
from pipeline.query import Searcher
from tests.test_filters import ALL, documents


def searcher_with(corpus, embedder, **config) -> Searcher:
    return Searcher(corpus.settings, url=corpus.url, embedder=embedder, reranker=None, config=SearchConfig(**config))


def wait_for_lock_waiter(conn: psycopg.Connection) -> None:
    """Until a backend of this database waits on a lock (bounded: 400 looks)."""
    for _ in range(400):
        if conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()"
        ).fetchone()[0]:
            return
        time.sleep(0.05)
    raise AssertionError("the search never waited on the lock")


def test_a_blocked_search_stalls_no_other(corpus, embedder):
    """Keyword search reads bm25_stats, dense search does not: with that table locked, a keyword search
    waits on its own pooled connection while dense searches and health probes go on."""
    pool = ThreadPoolExecutor(1)
    with searcher_with(corpus, embedder) as s, psycopg.connect(corpus.url, autocommit=True) as locker:
        assert s.search("refund", mode="dense")  # model and store checks done
        with locker.transaction():
            locker.execute("LOCK TABLE bm25_stats IN ACCESS EXCLUSIVE MODE")
            blocked = pool.submit(s.search, "refund the payments charge", mode="keyword")
            wait_for_lock_waiter(locker)
            assert [h.doc_key for h in s.search("refund", limit=1, mode="dense")] == ["payments:docs/refunds.md"]
            assert s.ping() and not blocked.done()
        assert blocked.result(timeout=60)[0].doc_key == "payments:docs/refunds.md"
    pool.shutdown()


def test_statement_time_limit_is_a_clear_error(corpus, embedder):
    with (
        searcher_with(corpus, embedder, statement_timeout_ms=300) as s,
        psycopg.connect(corpus.url, autocommit=True) as locker,
    ):
        assert s.search("refund", mode="dense")
        with locker.transaction():
            locker.execute("LOCK TABLE bm25_stats IN ACCESS EXCLUSIVE MODE")
            with pytest.raises(StoreError, match=r"time limit \(search.statement_timeout_ms = 300 ms\)"):
                s.search("refund", mode="keyword")
        assert s.search("refund", mode="keyword"), "the connection serves the next search"


def test_session_settings_of_a_pooled_connection(corpus, embedder):
    with searcher_with(corpus, embedder, ef_search=40, statement_timeout_ms=1234, pool_size=1) as s:  # one conn

        def session() -> tuple[str, str]:
            with s.connection() as conn:
                return (
                    conn.execute("SHOW statement_timeout").fetchone()[0],
                    conn.execute("SHOW hnsw.ef_search").fetchone()[0],
                )

        s.search("refund", mode="dense", per_doc=0)  # k = 10 (no cap to read past): ef_search stays at its default
        assert session() == ("1234ms", "40")
        s.search("refund", mode="hybrid", fetch_k=300)  # k = 300: more candidates, ef_search raised to match
        assert session() == ("1234ms", "300")
        s.search("refund", mode="dense", per_doc=0)
        assert session() == ("1234ms", "40")


@pytest.mark.parametrize(
    "config, expr, message",
    [
        ({}, {f"meta.k{i}": {"$in": list(range(1000))} for i in range(16)}, "more than 1000 values"),
        ({}, {"$or": [{"source": str(i)} for i in range(65)]}, "more than 64 conditions"),
        (
            {"filter_max_values": 3},
            {"source": {"$in": ["a", "b"]}, "tags": {"$nin": ["c", "d"]}},
            "more than 3 values in all (the limit is search.filter_max_values",
        ),
        ({"filter_max_depth": 2}, {"$and": [{"$or": [{"$and": [{"source": "a"}]}]}]}, "nested deeper than 2 levels"),
        ({"filter_max_terms": 2}, {"source": "a", "type": "git", "title": "x"}, "search.filter_max_terms"),
    ],
)
def test_filter_budget_names_its_limit(corpus, embedder, config, expr, message):
    with searcher_with(corpus, embedder, **config) as s, pytest.raises(QueryError, match=message.replace("(", r"\(")):
        s.search("refund", filters=expr)


def test_meta_in_over_a_thousand_values_is_one_array(searcher):
    values = ["docs/deploy.md", "docs/ledger.md", *range(998)]
    assert documents(searcher, {"meta.path": {"$in": values}}) == {"handbook:docs/deploy.md", "payments:docs/ledger.md"}
    assert documents(searcher, {"meta.path": {"$nin": values}}) == ALL - {
        "handbook:docs/deploy.md",
        "payments:docs/ledger.md",
    }
    assert documents(searcher, {"meta.nothing": {"$in": [None, "x"]}}) == ALL
    assert documents(searcher, {"meta.nothing": {"$nin": [None]}}) == set()


@pytest.mark.parametrize(
    "call",
    [
        lambda s: s.search("refund \ud800"),
        lambda s: s.search("refund", boost_tags=["team\udfff"]),
        lambda s: s.search("refund", filters={"source": "pay\ud83d"}),
        lambda s: s.search("refund", filters={"meta.\ud800": 1}),
        lambda s: s.search("refund", filters={"tags": {"$in": ["ok", "\udc00"]}}),
    ],
)
def test_lone_surrogates_are_query_errors(searcher, call):
    with pytest.raises(QueryError, match="not valid Unicode"):
        call(searcher)

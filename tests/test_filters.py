"""Filter expressions: compiled to parameterised SQL, checked against a real ingested store."""

from __future__ import annotations

import re

import pytest

from pipeline.errors import QueryError
from pipeline.query.filters import compile_filter

ALL = {
    "handbook:README.md",
    "handbook:docs/deploy.md",
    "handbook:docs/credentials.md",
    "handbook:docs/onboarding.md",
    "handbook:docs/testing.md",
    "payments:docs/refunds.md",
    "payments:docs/ledger.md",
}
PAYMENTS = {"payments:docs/refunds.md", "payments:docs/ledger.md"}
INJECTIONS = [
    "x' OR '1'='1",
    "'; DROP TABLE chunks; --",
    "handbook') OR TRUE --",
    "%(q)s",
    "{}",
    "\\'; SELECT 1; --",
    "payments\x00",
]


def documents(searcher, expr, query="how does the team work", mode="dense") -> set[str]:
    return {h.doc_key for h in searcher.search(query, limit=50, mode=mode, filters=expr)}


@pytest.mark.parametrize(
    "expr, expected",
    [
        ({"source": "payments"}, PAYMENTS),
        ({"source": {"$ne": "handbook"}}, PAYMENTS),
        ({"partition": {"$ne": "handbook"}}, PAYMENTS),  # the deprecated name of `source`
        ({"doc_key": {"$prefix": "payments:"}}, PAYMENTS),
        ({"key": "payments:docs/refunds.md"}, {"payments:docs/refunds.md"}),  # the deprecated name of `doc_key`
        ({"type": "git"}, ALL),
        ({"type": {"$in": ["confluence"]}}, set()),
        ({"tags": "payments"}, PAYMENTS),
        ({"labels": {"$nin": ["payments"]}}, ALL - PAYMENTS),
        ({"tags": {"$in": ["nope", "payments"]}}, PAYMENTS),
        ({"tags": {"$contains": "handbook"}}, ALL - PAYMENTS),
        ({"team": "payments"}, PAYMENTS),
        ({"area": {"$ne": "platform"}}, PAYMENTS),
        ({"path": {"$prefix": "docs/"}}, ALL - {"handbook:README.md"}),
        ({"path": {"$contains": "REFUND"}}, {"payments:docs/refunds.md"}),
        ({"path": ["docs/ledger.md", "README.md"]}, {"payments:docs/ledger.md", "handbook:README.md"}),
        ({"repo": {"$contains": "payments"}}, PAYMENTS),
        ({"meta.path": "docs/deploy.md"}, {"handbook:docs/deploy.md"}),
        ({"meta.path": {"$prefix": "docs/"}, "source": "payments"}, PAYMENTS),
        ({"meta.nothing": {"$ne": "x"}}, ALL),
        ({"meta.nothing": None}, ALL),
        (
            {"title": {"$gte": "R"}},
            {"handbook:docs/credentials.md", "handbook:docs/testing.md", "payments:docs/ledger.md"},
        ),
        ({"chunk_index": {"$lt": 1}}, ALL),
        ({"chunk_index": {"$gt": 0}}, set()),
        ({"indexed_at": {"$gt": "2000-01-01T00:00:00Z"}}, ALL),
        ({"space": "ENG"}, set()),
        ({"$or": [{"source": "payments"}, {"path": "docs/deploy.md"}]}, PAYMENTS | {"handbook:docs/deploy.md"}),
        (
            {
                "$and": [
                    {"source": "handbook"},
                    {"$or": [{"path": {"$contains": "deploy"}}, {"title": "New hire onboarding"}]},
                ]
            },
            {"handbook:docs/deploy.md", "handbook:docs/onboarding.md"},
        ),
    ],
)
@pytest.mark.parametrize("mode", ["dense", "keyword", "hybrid"])
def test_filter_selects_exactly(searcher, expr, expected, mode):
    query = (
        "how does the team work"
        if mode == "dense"
        else "the payments ledger deploy refunds onboarding credentials test suite platform handbook"
    )
    got = documents(searcher, expr, query, mode)
    assert got <= expected  # no extra rows, ever
    if mode != "keyword":  # dense/hybrid return every matching chunk at limit 50
        assert got == expected


@pytest.mark.parametrize("value", INJECTIONS)
@pytest.mark.parametrize("field", ["source", "path", "repo", "tags", "meta.path", "title"])
def test_injection_in_a_value_is_just_a_value(searcher, field, value):
    """No error, no extra rows: the value is bound, never spliced into SQL."""
    assert documents(searcher, {field: value}) == set()
    assert documents(searcher, {field: {"$in": [value]}}) == set()
    assert documents(searcher, {field: {"$ne": value}}) == ALL
    with searcher.connection() as conn:
        assert conn.execute("SELECT count(*) FROM chunks").fetchone()[0] > 0


def test_injection_in_a_meta_key_is_just_a_key(searcher):
    assert documents(searcher, {"meta.path') OR TRUE --": "x"}) == set()
    assert documents(searcher, {"meta.x'; DROP TABLE sources; --": {"$ne": "y"}}) == ALL


def test_values_are_bind_parameters_not_sql():
    cond, params = compile_filter({"source": "x' OR '1'='1", "tags": {"$in": ["a", "b"]}, "meta.k'": 3})
    text = cond.as_string(None)
    assert "OR '1'='1" not in text and "k'" not in text
    assert "x' OR '1'='1" in params.values() and "k'" in params.values() and ["a", "b"] in params.values()


@pytest.mark.parametrize(
    "expr, message",
    [
        ({"source": {"$regex": ".*"}}, "unknown operator '$regex' on field 'source'"),
        ({"$nor": [{"source": "a"}]}, "unknown operator '$nor'"),
        ({"colour": "red"}, "unknown filter field 'colour'"),
        ({"chunk_index": {"$gt": "1"}}, "needs a number"),
        ({"tags": {"$gt": "a"}}, "does not apply to tags field 'tags'"),
        ({"source": {"$in": "payments"}}, "takes a list"),
        ({"$or": []}, "non-empty list"),
        ({"$or": [{"source": "a"}, "b"]}, "must be a JSON object"),
        ({"source": {}}, "empty condition"),
        ({"source": {"a": {"b": 1}}}, "unknown operator 'a'"),
        ({"meta.x": {"$eq": {"nested": 1}}}, "needs a string, number or boolean"),
    ],
)
def test_bad_expressions_are_clear_errors(expr, message):
    with pytest.raises(QueryError, match=re.escape(message)):
        compile_filter(expr)


def test_depth_and_size_limits():
    deep: dict = {"source": "a"}
    for _ in range(12):
        deep = {"$and": [deep]}
    with pytest.raises(QueryError, match="nested deeper"):
        compile_filter(deep)
    with pytest.raises(QueryError, match="more than 64 conditions"):
        compile_filter({"$or": [{"source": str(i)} for i in range(100)]})


def test_bad_timestamp_is_a_query_error(searcher):
    with pytest.raises(QueryError, match="invalid filter value"):
        searcher.search("deploy", filters={"indexed_at": {"$gt": "yesterday-ish"}})


def test_no_filter_is_true():
    cond, params = compile_filter(None)
    assert cond.as_string(None) == "TRUE" and params == {}

"""Scores from what the caller may read (issue 48): a restricted caller's keyword statistics (N,
average length, document frequencies) come only from the access lists it may read (migration 0018),
so a word that occurs only in a hidden document scores exactly as a word that occurs nowhere, in the
keyword and hybrid modes; the per-list numbers stay equal to the whole index's through inserts,
access edits in place and deletes."""

from __future__ import annotations

import psycopg
import pytest

from pipeline.access import Principal
from pipeline.config import load_settings
from pipeline.ingest import IngestContext, ingest_source
from pipeline.query import Searcher
from tests.helpers import write_files

EVE = Principal("eve@x.com", frozenset({"staff"}))
QUERY = "Quuxcorp vacation"
PUBLIC = {
    "vacation.md": "# Vacation\n\nVacation requests go to your manager two weeks ahead.\n",
    "travel.md": "# Travel\n\nTravel is booked through the office and approved by finance.\n",
}


def hidden(word: str) -> dict[str, str]:
    return {"plan.md": f"# Plan\n\nThe {word} merger moves vacation days to the new calendar.\n"}


def build(tmp_path, write_config, url, embedder, word: str):
    write_files(tmp_path / "open", PUBLIC)
    write_files(tmp_path / "hr", hidden(word))
    config = write_config(
        [
            {"name": "open", "type": "directory", "path": str(tmp_path / "open")},
            {"name": "hr", "type": "directory", "path": str(tmp_path / "hr"), "access": ["hr"]},
        ]
    )
    settings = load_settings(config)
    for source in ("open", "hr"):
        ingest_source(IngestContext(settings, url=url, embedder=embedder), source)
    return settings


def scores(settings, url, embedder, mode: str) -> dict[str, float]:
    with Searcher(settings, url=url, embedder=embedder, reranker=None) as s:
        return {h.doc_key: h.score for h in s.search(QUERY, limit=10, mode=mode, reader=EVE)}


def totals_agree(url: str) -> None:
    """The per-list numbers sum to the whole index's: chunks, length and every term's frequency."""
    with psycopg.connect(url) as conn:
        whole = conn.execute("SELECT n, total_len FROM bm25_stats").fetchone()
        lists = conn.execute("SELECT coalesce(sum(n), 0), coalesce(sum(total_len), 0) FROM bm25_access").fetchone()
        assert tuple(lists) == tuple(whole)
        assert conn.execute(
            "SELECT count(*) FROM (SELECT term, df FROM bm25_terms EXCEPT "
            "SELECT term, sum(df)::int FROM bm25_access_terms GROUP BY term) x"
        ).fetchone() == (0,)
        assert conn.execute("SELECT count(*) FROM bm25_access_terms WHERE df <= 0").fetchone() == (0,)


@pytest.mark.parametrize("mode", ["keyword", "hybrid"])
def test_a_word_only_a_hidden_document_holds_scores_as_a_word_nowhere(
    mode, tmp_path, write_config, database_url, pg_server, embedder
):
    there = build(tmp_path / "a", write_config, database_url, embedder, "Quuxcorp")
    with_word = scores(there, database_url, embedder, mode)
    totals_agree(database_url)
    with psycopg.connect(database_url, autocommit=True) as conn:  # the same store, the word nowhere
        conn.execute("DELETE FROM documents")
        conn.execute("DELETE FROM ledger")
    totals_agree(database_url)
    absent = build(tmp_path / "b", write_config, database_url, embedder, "Zorblat")
    without_word = scores(absent, database_url, embedder, mode)
    assert "open:vacation.md" in with_word
    assert not any(k.startswith("hr:") for k in with_word)
    assert with_word == without_word  # exactly: not a bit of the hidden word reaches the score


def test_the_lists_follow_an_access_edit_in_place_and_a_delete(tmp_path, write_config, database_url, embedder):
    build(tmp_path, write_config, database_url, embedder, "Quuxcorp")
    totals_agree(database_url)
    with psycopg.connect(database_url, autocommit=True) as conn:
        # hr made readable to staff in place (what an `access:` edit does: no chunk rewritten)
        conn.execute("""UPDATE documents SET access = '[["group:hr", "group:staff"]]' WHERE source = 'hr'""")
        df = conn.execute(
            "SELECT coalesce(sum(t.df), 0) FROM bm25_access_terms t JOIN bm25_access a ON a.id = t.access_id "
            "WHERE t.term = 'quuxcorp' AND docforge_may_read(a.access, %s)",
            (EVE.principals,),
        ).fetchone()[0]
        assert df == 1
        totals_agree(database_url)
        conn.execute("DELETE FROM documents WHERE source = 'hr'")
        totals_agree(database_url)
        assert conn.execute("SELECT count(*) FROM bm25_access_docs WHERE doc_key LIKE 'hr:%'").fetchone() == (0,)

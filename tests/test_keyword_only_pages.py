"""Index pages (mostly links) are indexed for keyword search only: no vectors, and every check and
search mode copes with chunks that have none (pipeline.ingest.embeddings, embedding.index_pages)."""

from __future__ import annotations

import psycopg
import pytest

from pipeline.config import load_settings
from pipeline.ingest import IngestContext, ingest_source
from pipeline.query import Searcher
from pipeline.store import admin, generations
from tests.helpers import write_files

LINKS = "".join(
    f'<li><a href="{p}.html">{t}</a></li>'
    for p, t in [
        ("vacuum", "Vacuum: freezing transaction ids"),
        ("backup", "Backups and restore"),
        ("wal", "Write-ahead log"),
        ("locks", "Explicit locking"),
    ]
)
PAGES = {
    "sitemap.html": f"<html><body><h1>Site map</h1><ul>{LINKS}</ul></body></html>",
    "vacuum.html": "<html><body><h1>Vacuum</h1><h2>Freezing</h2><p>Routine vacuuming freezes old row "
    "versions so that transaction ids can wrap around safely; run it at least once every two billion "
    "transactions.</p></body></html>",
    "backup.html": "<html><body><h1>Backups</h1><p>Dump the cluster nightly and keep a week of dumps.</p>"
    "</body></html>",
}


def _ingest(tmp_path, write_config, database_url, embedder, **top):
    write_files(tmp_path / "manual", PAGES)
    config = write_config([{"name": "m", "type": "directory", "path": str(tmp_path / "manual")}], **top)
    settings = load_settings(config)
    stats = ingest_source(IngestContext(settings, url=database_url, embedder=embedder), "m")
    return settings, stats


def _vectors_by_page(conn: psycopg.Connection) -> dict[str, int]:
    gen = generations.live(conn)
    assert gen is not None
    rows = conn.execute(
        f"SELECT d.uri, count(v.seq) FROM chunks c JOIN documents d ON d.key = c.doc_key "
        f'LEFT JOIN "{gen.table_name}" v ON v.seq = c.seq GROUP BY d.uri'
    ).fetchall()
    return dict(rows)


def test_an_index_page_gets_no_vectors_and_every_mode_copes(tmp_path, write_config, database_url, embedder):
    settings, stats = _ingest(tmp_path, write_config, database_url, embedder)
    with psycopg.connect(database_url) as conn:
        vectors = _vectors_by_page(conn)
        only = dict(conn.execute("SELECT uri, coalesce((meta->>'keyword_only')::boolean, false) FROM documents"))
        gen = generations.live(conn)
        assert gen is not None
        assert generations.missing(conn, gen) == 0  # a reindex would switch: nothing it must embed
        assert admin.chunks_without_embedding(conn, "m").ok  # the ingest check passes
    assert only == {"sitemap.html": True, "vacuum.html": False, "backup.html": False}
    assert vectors["sitemap.html"] == 0 and vectors["vacuum.html"] > 0, vectors
    assert stats.chunks_embedded == stats.chunks_indexed - 1  # the sitemap's one chunk was not embedded
    with Searcher(settings, url=database_url, embedder=embedder, reranker=None) as s:
        pages = {m: [h.doc_key.split(":", 1)[1] for h in s.search("freezing transaction ids", 5, m)] for m in
                 ("dense", "keyword", "hybrid")}  # fmt: skip
    assert "sitemap.html" not in pages["dense"]
    assert "sitemap.html" in pages["keyword"] and "sitemap.html" in pages["hybrid"]
    assert pages["hybrid"][0] == "vacuum.html"


def test_index_pages_on_embeds_them_too(tmp_path, write_config, database_url, embedder):
    _ingest(tmp_path, write_config, database_url, embedder, embedding={"index_pages": True})
    with psycopg.connect(database_url) as conn:
        assert all(n > 0 for n in _vectors_by_page(conn).values())
        assert not conn.execute("SELECT count(*) FROM documents WHERE meta ? 'keyword_only'").fetchone()[0]


def test_a_threshold_of_zero_keeps_every_page_out_of_dense_search(tmp_path, write_config, database_url, embedder):
    """The one threshold (search.index_link_share) decides; a page without links has share 0, an index
    page only at threshold 0, where no chunk has a vector and dense search finds nothing, without error."""
    settings, _ = _ingest(tmp_path, write_config, database_url, embedder, search={"index_link_share": 0.0})
    with Searcher(settings, url=database_url, embedder=embedder, reranker=None) as s:
        assert s.search("freezing transaction ids", 5, "dense") == []
        assert s.search("freezing transaction ids", 5, "keyword")


def test_an_index_page_is_kept_but_ranks_below_the_page_it_points_at(
    tmp_path, write_config, database_url, embedder, monkeypatch
):
    """A page that is mostly links (a sitemap) is indexed with its link share and, in hybrid search,
    scores index_weight × what it would score as content, so the page holding the answer comes first."""
    _ingest(tmp_path, write_config, database_url, embedder)
    config = tmp_path / "sources.yml"  # the one _ingest wrote
    with psycopg.connect(database_url) as conn:
        share = dict(conn.execute("SELECT uri, (meta->>'link_share')::real FROM documents").fetchall())
    assert share["sitemap.html"] >= 0.9 and (share["vacuum.html"] or 0) == 0, share

    def scores(weight: str) -> dict[str, float]:
        monkeypatch.setenv("DOCFORGE_SEARCH_INDEX_WEIGHT", weight)
        settings = load_settings(config)
        with Searcher(settings, url=database_url, embedder=embedder, reranker=None) as s:
            hits = s.search("vacuum freezing transaction ids", 5, "hybrid")
        return {h.doc_key.split(":", 1)[1]: h.score for h in hits}

    off, on = scores("1"), scores("0.5")
    assert on["sitemap.html"] == pytest.approx(0.5 * off["sitemap.html"], rel=1e-3)
    assert next(iter(on)) == "vacuum.html"  # the page with the answer first
    assert on["vacuum.html"] == pytest.approx(off["vacuum.html"], rel=1e-3)  # content is not touched

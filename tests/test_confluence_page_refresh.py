"""A Confluence webhook's run refreshes the pages it names without listing the space: the API double
counts the requests, a real store holds the index."""

from __future__ import annotations

import psycopg
import pytest

from pipeline.config import load_settings
from pipeline.ingest import IngestContext, ingest_source
from tests.confluence_double import ConfluenceDouble
from tests.conftest_confluence import confluence_double, confluence_env  # noqa: F401


@pytest.fixture
def wiki(confluence_double: ConfluenceDouble, write_config, database_url, embedder):
    d = confluence_double
    d.add_page("1001", "Deploys", "<p>Deploys go out on Tuesdays.</p>")
    d.add_page("1002", "Rollbacks", "<p>Roll back with the red lever.</p>")
    d.add_page("1003", "Pagers", "<p>The pager rotates weekly.</p>")
    cfg = write_config([{"name": "wiki", "type": "confluence", "base_url": d.base_url, "space": "DOCS"}])
    ctx = IngestContext(load_settings(cfg), url=database_url, embedder=embedder)
    ingest_source(ctx, "wiki")
    d.counts.clear()
    return d, ctx, database_url


def texts(url: str) -> dict[str, str]:
    with psycopg.connect(url) as conn:
        rows = conn.execute("SELECT doc_key, string_agg(text, ' ') FROM chunks GROUP BY doc_key").fetchall()
    return dict(rows)


def test_a_delivered_page_is_refreshed_without_listing_the_space(wiki):
    d, ctx, url = wiki
    d.bump("1002", "<p>Roll back with the blue lever now.</p>")
    d.bump("1003", "<p>The pager rotates daily.</p>")  # changed too, but not delivered: left for later
    fetched = d.body_fetches()
    stats = ingest_source(ctx, "wiki", pages=["1002"])
    assert (stats.files_updated, stats.files_deleted, stats.files_unchanged) == (1, 0, 0)
    assert d.counts["space_pages"] == 0  # the space is not listed
    assert d.counts["spaces"] == 1  # its key looked up once, to check the page is in scope
    assert d.body_fetches() == fetched + 1
    now = texts(url)
    assert "blue lever" in now["wiki:1002"] and "weekly" in now["wiki:1003"] and "wiki:1001" in now


def test_a_delivered_deleted_page_leaves_the_index_and_only_it(wiki):
    d, ctx, url = wiki
    d.delete("1001")
    stats = ingest_source(ctx, "wiki", pages=["1001"])
    assert stats.files_deleted == 1
    assert set(texts(url)) == {"wiki:1002", "wiki:1003"}


def test_a_page_outside_the_source_is_not_indexed(wiki, write_config):
    d, ctx, url = wiki
    d.add_page("1004", "Elsewhere", "<p>Not in scope.</p>")
    narrow = write_config(
        [{"name": "wiki", "type": "confluence", "base_url": d.base_url, "page_ids": ["1002"]}],
        path=ctx.settings.config_path.parent / "narrow.yml",
    )
    narrow_ctx = IngestContext(load_settings(narrow), url=url, embedder=ctx.embedder)
    stats = ingest_source(narrow_ctx, "wiki", pages=["1004"])
    assert stats.files_added == 0 and "wiki:1004" not in texts(url)
    assert {"wiki:1001", "wiki:1002", "wiki:1003"} <= set(texts(url))  # nothing else was touched

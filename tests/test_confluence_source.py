"""The Confluence source against the API double: listing, increments, faults, isolation, secrets."""

from __future__ import annotations

import base64
import logging
from datetime import timedelta
from email.utils import format_datetime

import httpx
import pytest

from pipeline.config import ConfluenceSourceConfig, Settings
from pipeline.errors import ConfluenceError
from pipeline.records import Document, Failure
from pipeline.sources import open_source
from pipeline.sources.confluence import ConfluenceSource
from pipeline.sources.confluence_client import ConfluenceClient
from tests.confluence_double import ConfluenceDouble
from tests.conftest_confluence import EMAIL, TOKEN, confluence_double, confluence_env  # noqa: F401 (fixtures)
from tests.fake_clock import NOW, FakeClock

SECRETS = [TOKEN, base64.b64encode(f"{EMAIL}:{TOKEN}".encode()).decode()]


def config(double: ConfluenceDouble, **kw) -> ConfluenceSourceConfig:
    defaults = {"space": "DOCS", "max_retry_after_s": 0.05, "retry_budget_s": 5.0, "timeout_s": 5.0}
    return ConfluenceSourceConfig(name="wiki", type="confluence", base_url=double.base_url, **{**defaults, **kw})


def source(double: ConfluenceDouble, clock: FakeClock | None = None, **kw) -> ConfluenceSource:
    return ConfluenceSource(config(double, **kw), clock=clock or FakeClock())


@pytest.fixture
def wiki(confluence_double: ConfluenceDouble) -> ConfluenceDouble:
    """Home > Guide > (Install, Upgrade); eight loose pages; 12 pages, 4 cursor pages of 3."""
    d = confluence_double
    d.add_page("100", "Home", "<p>home</p>")
    d.add_page("101", "Guide", "<h2>Intro</h2><p>guide</p>", parent_id="100", labels=["howto"])
    d.add_page("102", "Install", "<p>pip install docforge</p>", parent_id="101", labels=["howto", "eng"])
    d.add_page("103", "Upgrade", "<p>read the changelog</p>", parent_id="101", labels=["archived"])
    for i in range(104, 112):
        d.add_page(str(i), f"Note {i}", f"<p>note {i}</p>")
    return d


def test_lists_every_page_across_cursor_pages(wiki):
    refs = source(wiki).list_refs()
    assert [r.path for r in refs] == [str(i) for i in range(100, 112)]
    assert wiki.counts["space_pages"] == 4 and wiki.counts["page"] == 0  # listing fetches no body
    ref = refs[2]
    assert ref.key == "wiki:102" and ref.version == "1"
    assert ref.meta == {
        "page_id": "102",
        "title": "Install",
        "url": f"{wiki.base_url}/spaces/DOCS/pages/102",
        "space": "DOCS",
        "version": 1,
    }


def test_follows_the_link_header_when_the_body_has_no_next(wiki):
    wiki.link_header_only = True
    assert len(source(wiki).list_refs()) == 12 and wiki.counts["space_pages"] == 4


def test_fetch_returns_storage_body_with_title_url_labels_breadcrumb(wiki):
    src = source(wiki)
    refs = {r.path: r for r in src.list_refs()}
    [doc] = src.fetch([refs["102"]])
    assert isinstance(doc, Document) and doc.kind == "confluence"
    assert (doc.title, doc.content, doc.url) == ("Install", "<p>pip install docforge</p>", refs["102"].meta["url"])
    assert doc.ref.meta["labels"] == ["eng", "howto"] and doc.ref.meta["breadcrumb"] == ["Home", "Guide"]
    assert doc.ref.key == "wiki:102" and doc.ref.version == "1" and len(doc.content_hash) == 64


def test_only_a_bumped_page_differs_and_only_it_is_fetched(wiki):
    src = source(wiki)
    ledger = {r.key: r.version for r in src.list_refs()}
    wiki.bump("105", "<p>note 105, revised</p>")
    refs = src.list_refs()
    changed = [r for r in refs if ledger.get(r.key) != r.version]
    assert [(r.path, r.version) for r in changed] == [("105", "2")]
    docs = list(src.fetch(changed))
    assert wiki.body_fetches() == 1 and docs[0].content == "<p>note 105, revised</p>"


def test_a_deleted_page_is_absent_from_the_listing(wiki):
    wiki.delete("104")
    wiki.pages["106"].status = "archived"
    paths = {r.path for r in source(wiki).list_refs()}
    assert "104" not in paths and "106" not in paths and len(paths) == 10


@pytest.mark.parametrize(
    "include, exclude, expected",
    [
        ([], ["archived"], {str(i) for i in range(100, 112)} - {"103"}),
        (["howto"], [], {"101", "102"}),
        (["HowTo"], ["eng"], {"101"}),
    ],
)
def test_label_filters_apply_at_listing(wiki, include, exclude, expected):
    refs = source(wiki, labels_include=include, labels_exclude=exclude).list_refs()
    assert {r.path for r in refs} == expected
    assert all("labels" in r.meta for r in refs) and wiki.counts["page"] == 0


def test_page_ids_with_children(wiki):
    refs = source(wiki, space=None, page_ids=["101"], include_children=True).list_refs()
    assert [r.path for r in refs] == ["101", "102", "103"] and all(r.meta["space"] == "DOCS" for r in refs)
    assert [r.path for r in source(wiki, space=None, page_ids=[101, "999"]).list_refs()] == ["101"]


def test_a_429_storm_waits_as_told_within_the_cap(wiki):
    wiki.inject(429, 1, retry_after=format_datetime(NOW + timedelta(seconds=7), usegmt=True))  # a date: 7 s away
    wiki.inject(429, 1, retry_after="2")  # honoured
    wiki.inject(429, 1, retry_after="100000")  # absurd: capped at max_retry_after_s
    wiki.inject(429, 3)  # no Retry-After: exponential backoff, 0.5 s × 2^(attempt-1) plus up to 0.5 s of jitter
    clock = FakeClock()
    src = source(wiki, clock, max_attempts=12, max_retry_after_s=30, retry_budget_s=1000)  # all six hit one request
    refs = src.list_refs()
    docs = list(src.fetch(refs[:2]))
    assert len(refs) == 12 and all(isinstance(d, Document) for d in docs)
    assert clock.waits[:3] == [7.0, 2.0, 30.0] and len(clock.waits) == 6
    for attempt, wait in enumerate(clock.waits[3:], start=4):
        assert 0.5 * 2 ** (attempt - 1) <= wait <= 0.5 * 2 ** (attempt - 1) + 0.5
    assert src.api.waited == sum(clock.waits)


def test_backoff_without_retry_after_is_capped(wiki):
    wiki.inject(429, 6)
    clock = FakeClock()
    assert len(source(wiki, clock, max_attempts=12, max_retry_after_s=3, retry_budget_s=100).list_refs()) == 12
    assert len(clock.waits) == 6 and all(0.5 <= w < 3 for w in clock.waits[:3])  # 0.5 s, 1 s, 2 s (+ jitter)
    assert clock.waits[3:] == [3.0, 3.0, 3.0]  # 4 s, 8 s, 16 s: capped


def test_5xx_bursts_on_a_list_call_halve_the_limit_and_complete(wiki):
    wiki.inject(503, 3, endpoint="space_pages")
    wiki.inject(500, 2, endpoint="page")
    src = source(wiki, page_size=40)
    refs = src.list_refs()
    assert len(refs) == 12 and all(isinstance(d, Document) for d in src.fetch(refs[:1]))
    limits = [p.split("limit=")[1].split("&")[0] for p, _ in wiki.log if "/spaces/98765/pages" in p]
    assert limits[:4] == ["40", "40", "20", "10"]  # halved from the second 5xx on


def test_timeouts_are_retried(wiki):
    wiki.inject(None, 2, delay=0.6, endpoint="spaces")
    clock = FakeClock()
    assert len(source(wiki, clock, timeout_s=0.2).list_refs()) == 12
    assert len(clock.waits) == 2 and wiki.counts["spaces"] == 3


def test_the_retry_budget_bounds_a_storm_that_never_ends(wiki):
    wiki.inject(429, 1000, retry_after="100000")
    clock = FakeClock()
    src = source(wiki, clock, max_retry_after_s=10, retry_budget_s=25, max_attempts=50)
    with pytest.raises(ConfluenceError, match="retry budget") as err:
        src.list_refs()
    assert clock.waits == [10.0, 10.0, 5.0] and src.api.waited == 25.0  # the last wait is what the budget had left
    assert wiki.counts["spaces"] == 4 and "/wiki/api/v2/spaces" in str(err.value)


def test_max_attempts_bounds_retries(wiki):
    wiki.inject(502, 10, endpoint="spaces")
    with pytest.raises(ConfluenceError, match="502 Bad Gateway after 3 attempt"):
        source(wiki, max_attempts=3).list_refs()
    assert wiki.counts["spaces"] == 3


def test_one_failing_page_is_a_failure_and_the_rest_are_fetched(wiki):
    src = source(wiki)
    refs = src.list_refs()
    wiki.pages["103"].fail, wiki.pages["104"].fail, wiki.pages["105"].fail = 404, 403, "no-body"
    out = {item.key if isinstance(item, Failure) else item.ref.key: item for item in src.fetch(refs)}
    failures = {k: v for k, v in out.items() if isinstance(v, Failure)}
    assert set(failures) == {"wiki:103", "wiki:104", "wiki:105"} and len(out) == 12
    assert all(f.stage == "fetch" for f in failures.values())
    assert "404 not found" in failures["wiki:103"].error and "/pages/103" in failures["wiki:103"].error
    assert "403 forbidden" in failures["wiki:104"].error
    assert "no storage body" in failures["wiki:105"].error


def test_listing_errors_raise_rather_than_return_a_partial_listing(wiki):
    with pytest.raises(ConfluenceError, match="space 'NOPE' not found"):
        source(wiki, space="NOPE").list_refs()
    wiki.inject(500, 100, endpoint="space_pages")
    with pytest.raises(ConfluenceError):
        source(wiki, max_attempts=2).list_refs()


def test_secrets_never_appear_in_errors_logs_or_metadata(wiki, caplog, monkeypatch):
    caplog.set_level(logging.DEBUG)
    src = source(wiki)
    refs = src.list_refs()
    wiki.pages["101"].fail = 403
    wiki.inject(429, 100, endpoint="page", retry_after="0")
    texts = [str(x) for x in src.fetch(refs[:3])] + [repr(src.__dict__), repr(src.api.service.http.auth)]
    monkeypatch.setenv("CONFLUENCE_API_TOKEN", "wrong-" + TOKEN)
    with pytest.raises(ConfluenceError, match="401 unauthorized") as err:
        source(wiki).list_refs()
    texts += [str(err.value), caplog.text, repr(refs)]
    assert "Failure" in texts[0] and "429" in caplog.text
    for text in texts:
        for secret in SECRETS:
            assert secret not in text


def test_error_bodies_are_redacted(confluence_env):
    cfg = ConfluenceSourceConfig(name="w", type="confluence", base_url="https://x.atlassian.net/wiki", space="S")
    client = ConfluenceClient(cfg)
    resp = httpx.Response(400, text=f"bad request from {TOKEN}", request=httpx.Request("GET", "https://x"))
    with pytest.raises(ConfluenceError) as err:
        client.service.check(resp, "GET /wiki/api/v2/pages")
    assert TOKEN not in str(err.value) and "***" in str(err.value)


def test_bearer_token_auth(monkeypatch):
    for var in ("CONFLUENCE_EMAIL", "CONFLUENCE_API_TOKEN"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("CONFLUENCE_BEARER_TOKEN", "pat-123")
    with ConfluenceDouble(bearer="pat-123") as double:
        double.add_page("1", "Only", "<p>x</p>")
        assert [r.path for r in source(double).list_refs()] == ["1"]


@pytest.mark.parametrize(
    "env, message",
    [
        ({}, "no Confluence credentials"),
        ({"CONFLUENCE_API_TOKEN": "t"}, "CONFLUENCE_EMAIL is not"),
    ],
)
def test_missing_credentials_are_named(monkeypatch, env, message):
    for var in ("CONFLUENCE_EMAIL", "CONFLUENCE_API_TOKEN", "CONFLUENCE_BEARER_TOKEN", "CONFLUENCE_PAT"):
        monkeypatch.delenv(var, raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    cfg = ConfluenceSourceConfig(name="w", type="confluence", base_url="https://x.atlassian.net/wiki", space="S")
    with pytest.raises(ConfluenceError, match=message):
        ConfluenceSource(cfg)


def test_connections_are_reused(wiki):
    src = source(wiki)
    list(src.fetch(src.list_refs()))
    assert sum(wiki.counts.values()) > 20 and wiki.connections == 1


@pytest.mark.parametrize(
    "link, expected",
    [
        ("/wiki/api/v2/pages?cursor=a", "https://x.atlassian.net/wiki/api/v2/pages?cursor=a"),
        ("/api/v2/pages?cursor=a", "https://x.atlassian.net/wiki/api/v2/pages?cursor=a"),
        ("https://x.atlassian.net/wiki/api/v2/pages?cursor=a", "https://x.atlassian.net/wiki/api/v2/pages?cursor=a"),
    ],
)
def test_next_links_resolve_against_the_site(confluence_env, link, expected):
    cfg = ConfluenceSourceConfig(name="w", type="confluence", base_url="https://x.atlassian.net/wiki/", space="S")
    client = ConfluenceClient(cfg)
    assert str(client._resolve(link)) == expected
    # another host: never sent credentials; the same path is asked of our own site
    assert str(client._resolve("https://evil.example.com" + link.removeprefix("https://x.atlassian.net"))) == expected


def test_open_source_builds_a_confluence_source(wiki):
    cfg = config(wiki)
    assert isinstance(open_source(Settings(sources=[cfg]), cfg), ConfluenceSource)


def test_a_source_needs_a_space_or_page_ids(wiki):
    with pytest.raises(ValueError, match="set 'space'"):  # refused when the config loads
        source(wiki, space=None)

"""`permissions: sync` end to end: a Confluence space on the API double (real HTTP), ingested for real into
Postgres, read back as several principals: through the served HTTP API (callers from a tokens file,
search in every mode, chunks by id, sources) and through the SQL that enforces access (docforge_may_read).

The space is readable by one group only (staff). Page 200 is restricted (group hr, Bob by account id,
Carol by email); 400 is its grandchild and has no restriction of its own; an attachment of 300 (200's
child) inherits the restriction. Then restrictions change upstream with no content change (applied
in place, 0 vectors computed), and a permission read fails for one page (that page fails closed).
"""

from __future__ import annotations

import hashlib
from contextlib import contextmanager

import httpx
import psycopg
import pytest
import yaml
from pydantic import SecretStr

from docforge.servers import LocalSearch
from docforge.servers.api import create_app
from docforge.servers.auth import AuthConfig, Authenticator
from docforge.servers.web import LocalStore
from pipeline import access
from pipeline.access import Principal
from pipeline.config import load_settings
from pipeline.ingest import IngestContext, ingest_source
from pipeline.query import Searcher
from tests.confluence_double import ConfluenceDouble
from tests.conftest_confluence import TOKEN, confluence_double, confluence_env  # noqa: F401 (fixtures)
from tests.doc_files import make_pdf
from tests.helpers import ServerThread
from tests.test_ingest_cli import docforge

BOB, CAROL = "5b10ac8d82e05b22cc7d4ef5", "712020:0f4c2b4e-9a7d-4c55-9f55-3c1a2b3c4d5e"
HR = Principal("dana@example.com", frozenset({"staff", "hr"}))  # allowed by group
BY_ID = Principal(BOB, frozenset({"staff"}))  # allowed by account id (his email is hidden)
BY_EMAIL = Principal("Carol@Example.com", frozenset({"staff"}))  # allowed by email
STAFF = Principal("eve@example.com", frozenset({"staff"}))  # in the space, not in the restriction
OUTSIDER = Principal("mallory@example.com", frozenset({"hr"}))  # in hr, but not granted the space
ADMIN = access.FULL_ACCESS
TOKENS = {HR: "tok-dana", BY_ID: "tok-bob", BY_EMAIL: "tok-carol", STAFF: "tok-eve", OUTSIDER: "tok-mallory"}
ADMIN_TOKEN = "tok-admin"
OPEN = {"wiki:100", "wiki:500"}
RESTRICTED = {"wiki:200", "wiki:300", "wiki:400", "wiki:300/attachments/att30001"}


@pytest.fixture
def wiki(confluence_double: ConfluenceDouble, write_config):
    d = confluence_double
    d.add_user(BOB, "")  # his privacy settings hide his email
    d.add_user(CAROL, "carol@example.com")
    d.grant_space("group", d.add_group("staff"))  # the space: one group only
    d.add_page("100", "Home", "<p>Welcome to the company handbook.</p>")
    d.add_page("200", "People", "<p>People operations.</p>", parent_id="100")
    d.restrict("200", users=[BOB, CAROL], groups=["hr"])
    d.add_page("300", "Compensation", "<p>How pay is set.</p>", parent_id="200")
    d.add_page("400", "Salary bands", "<p>The zeppelin bonus ladder tops out at band nine.</p>", parent_id="300")
    d.add_page("500", "Canteen", "<p>The canteen serves paella on Fridays.</p>", parent_id="100")
    d.add_attachment("300", "relocation.pdf", make_pdf([["Relocation stipend: eleven thousand kroner."]]))
    (write_config([]).parent / "tokens.yml").write_text(
        yaml.safe_dump(
            {
                "tokens": [
                    {"name": p.name, "sha256": hashlib.sha256(t.encode()).hexdigest(), "groups": sorted(p.groups)}
                    for p, t in TOKENS.items()
                ]
            }
        )
    )
    cfg = write_config(
        [
            {
                "name": "wiki",
                "type": "confluence",
                "base_url": d.base_url,
                "space": "DOCS",
                "permissions": "sync",
                "attachments": True,
                "max_retry_after_s": 0.05,
                "max_attempts": 2,
            }
        ]
    )
    return d, load_settings(cfg)


def readable(url: str, reader: Principal, words: str) -> set[str]:
    """Documents `reader` may read whose chunks hold `words`, access checked in the statement that finds them."""
    cond, params = access.predicate(reader, "d")
    query = psycopg.sql.SQL(
        "SELECT DISTINCT d.key FROM documents d JOIN chunks c ON c.doc_key = d.key "
        "WHERE d.source = 'wiki' AND c.text ILIKE %(words)s AND {}"
    ).format(cond)
    with psycopg.connect(url) as conn:
        return {k for (k,) in conn.execute(query, {**params, "words": f"%{words}%"})}


def everything(url: str, reader: Principal) -> set[str]:
    return readable(url, reader, "")


@contextmanager
def served(settings, url: str, embedder):
    """The HTTP API over the store: admin token and the tokens file's callers."""
    auth = Authenticator(AuthConfig(api_tokens=SecretStr(ADMIN_TOKEN), tokens_file="tokens.yml"), settings.resolve_path)
    searcher = Searcher(settings, url=url, embedder=embedder, reranker=None)
    with searcher, ServerThread(create_app(LocalSearch(searcher), auth, store=LocalStore(searcher))) as srv:
        yield srv.url


def api(base: str, token: str, method: str, path: str, body: dict | None = None) -> httpx.Response:
    return httpx.request(method, f"{base}/{path}", json=body, headers={"Authorization": f"Bearer {token}"}, timeout=60)


def found(base: str, token: str, query: str) -> dict[str, set[str]]:
    """The documents /search returns in each mode, for `query`."""
    out = {}
    for mode in ("keyword", "dense", "hybrid"):
        body = {"query": query, "mode": mode, "rerank": False, "limit": 20, "per_doc": 0}
        resp = api(base, token, "POST", "search", body)
        assert resp.status_code == 200, resp.text
        out[mode] = {h["doc_key"] for h in resp.json()["hits"]}
    return out


def test_confluence_permissions_are_enforced_and_follow_upstream(wiki, database_url, embedder):
    d, settings = wiki
    run = lambda: ingest_source(IngestContext(settings, url=database_url, embedder=embedder), "wiki")  # noqa: E731
    first = run()
    assert (first.files_added, first.files_failed) == (6, 0) and first.chunks_embedded > 0

    with served(settings, database_url, embedder) as base:
        # through the API: the grandchild of the restricted page, by group, by account id, by email
        for allowed in (HR, BY_ID, BY_EMAIL):
            hits = found(base, TOKENS[allowed], "zeppelin bonus ladder band nine")
            assert all("wiki:400" in keys for keys in hits.values()), (allowed, hits)
        for token in (TOKENS[STAFF], TOKENS[OUTSIDER]):
            hits = found(base, token, "zeppelin bonus ladder band nine")
            assert not any(keys & RESTRICTED for keys in hits.values()), hits
        assert "wiki:500" in found(base, TOKENS[STAFF], "paella on Fridays")["keyword"]
        assert found(base, TOKENS[OUTSIDER], "paella on Fridays") == {"keyword": set(), "dense": set(), "hybrid": set()}
        assert "wiki:400" in found(base, ADMIN_TOKEN, "zeppelin bonus ladder")["keyword"]
        # the attachment inherits its page's restriction
        assert "wiki:300/attachments/att30001" in found(base, TOKENS[HR], "relocation stipend kroner")["keyword"]
        assert not any("attachments" in k for k in found(base, TOKENS[STAFF], "relocation stipend kroner")["dense"])
        # a restricted chunk by id: 404 to the others, as a chunk that does not exist
        with psycopg.connect(database_url) as conn:
            chunk = conn.execute("SELECT min(id) FROM chunks WHERE doc_key = 'wiki:400'").fetchone()[0]
        missing = api(base, TOKENS[STAFF], "GET", "chunks/no-such-chunk")
        refused = api(base, TOKENS[STAFF], "GET", f"chunks/{chunk}")
        assert (refused.status_code, refused.json()) == (404, missing.json())
        assert api(base, TOKENS[BY_EMAIL], "GET", f"chunks/{chunk}").json()["doc_key"] == "wiki:400"
        # the source is listed to whoever may read one of its documents; not to the outsider
        assert [s["name"] for s in api(base, TOKENS[STAFF], "GET", "sources").json()["sources"]] == ["wiki"]
        assert api(base, TOKENS[OUTSIDER], "GET", "sources").json()["sources"] == []

    # the same, for every document, in the statement that reads them
    for allowed in (HR, BY_ID, BY_EMAIL, ADMIN):
        assert readable(database_url, allowed, "zeppelin bonus ladder") == {"wiki:400"}, allowed
        assert everything(database_url, allowed) == OPEN | RESTRICTED, allowed
    assert readable(database_url, STAFF, "zeppelin bonus ladder") == set()
    assert everything(database_url, STAFF) == OPEN
    # the attachment carries its page's restriction
    assert readable(database_url, HR, "Relocation stipend") == {"wiki:300/attachments/att30001"}
    assert readable(database_url, STAFF, "Relocation stipend") == set()
    # the space is granted to staff only: hr membership alone reads nothing
    assert everything(database_url, OUTSIDER) == set()

    # A restriction added upstream, no content change: enforced by the next run, no vector computed.
    d.restrict("500", groups=["kitchen"])
    locked = run()
    assert (locked.files_access_updated, locked.files_updated, locked.chunks_embedded) == (1, 0, 0)
    assert d.body_fetches() == 5  # the first run's 5 pages, none since
    assert readable(database_url, STAFF, "paella") == set()
    assert readable(database_url, Principal("cook@example.com", frozenset({"staff", "kitchen"})), "paella") == {
        "wiki:500"
    }
    with served(settings, database_url, embedder) as base:
        assert not any("wiki:500" in keys for keys in found(base, TOKENS[STAFF], "paella on Fridays").values())
    # ... and lifted: visible again, still without a vector
    d.restrict("500")
    lifted = run()
    assert (lifted.files_access_updated, lifted.chunks_embedded) == (1, 0)
    assert readable(database_url, STAFF, "paella") == {"wiki:500"}
    with served(settings, database_url, embedder) as base:
        assert "wiki:500" in found(base, TOKENS[STAFF], "paella on Fridays")["keyword"]

    # A permission read that fails for one page: that page fails closed, the others are indexed as before.
    d.pages["500"].restriction_fail = 500
    failing = run()
    assert [(f.key, f.stage) for f in failing.failures] == [("wiki:500", "permissions")]
    message = failing.failures[0].error
    assert "HTTP 500" in message and "hidden from all but full-access callers" in message
    assert (failing.files_access_updated, failing.chunks_embedded) == (1, 0)
    assert readable(database_url, STAFF, "paella") == set() and readable(database_url, ADMIN, "paella") == {"wiki:500"}
    assert everything(database_url, STAFF) == {"wiki:100"} and everything(database_url, HR) == (OPEN | RESTRICTED) - {
        "wiki:500"
    }
    d.pages["500"].restriction_fail = None
    healed = run()
    assert (healed.files_failed, healed.files_access_updated, healed.chunks_embedded) == (0, 1, 0)
    assert everything(database_url, STAFF) == OPEN


def test_the_ingest_report_says_which_page_is_closed_and_why(wiki, database_url):
    d, settings = wiki
    d.pages["500"].restriction_fail = 503
    res = docforge("ingest", "--config", str(settings.config_path), check=False, env={"COLUMNS": "80"})
    assert res.returncode == 1, "a page whose permissions could not be read makes the run a partial failure"
    out = res.stdout
    assert all(len(line) <= 80 for line in out.splitlines()), out
    said = " ".join(out.split())
    assert "wiki:500 (permissions): page 500 is hidden from all but full-access callers" in said, out
    assert "until a run reads its permissions (the next run tries again): its read restriction: GET" in said
    assert "HTTP 503" in said and TOKEN not in out + res.stderr

"""Tests that try to get in (issue 27): two principals from a tokens file and three sources — open,
group-only through sources.yml `access:`, and one whose page carries a restriction as a Confluence sync
finds it (DocRef.access: a space clause and a restricted ancestor's) — served by a real API on 127.0.0.1
over a real Postgres. Every surface and path shows the restricted text to the allowed principal and never
to the other: search in each mode and reranked, filters written to widen scope, per_doc, ask in both cache
orders, chunks by id, sources, the page in headless Chromium, MCP through `--remote-api`; admin tokens
(DOCFORGE_API_TOKENS) see everything; an `access:` edit is enforced after the next ingest with 0 vectors
computed."""

from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import httpx
import jwt
import psycopg
import pytest
import yaml
from fastapi import FastAPI
from mcp import StdioServerParameters
from pydantic import SecretStr

from docforge.servers import LocalSearch
from docforge.servers.api import create_app
from docforge.servers.ask import LocalAsk
from docforge.servers.auth import AuthConfig, Authenticator
from docforge.servers.web import LocalStore
from pipeline.access import FULL_ACCESS, Principal, predicate
from pipeline.answers import Answerer, provenance
from pipeline.config import load_settings
from pipeline.errors import ConfigError
from pipeline.ingest import IngestContext, ingest_source
from pipeline.ingest import documents as stage1
from pipeline.query import Searcher
from pipeline.query.rerank import CrossEncoderReranker
from pipeline.sources import open_source
from pipeline.sources.directory import DirectorySource
from tests.helpers import ServerThread, commit_repo, docforge_api, write_files
from tests.test_api import rsa_key
from tests.test_mcp import DOCFORGE, server_env, session_calls
from tests.test_web import CHROMEDRIVER, CHROMIUM, browser  # noqa: F401 (the browser fixture)
from tests.tiny_models import cross_encoder

ADMIN, ANN, BOB = "admin-token-1", "ann-token-2", "bob-token-3"
# ann may read HR and the restricted wiki page; bob is in eng but neither in hr nor among the leads.
CALLERS = [
    {"name": "ann@x.com", "sha256": hashlib.sha256(ANN.encode()).hexdigest(), "groups": ["hr", "eng", "leads"]},
    {"name": "bob@x.com", "sha256": hashlib.sha256(BOB.encode()).hexdigest(), "groups": ["eng"]},
]
MARKERS = ("compensation committee", "nightingale")  # words only the restricted documents hold
HIDDEN = ("hr:docs/bands.md", "hr:docs/leave.md", "wiki:secret/plan.md")
SECRET_QUERY = "who sets the salary bands for staff engineers, the compensation committee?"
OPEN_NOTES = {
    f"note{i}.md": f"# Salary note {i}\n\nSalary bands for team {i} are explained by managers.\n" for i in range(8)
}


class Restricting(DirectorySource):
    """A directory source whose pages under `secret/` carry what a Confluence permission sync finds:
    a clause for the space (eng) and one for a restricted ancestor (ann, or the leads group)."""

    clauses: tuple[tuple[str, ...], ...] = (("group:eng",), ("user:ann@x.com", "group:leads"))

    def list_refs(self):
        return [replace(r, access=self.clauses) if r.path.startswith("secret/") else r for r in super().list_refs()]


def opener(settings, cfg):
    return Restricting(cfg, settings.resolve_path(cfg.path)) if cfg.name == "wiki" else open_source(settings, cfg)


def sources_yml(root: Path, hr_access: list[str]) -> list[dict]:
    return [
        {"name": "open", "type": "directory", "path": str(root / "open")},
        {"name": "hr", "type": "git", "repo": str(root / "hr"), "access": hr_access},
        {"name": "wiki", "type": "directory", "path": str(root / "wiki")},
        {"name": "drafts", "type": "directory", "path": str(root / "empty"), "access": ["eng"]},  # not ingested
        {"name": "legal", "type": "directory", "path": str(root / "empty"), "access": ["legal"]},  # not ingested
    ]


def ingest(config: Path, url: str, embedder, *names: str):
    settings = load_settings(config)
    return {n: ingest_source(IngestContext(settings, url=url, embedder=embedder), n) for n in names}


@pytest.fixture(scope="module")
def site(pg_server, embedder, tmp_path_factory):
    """The three sources ingested into their own database, and the API over them (admin tokens and the
    tokens file), with a reranker and the extractive answerer."""
    root = tmp_path_factory.mktemp("access")
    url = pg_server.get_uri(name := f"t_access_{os.getpid()}")
    with psycopg.connect(pg_server.get_uri(), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}"')
    write_files(root / "open", {"pay.md": "# Pay\n\nSalary questions go to your manager.\n", **OPEN_NOTES})
    (root / "empty").mkdir()
    commit_repo(
        root / "hr",
        {
            "docs/bands.md": "# Salary bands\n\nThe compensation committee sets the salary bands for staff engineers "
            "each March: 180k to 240k.\n",
            "docs/leave.md": "# Parental leave\n\nParental leave is twenty weeks, approved by the compensation "
            "committee.\n",
        },
    )
    write_files(
        root / "wiki",
        {
            "home.md": "# Wiki home\n\nWelcome to the engineering wiki; project plans live under secret.\n",
            "secret/plan.md": "# Project Nightingale\n\nThe Nightingale merger closes in May; salary bands stay.\n",
        },
    )
    (root / "tokens.yml").write_text(yaml.safe_dump({"tokens": CALLERS}))
    config = root / "sources.yml"
    config.write_text(yaml.safe_dump({"sources": sources_yml(root, ["hr"])}))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(stage1, "open_source", opener)
        ingest(config, url, embedder, "open", "hr", "wiki")
    settings = load_settings(config)
    reranker = CrossEncoderReranker(str(cross_encoder(root / "models" / "tiny-ce")), device="cpu")
    searcher = Searcher(settings, url=url, embedder=embedder, reranker=reranker)
    answerer = Answerer(settings, searcher=searcher, url=url, llm=None)
    auth = Authenticator(AuthConfig(api_tokens=SecretStr(ADMIN), tokens_file="tokens.yml"), settings.resolve_path)
    app = create_app(LocalSearch(searcher), auth, ask=LocalAsk(answerer), store=LocalStore(searcher))
    with ServerThread(app) as srv:
        srv.root, srv.config, srv.db, srv.embedder = root, config, url, embedder
        yield srv
    answerer.close()
    searcher.close()


def call(site, method: str, path: str, token: str, body: dict | None = None) -> httpx.Response:
    return httpx.request(
        method, f"{site.url}/{path}", json=body, headers={"Authorization": f"Bearer {token}"}, timeout=120
    )


def search(site, token: str, **body) -> list[dict]:
    resp = call(site, "POST", "search", token, {"query": SECRET_QUERY, "rerank": False, **body})
    assert resp.status_code == 200, resp.text
    return resp.json()["hits"]


def leaks(payload) -> list[str]:
    """What of the restricted documents a response shows: their words or their keys (an answer's
    `question` repeats the caller's own words)."""
    if isinstance(payload, dict):
        payload = {k: v for k, v in payload.items() if k != "question"}
    text = json.dumps(payload).lower()
    return [m for m in (*MARKERS, *HIDDEN) if m in text]


MODES = [(m, r) for m in ("dense", "keyword", "hybrid") for r in (False, True)]


@pytest.mark.parametrize("mode, rerank", MODES)
def test_search_in_every_mode_shows_the_restricted_text_only_to_the_allowed(site, mode, rerank):
    for deep in ({}, {"limit": 50, "per_doc": 0}, {"limit": 50, "per_doc": 5}):
        bob = search(site, BOB, mode=mode, rerank=rerank, **deep)
        assert bob and not leaks(bob), (deep, leaks(bob))
        ann = search(site, ANN, mode=mode, rerank=rerank, **deep)
        assert {h["doc_key"] for h in ann} & set(HIDDEN[:2]), deep
    # Filtered inside the ranking, not after it: the hidden chunks rank first for this query, and bob still
    # gets a full page of what he may read.
    assert len(search(site, BOB, mode=mode, rerank=rerank, limit=5, per_doc=1)) == 5


WIDENING = [
    {"source": "hr"},
    {"source": {"$in": ["hr", "wiki", "open"]}},
    {"$or": [{"source": "hr"}, {"source": "open"}]},
    {"source": {"$nin": ["open"]}},
    {"$or": [{"title": {"$contains": "salary"}}, {"doc_key": {"$prefix": ""}}]},
    {"$or": [{"source": "wiki"}, {"path": {"$prefix": "secret"}}]},
    {"$and": [{"source": {"$ne": "nothing"}}, {"$or": [{"type": "git"}, {"type": {"$ne": "git"}}]}]},
    {"doc_key": {"$in": list(HIDDEN)}},
]


@pytest.mark.parametrize("filters", WIDENING, ids=[json.dumps(f) for f in WIDENING])
def test_filters_written_to_widen_scope_never_widen_access(site, filters):
    for mode in ("dense", "keyword", "hybrid"):
        bob = search(site, BOB, mode=mode, filters=filters, limit=50, per_doc=0)
        assert not leaks(bob), (mode, leaks(bob))
        if filters.get("source") == "hr" or "doc_key" in filters:
            assert bob == []
            assert search(site, ANN, mode=mode, filters=filters, limit=50, per_doc=0)
    for repo in ("hr", "wiki", "secret"):  # filter_repo: a path or URL that contains it
        assert not leaks(search(site, BOB, filter_repo=repo, limit=50, per_doc=0))


def test_admin_tokens_see_everything(site):
    admin = search(site, ADMIN, filters={"source": {"$in": ["hr", "wiki"]}}, limit=50, per_doc=0)
    assert {h["doc_key"] for h in admin} >= set(HIDDEN)
    names = {s["name"] for s in call(site, "GET", "sources", ADMIN).json()["sources"]}
    assert names == {"open", "hr", "wiki", "drafts", "legal"}


def test_the_restricted_wiki_page_follows_its_upstream_restriction(site):
    q = {"query": "When does the Nightingale merger close?", "rerank": False, "limit": 20, "per_doc": 0}
    bob = call(site, "POST", "search", BOB, q).json()["hits"]
    assert "wiki:home.md" in {h["doc_key"] for h in bob} and not leaks(bob)
    ann = call(site, "POST", "search", ANN, q).json()["hits"]
    assert ann[0]["doc_key"] == "wiki:secret/plan.md"


def ask(site, token: str, question: str) -> dict:
    resp = call(site, "POST", "ask", token, {"question": question})
    assert resp.status_code == 200, resp.text
    return resp.json()


def test_ask_in_both_cache_orders(site):
    # The allowed principal first: its answer is cached, and never served to the other.
    first = ask(site, ANN, "Who sets the salary bands for staff engineers?")
    assert {c["doc_key"] for c in first["citations"]} & set(HIDDEN) and first["cache"] == "miss"
    other = ask(site, BOB, "Who sets the salary bands for staff engineers?")
    assert other["cache"] == "miss" and not leaks(other), leaks(other)
    assert ask(site, ANN, "Who sets the salary bands for staff engineers?")["cache"] == "hit"  # still a cache
    # The other first: its answer (from what it may read) is not what the allowed one gets.
    other = ask(site, BOB, "When does the Nightingale merger close?")
    assert not leaks(other)
    # why it found nothing is said without the whole index's word statistics (no "does not know")
    assert other["abstained"] and other["addresses_reason"] == "nothing you may read answers it"
    allowed = ask(site, ANN, "When does the Nightingale merger close?")
    assert allowed["cache"] == "miss" and "wiki:secret/plan.md" in {c["doc_key"] for c in allowed["citations"]}
    assert ask(site, BOB, "When does the Nightingale merger close?")["answer"] == other["answer"]
    # Each answer's provenance chain still checks out, with the caller's access fingerprint in its scope.
    with psycopg.connect(site.db) as conn:
        rows = conn.execute("SELECT dag_root, answer, stages FROM answers").fetchall()
        chunks = dict(conn.execute("SELECT id, text FROM chunks").fetchall())
    assert len(rows) == 4
    scopes = set()
    for root, answer, stages in rows:
        assert provenance.check(root, answer, stages, chunks).ok
        scopes.add(next(s for s in stages if s["stage"] == "question")["payload"]["scope"]["access"])
    assert scopes == {Principal(c["name"], frozenset(c["groups"])).fingerprint for c in CALLERS}


def test_chunks_by_id(site):
    with psycopg.connect(site.db) as conn:
        ids = dict(conn.execute("SELECT doc_key, min(id) FROM chunks GROUP BY doc_key").fetchall())
    missing = call(site, "GET", "chunks/no-such-chunk", BOB)
    for key in HIDDEN:
        refused = call(site, "GET", f"chunks/{ids[key]}", BOB)
        assert (refused.status_code, refused.json()) == (404, missing.json())
        shown = call(site, "GET", f"chunks/{ids[key]}", ANN)
        assert shown.status_code == 200 and shown.json()["doc_key"] == key
    assert call(site, "GET", f"chunks/{ids['open:pay.md']}", BOB).status_code == 200


def test_sources_list_only_what_the_caller_may_read(site):
    def listed(token):
        return {s["name"]: s for s in call(site, "GET", "sources", token).json()["sources"]}

    bob, ann = listed(BOB), listed(ANN)
    assert set(bob) == {"open", "wiki", "drafts"}  # hr hidden; drafts (empty) is open to eng, legal is not
    assert set(ann) == {"open", "hr", "wiki", "drafts"}
    assert (bob["wiki"]["documents"], ann["wiki"]["documents"]) == (1, 2)  # counted from what each may read
    assert bob["wiki"]["chunks"] < ann["wiki"]["chunks"]
    assert ann["hr"]["type"] == "git" and {s["type"] for s in bob.values()} <= {"directory", None}


def test_the_page_in_headless_chromium(site, browser):  # noqa: F811
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import Select, WebDriverWait

    wait = WebDriverWait(browser, 60)
    find = browser.find_element

    def login(token: str) -> None:
        browser.get(site.url + "/")
        browser.execute_script("sessionStorage.clear()")
        browser.get(site.url + "/")
        wait.until(ec.visibility_of_element_located((By.ID, "login-view")))
        find(By.ID, "token").send_keys(token)
        find(By.CSS_SELECTOR, "#login-form button").click()
        wait.until(ec.visibility_of_element_located((By.ID, "app-view")))
        wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#search-type option")) > 1)

    def results(query: str, source: str = "") -> str:
        Select(find(By.ID, "search-source")).select_by_value(source)
        box = find(By.ID, "q")
        browser.execute_script("arguments[0].value = ''", box)
        box.send_keys(query)
        old = browser.find_elements(By.CSS_SELECTOR, "#results .result")
        find(By.CSS_SELECTOR, "#search-form button").click()
        if old:  # the last query's results replaced, not read again
            wait.until(ec.staleness_of(old[0]))
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#results .result"))
        return find(By.ID, "results").text.lower()

    def sources() -> set[str]:
        find(By.ID, "tab-sources").click()
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#sources tbody tr"))
        return {
            r.find_element(By.CSS_SELECTOR, "th").text
            for r in find(By.ID, "sources").find_elements(By.CSS_SELECTOR, "tbody tr")
        }

    def offered(select: str) -> list[str]:
        return [o.get_attribute("value") for o in browser.find_elements(By.CSS_SELECTOR, f"#{select} option")]

    # (The page reranks as the server is configured: here a random tiny cross-encoder, so a query is
    # scoped to a source where the order must not matter.)
    login(BOB)
    assert offered("search-type") == ["", "directory"]  # the Type filter from what bob may read: no "git"
    assert offered("search-source") == ["", "open", "wiki", "drafts"]
    shown = results("compensation committee salary bands") + results("Nightingale merger", "wiki")
    assert "welcome to the engineering wiki" in shown and not [m for m in MARKERS if m in shown]
    assert sources() == {"open", "wiki", "drafts"}
    browser.find_element(By.ID, "logout").click()

    login(ANN)
    assert offered("search-type") == ["", "directory", "git"]
    assert offered("search-source") == ["", "open", "hr", "wiki", "drafts"]
    assert "compensation committee" in results("compensation committee salary bands", "hr")
    assert "nightingale" in results("Nightingale merger", "wiki")
    assert sources() == {"open", "hr", "wiki", "drafts"}


def test_mcp_through_remote_api_forwards_the_callers_token(site, tmp_path):
    env = {"DOCFORGE_HOME": str(tmp_path), "HF_HUB_OFFLINE": "1"}
    q = {"query": SECRET_QUERY, "user_name": "x", "team_name": "y", "limit": 10}
    results = {}
    with open(tmp_path / "stderr.log", "w") as errlog:
        for who, token in (("bob", BOB), ("ann", ANN)):
            params = StdioServerParameters(
                command=DOCFORGE, args=["serve", "--remote-api", site.url], env={**env, "DOCFORGE_API_TOKEN": token}
            )
            _, (res,) = session_calls(params, errlog, [q])
            assert not res.is_error, res.content
            results[who] = res.structured_content["hits"]
    assert results["bob"] and not leaks(results["bob"])
    assert {h["doc_key"] for h in results["ann"]} & set(HIDDEN)


def test_the_local_mcp_server_runs_as_its_configured_principal(site, tmp_path):
    base = server_env(SimpleNamespace(url=site.db, config=site.config), tmp_path)
    bob_env = {**base, "DOCFORGE_MCP_PRINCIPAL": "bob@x.com", "DOCFORGE_MCP_GROUPS": "eng"}
    q = {"query": SECRET_QUERY, "user_name": "x", "team_name": "y", "limit": 10}
    with open(tmp_path / "stderr.log", "w") as errlog:
        _, (bob,) = session_calls(StdioServerParameters(command=DOCFORGE, args=["serve"], env=bob_env), errlog, [q])
        _, (local,) = session_calls(StdioServerParameters(command=DOCFORGE, args=["serve"], env=base), errlog, [q])
    assert bob.structured_content["hits"] and not leaks(bob.structured_content["hits"])
    assert {h["doc_key"] for h in local.structured_content["hits"]} & set(HIDDEN)  # default: full access


def test_serve_api_reads_the_tokens_file_from_the_environment(site, tmp_path):
    """The real CLI: `docforge serve --api` with DOCFORGE_API_TOKENS_FILE and no admin token."""
    env = {
        **os.environ,
        "DATABASE_URL": site.db,
        "DOCFORGE_API_TOKENS_FILE": str(site.root / "tokens.yml"),
        "DOCFORGE_HOME": str(tmp_path / "home"),
        "HF_HUB_OFFLINE": "1",
    }
    env.pop("DOCFORGE_API_TOKENS", None)
    log = tmp_path / "stderr.log"
    with docforge_api(["--config", str(site.config)], env, log) as base:

        def names(token):
            resp = httpx.get(f"{base}/sources", headers={"Authorization": f"Bearer {token}"}, timeout=60)
            return {s["name"] for s in resp.json()["sources"]} if resp.status_code == 200 else resp.status_code

        assert (names(BOB), names(ANN), names(ADMIN)) == (
            {"open", "wiki", "drafts"},
            {"open", "hr", "wiki", "drafts"},
            401,  # no admin tokens configured here
        )
    assert BOB not in log.read_text(errors="replace")


# --- principals ------------------------------------------------------------------------------------------


def test_full_access_adds_nothing_to_a_statement():
    assert predicate(FULL_ACCESS)[1] == {} and predicate(None)[1] == {}
    cond, binds = predicate(Principal("Ann@X.com", frozenset({"hr"})))
    assert binds == {"principals": ["group:hr", "user:ann@x.com"]}
    assert Principal("a", frozenset({"x"})).fingerprint == Principal("a", frozenset({"x"})).fingerprint
    assert Principal("a", frozenset({"x"})).fingerprint != Principal("a", frozenset({"y"})).fingerprint
    assert FULL_ACCESS.fingerprint == "full" != Principal("full").fingerprint


def test_every_statement_of_a_search_holds_the_condition_and_full_access_none(site, monkeypatch):
    statements: list[str] = []
    run = Searcher._run

    def watched(self, conn, stmt, binds):
        statements.append(stmt.as_string(conn))
        return run(self, conn, stmt, binds)

    monkeypatch.setattr(Searcher, "_run", watched)
    bob = Principal("bob@x.com", frozenset({"eng"}))
    with Searcher(load_settings(site.config), url=site.db, embedder=site.embedder, reranker=None) as s:
        for reader in (FULL_ACCESS, bob):
            statements.clear()
            for mode in ("dense", "keyword", "hybrid"):
                assert s.search(SECRET_QUERY, 5, mode, reader=reader)  # type: ignore[arg-type]
            assert len(statements) >= 7  # dense + hits, keyword + hits, both legs + centroids + hits
            held = ["docforge_may_read" in st for st in statements]
            assert all(held) if reader is bob else not any(held), (reader, statements)


@pytest.mark.parametrize(
    "text, message",
    [
        ("- name: a\n  sha256: abc\n", "entry 1 (line 1): sha256: sha256 must be the 64 hex digits"),
        ("- name: a\n  token: s3cret\n", "entry 1 (line 1): holds a plain `token`"),
        (
            f"- {{name: a, sha256: {'a' * 64}}}\n- {{name: b, sha256: {'a' * 64}}}\n",
            "entry 2 (line 2): the same sha256",
        ),
        (f"tokens:\n  - name: a\n    sha256: {'b' * 64}\n    grups: [x]\n", "entry 1 (line 2): grups: Extra inputs"),
        ("name: a\n", "expected a list of entries"),
        ("- [unclosed\n", "not valid YAML or JSON"),
    ],
)
def test_a_malformed_tokens_file_is_a_clear_startup_error(tmp_path, text, message):
    path = tmp_path / "tokens.yml"
    path.write_text(text)
    with pytest.raises(ConfigError) as e:
        Authenticator(AuthConfig(tokens_file=str(path)))
    assert message in str(e.value) and "s3cret" not in str(e.value)


def test_a_tokens_file_in_json_and_its_callers(tmp_path):
    path = tmp_path / "tokens.json"
    path.write_text(json.dumps([*CALLERS, {"name": "ops", "sha256": "C" * 64, "full_access": True}]))
    auth = Authenticator(AuthConfig(tokens_file=str(path)))
    ann = auth.authenticate(ANN)
    assert ann is not None and (ann.name, ann.groups, ann.full_access) == ("ann@x.com", {"hr", "eng", "leads"}, False)
    assert auth.authenticate("nope") is None and auth.authenticate(hashlib.sha256(ANN.encode()).hexdigest()) is None
    admin = Authenticator(AuthConfig(api_tokens=SecretStr("a,b"))).authenticate("b")
    assert admin is not None and admin.full_access


def test_a_tokens_file_may_spell_its_keys_as_people_do(tmp_path):
    """`user`/`email` for the name, `token_sha256`/`hash` for the digest, and a `sha256:` prefix read alike."""
    digest = hashlib.sha256(b"t0k").hexdigest()
    path = tmp_path / "tokens.yml"
    path.write_text(f"tokens:\n  - email: Dee@x.com\n    token_sha256: sha256:{digest.upper()}\n    groups: hr, eng\n")
    dee = Authenticator(AuthConfig(tokens_file=str(path))).authenticate("t0k")
    assert dee is not None and (dee.name, dee.groups) == ("Dee@x.com", {"hr", "eng"})
    assert dee.principals == ["group:eng", "group:hr", "user:dee@x.com"]


@pytest.fixture(scope="module")
def jwks(tmp_path_factory):
    key = rsa_key()
    jwk = jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key(), as_dict=True)
    app = FastAPI()
    app.get("/keys")(lambda: {"keys": [{**jwk, "kid": "k1", "use": "sig", "alg": "RS256"}]})
    with ServerThread(app) as srv:
        yield key, f"{srv.url}/keys"


def test_a_jwt_names_its_principal_and_groups_from_configurable_claims(jwks):
    key, url = jwks

    def token(**claims):
        base = {"aud": "api://docforge", "exp": int(time.time()) + 300}
        return jwt.encode({**base, **claims}, key, algorithm="RS256", headers={"kid": "k1"})

    auth = Authenticator(AuthConfig(jwt_jwks_url=url, jwt_audience="api://docforge"))
    who = auth.authenticate(token(email="Ann@X.com", sub="u-1", groups=["hr", "eng"], roles="leads admins"))
    assert who is not None and (who.name, who.groups) == ("Ann@X.com", {"hr", "eng", "leads", "admins"})
    assert who.principals == ["group:admins", "group:eng", "group:hr", "group:leads", "user:ann@x.com"]
    assert not who.full_access
    custom = Authenticator(
        AuthConfig(jwt_jwks_url=url, jwt_audience="api://docforge", jwt_user_claims="sub", jwt_group_claims="teams")
    )
    who = custom.authenticate(token(email="a@x.com", sub="u-1", groups=["hr"], teams="ops,sre"))
    assert who is not None and (who.name, who.groups) == ("u-1", {"ops", "sre"})
    assert custom.authenticate(token(email="a@x.com")) is None  # names no one by the configured claim


# --- last: it changes the store ----------------------------------------------------------------------------


def test_an_access_edit_is_enforced_after_the_next_ingest_without_a_vector(site):
    before = ask(site, ANN, "Who sets the salary bands for staff engineers?")
    assert {c["doc_key"] for c in before["citations"]} & set(HIDDEN)
    site.config.write_text(yaml.safe_dump({"sources": sources_yml(site.root, ["legal"])}))
    stats = ingest(site.config, site.db, site.embedder, "hr")["hr"]
    assert (stats.files_access_updated, stats.chunks_embedded, stats.chunks_indexed) == (2, 0, 0)
    hr = ("compensation committee", *HIDDEN[:2])  # ann keeps the wiki page
    assert not set(leaks(search(site, ANN, limit=50, per_doc=0))) & set(hr)  # revoked: enforced at once
    after = ask(site, ANN, "Who sets the salary bands for staff engineers?")
    assert after["cache"] == "miss" and not set(leaks(after)) & set(hr)  # the cached answer is not served again
    site.config.write_text(yaml.safe_dump({"sources": sources_yml(site.root, ["eng"])}))
    stats = ingest(site.config, site.db, site.embedder, "hr")["hr"]
    assert (stats.files_access_updated, stats.chunks_embedded) == (2, 0)
    assert {h["doc_key"] for h in search(site, BOB, limit=50, per_doc=0)} & set(HIDDEN[:2])  # granted

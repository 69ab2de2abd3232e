"""Usage records, the gaps report and /metrics (issue 37), on a real store behind a real API on 127.0.0.1.

A scripted set of asks and searches from two principals of a tokens file (as tests/test_access.py sets
them up) and an admin token: some answered, some the corpus cannot answer, several of them paraphrases of
one another. Then `GET /gaps` and `docforge gaps --json` group the paraphrases together with their counts,
a restricted principal gets 403, and /metrics parses as Prometheus text with request counters that rose by
the number of requests made.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import threading

import httpx
import psycopg
import pytest
import yaml
from click.testing import CliRunner
from prometheus_client.parser import text_string_to_metric_families
from pydantic import SecretStr

from bench.hosted import free_port
from docforge.cli import main
from docforge.servers import LocalSearch
from docforge.servers.api import create_app
from docforge.servers.ask import LocalAsk
from docforge.servers.auth import AuthConfig, Authenticator
from docforge.servers.metrics import serve_bound
from docforge.servers.usage import Usage
from docforge.servers.web import LocalStore
from pipeline.answers import Answerer
from pipeline.config import MetricsConfig, UsageConfig, load_settings
from pipeline.ingest import IngestContext, ingest_source
from pipeline.query import Searcher
from pipeline.usage import Recorder, UsageRecord, prune
from tests.helpers import ServerThread, commit_repo, docforge_env, write_files
from tests.test_web import browser  # noqa: F401 (the browser fixture)

ADMIN, ANN, BOB, SCRAPE = "admin-token-1", "ann-token-2", "bob-token-3", "scrape-token-4"
CALLERS = [
    {"name": "ann@x.com", "sha256": hashlib.sha256(ANN.encode()).hexdigest(), "groups": ["hr"]},
    {"name": "bob@x.com", "sha256": hashlib.sha256(BOB.encode()).hexdigest(), "groups": ["eng"]},
]
DOCS = {
    "backups.md": "# Backups\n\nBackups of the database are taken every night at 02:00 and kept for 30 days.\n",
    "deploy.md": "# Deploying\n\nTo deploy to production, merge to main; the pipeline ships the build.\n",
    "vpn.md": "# VPN\n\nConnect to the VPN with the WireGuard client and the profile from the portal.\n",
    "glossary.md": "# Glossary\n\nA runbook is a list of steps for an operator.\n",
}
# Two meanings the corpus cannot answer, asked in several wordings by both principals.
LEAVE = ["how long is parental leave?", "how many weeks off do new parents get", "parental leave duration"]
WIFI = ["what is the office wifi password?", "how do I join the wireless network at the office"]
ANSWERED = "how often are database backups taken?"


@pytest.fixture(scope="module")
def site(pg_server, embedder, tmp_path_factory):
    root = tmp_path_factory.mktemp("gaps")
    url = pg_server.get_uri(name := f"t_gaps_{os.getpid()}")
    with psycopg.connect(pg_server.get_uri(), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}"')
    write_files(root / "open", DOCS)
    commit_repo(root / "hr", {"docs/pay.md": "# Pay\n\nSalaries are paid on the 25th of each month.\n"})
    (root / "tokens.yml").write_text(yaml.safe_dump({"tokens": CALLERS}))
    config = root / "sources.yml"
    sources = [
        {"name": "open", "type": "directory", "path": str(root / "open")},
        {"name": "hr", "type": "git", "repo": str(root / "hr"), "access": ["hr"]},
    ]
    config.write_text(yaml.safe_dump({"sources": sources}))
    settings = load_settings(config)
    for n in ("open", "hr"):
        ingest_source(IngestContext(settings, url=url, embedder=embedder), n)
    searcher = Searcher(settings, url=url, embedder=embedder, reranker=None)
    answerer = Answerer(settings, searcher=searcher, url=url, llm=None)
    auth = Authenticator(AuthConfig(api_tokens=SecretStr(ADMIN), tokens_file="tokens.yml"), settings.resolve_path)
    usage = Usage(searcher)
    app = create_app(LocalSearch(searcher), auth, ask=LocalAsk(answerer), store=LocalStore(searcher), usage=usage)
    with ServerThread(app) as srv:
        srv.root, srv.config, srv.db, srv.usage, srv.auth, srv.searcher = root, config, url, usage, auth, searcher
        srv.answers = script(srv)
        yield srv
    answerer.close()
    searcher.close()


def call(site, method: str, path: str, token: str, body: dict | None = None, url: str | None = None):
    return httpx.request(
        method, f"{url or site.url}/{path}", json=body, headers={"Authorization": f"Bearer {token}"}, timeout=120
    )


def ask(site, token: str, question: str) -> dict:
    resp = call(site, "POST", "ask", token, {"question": question, "no_cache": True})
    assert resp.status_code == 200, resp.text
    return resp.json()


def script(site) -> dict[str, dict]:
    """The scripted asks and searches; each answer by question."""
    out = {}
    for i, q in enumerate(LEAVE + WIFI):
        out[q] = ask(site, (ANN, BOB)[i % 2], q)
    out[LEAVE[0] + "#again"] = ask(site, BOB, LEAVE[0])  # the same wording twice: one wording, two asks
    out[ANSWERED] = ask(site, ANN, ANSWERED)
    out[ANSWERED + "#again"] = ask(site, ANN, ANSWERED)  # its page cited twice: "often" (the staleness list)
    for q in ("deploy to production", "migratory routes of arctic terns"):
        assert call(site, "POST", "search", BOB, {"query": q}).status_code == 200
    assert site.usage.recorder.flush(10)
    return out


def rows(site) -> list[tuple]:
    with psycopg.connect(site.db) as conn:
        return conn.execute(
            "SELECT kind, surface, question, principal, abstained, confidence, label, doc_keys, scores "
            "FROM usage_events ORDER BY id"
        ).fetchall()


def test_each_ask_and_search_is_recorded_with_what_the_caller_saw(site):
    got = rows(site)
    asks = [r for r in got if r[0] == "ask"]
    assert len(asks) == len(LEAVE) + len(WIFI) + 3 and {r[1] for r in got} == {"api"}
    assert {r[3] for r in asks} == {"ann@x.com", "bob@x.com"}
    answered = next(r for r in asks if r[2] == ANSWERED)
    # what the caller saw: the answer's page first; an unsure answer also cites its candidates' pages
    assert answered[6] in ("STRICT", "HYBRID", "UNSURE") and answered[7][0] == "open:backups.md", answered
    assert answered[6] == "UNSURE" or answered[7] == ["open:backups.md"], answered
    assert answered[7] == [c["doc_key"] for c in site.answers[ANSWERED]["citations"]], answered
    assert (answered[6] == "UNSURE") == (site.answers[ANSWERED]["addresses_question"] is False)
    assert site.answers[ANSWERED]["confidence"] == pytest.approx(answered[5], abs=1e-4)
    searches = [r for r in got if r[0] == "search"]
    assert [r[2] for r in searches] == ["deploy to production", "migratory routes of arctic terns"]
    assert all(len(r[7]) == len(r[8]) > 0 for r in searches)
    # only ann (in hr) may be shown hr's page, as an unsure answer's candidate; bob never
    assert not any(k.startswith("hr:") for r in got if r[3] != "ann@x.com" for k in r[7])


def test_gaps_groups_the_paraphrases_with_their_counts(site):
    resp = call(site, "GET", "gaps", ADMIN)
    assert resp.status_code == 200, resp.text
    report = resp.json()
    by_wording = {w: g for g in report["groups"] for w in g["wordings"]}
    leave, wifi = by_wording[LEAVE[0]], by_wording[WIFI[0]]
    assert set(leave["wordings"]) == set(LEAVE) and set(wifi["wordings"]) == set(WIFI)
    assert (leave["count"], leave["questions"], leave["askers"]) == (len(LEAVE) + 1, len(LEAVE), 2)
    assert wifi["count"] == len(WIFI) and leave["id"] != wifi["id"]
    got = site.answers[ANSWERED]  # in the gaps only when the reader did not get it: low, or unsure
    assert (ANSWERED in by_wording) == (got["confidence"] < 0.5 or got["addresses_question"] is False)
    assert leave["representative"] in LEAVE and leave["first_asked"] <= leave["last_asked"]
    # Evidence is named by document only: no chunk text, no chunk id.
    assert all(set(d) == {"doc_key", "score"} for g in report["groups"] for d in g["closest"])
    assert "Salaries are paid" not in resp.text and "WireGuard" not in resp.text
    cited = {c["doc_key"]: c["citations"] for c in report["most_cited"]}
    assert cited.get("open:backups.md", 0) >= 1
    # a page no ask or search brought back is never retrieved (an unsure answer's candidates count as seen)
    assert not set(report["never_retrieved"]) & set(cited)
    seen = {k for r in rows(site) for k in r[7]}  # every page an ask or search brought back, cited or not
    assert set(report["never_retrieved"]) == {f"open:{n}" for n in DOCS} - seen
    weak = {w["query"] for w in report["weak_searches"]}
    assert "migratory routes of arctic terns" in weak and "deploy to production" not in weak
    again = call(site, "GET", "gaps", ADMIN).json()  # stable: the same groups, ids and members
    assert [(g["id"], sorted(g["wordings"])) for g in again["groups"]] == [
        (g["id"], sorted(g["wordings"])) for g in report["groups"]
    ]


def test_a_document_cited_often_and_unchanged_for_long_is_a_staleness_hint(site):
    """The staleness list: documents cited at least twice in the window whose last change (the ledger's
    indexed_at) is older than usage.stale_days (365). Aged in place, then put back."""
    report = call(site, "GET", "gaps", ADMIN).json()
    often = [c["doc_key"] for c in report["most_cited"] if c["citations"] >= 2]
    assert often, report["most_cited"]
    assert report["stale"] == []  # everything was indexed minutes ago
    age = "UPDATE ledger SET indexed_at = indexed_at {} interval '400 days' WHERE doc_key = %s"
    with psycopg.connect(site.db, autocommit=True) as conn:
        conn.execute(age.format("-"), (often[0],))
        try:
            stale = call(site, "GET", "gaps", ADMIN).json()["stale"]
        finally:
            conn.execute(age.format("+"), (often[0],))
    assert [c["doc_key"] for c in stale] == [often[0]]
    assert stale[0]["last_changed"] < report["since"]  # its last change, before the window opened


@pytest.mark.parametrize("token", [ANN, BOB])
def test_gaps_is_for_full_access_callers_only(site, token):
    resp = call(site, "GET", "gaps", token)
    assert resp.status_code == 403
    assert "full-access" in resp.json()["detail"] and "leave" not in resp.text
    assert call(site, "GET", "gaps", "no-such-token").status_code == 401


def test_the_cli_reports_the_same_groups_within_80_columns(site, monkeypatch):
    monkeypatch.setenv("DATABASE_URL", site.db)
    runner = CliRunner()
    out = runner.invoke(main, ["gaps", "-c", str(site.config), "--json"])
    assert out.exit_code == 0, out.output
    report = json.loads(out.output)
    api = call(site, "GET", "gaps", ADMIN).json()
    assert [g["id"] for g in report["groups"]] == [g["id"] for g in api["groups"]]
    text = runner.invoke(main, ["gaps", "-c", str(site.config)])
    assert text.exit_code == 0, text.output
    assert max(len(line) for line in text.output.splitlines()) <= 80
    assert "Unanswered questions, by meaning" in text.output and "parental leave" in text.output


def test_the_cli_records_its_own_asks(site, monkeypatch):
    monkeypatch.setenv("DATABASE_URL", site.db)
    before = len(rows(site))
    out = CliRunner().invoke(main, ["search", "-c", str(site.config), "vpn client", "--json"])
    assert out.exit_code == 0, out.output
    last = rows(site)[-1]
    assert len(rows(site)) == before + 1 and last[:4] == ("search", "cli", "vpn client", "local")


def families(text: str) -> dict[tuple[str, tuple], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for fam in text_string_to_metric_families(text)
        for s in fam.samples
    }


def test_metrics_counts_every_request(site):
    first = call(site, "GET", "metrics", ADMIN)
    assert first.status_code == 200 and first.headers["content-type"].startswith("text/plain")
    before = families(first.text)
    n = 5
    for i in range(n):
        assert call(site, "POST", "search", BOB, {"query": f"backups {i}"}).status_code == 200
    assert call(site, "POST", "search", "wrong-token", {"query": "x"}).status_code == 401  # counted too
    after = families(call(site, "GET", "metrics", ADMIN).text)
    key = ("docforge_requests_total", (("route", "/search"), ("status", "200")))
    assert after[key] - before.get(key, 0) == n
    assert after[("docforge_requests_total", (("route", "/search"), ("status", "401")))] >= 1
    count = ("docforge_request_seconds_count", (("route", "/search"),))
    assert after[count] - before.get(count, 0) >= n
    assert after[("docforge_answers_total", (("cache", "miss"),))] >= len(site.answers)
    assert ("docforge_admission_shed_total", (("line", "asks"),)) in after
    pool = [
        v for (name, labels), v in after.items() if name == "docforge_pool_connections" and ("state", "max") in labels
    ]
    assert pool and pool[0] >= 1
    assert "docforge_store_errors_total" in {name for name, _ in after}
    assert call(site, "GET", "metrics", BOB).status_code == 403  # not an admin: no metrics
    assert call(site, "GET", "metrics", "nope").status_code == 401


def test_metrics_behind_its_own_token(site):
    app = create_app(LocalSearch(site.searcher), site.auth, metrics=MetricsConfig(token=SecretStr(SCRAPE)))
    with ServerThread(app) as srv:
        assert call(site, "GET", "metrics", ADMIN, url=srv.url).status_code == 401
        resp = call(site, "GET", "metrics", SCRAPE, url=srv.url)
        assert resp.status_code == 200 and families(resp.text)
    # metrics.bind: the same registry on an address of its own, for a scraper that holds no token
    bound = create_app(LocalSearch(site.searcher), site.auth, metrics=MetricsConfig(token=SecretStr(SCRAPE)))
    port = free_port()
    serve_bound(bound.state.meter, f"127.0.0.1:{port}")
    with ServerThread(bound) as srv:
        assert call(site, "POST", "search", BOB, {"query": "backups"}, url=srv.url).status_code == 200
        scraped = families(httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=30).text)
    assert scraped[("docforge_requests_total", (("route", "/search"), ("status", "200")))] == 1
    off = create_app(LocalSearch(site.searcher), site.auth, metrics=MetricsConfig(enabled=False))
    with ServerThread(off) as srv:
        assert call(site, "GET", "metrics", ADMIN, url=srv.url).status_code == 404


def event(q: str = "q") -> UsageRecord:
    return UsageRecord("search", "test", q, hashlib.sha256(q.encode()).hexdigest(), "who", "hybrid", 1.0)


def test_recording_never_blocks_nor_raises_and_drops_when_full():
    # A server that accepts connections and never answers: the writer's connect hangs on it.
    with socket.socket() as sink:
        sink.bind(("127.0.0.1", 0))
        sink.listen(8)
        port = sink.getsockname()[1]
        rec = Recorder(f"postgresql://x@127.0.0.1:{port}/db?connect_timeout=3", UsageConfig(queue_size=2))
        for i in range(20):
            rec.record(event(str(i)))
        # never waits on the store: had record() waited for the writer, nothing would have been dropped
        assert rec.dropped >= 17
    assert rec.flush(10) and rec.failed >= 1 and rec.written == 0
    rec.close()


def test_off_and_digests_only(site):
    off = Recorder(site.db, UsageConfig(enabled=False))
    off.record(event("never kept"))
    assert off._thread is None
    private = UsageConfig(store_question=False, store_principal=False)
    searcher = Searcher(load_settings(site.config), url=site.db, embedder=site.searcher.embedder, reranker=None)
    with searcher:
        from docforge.servers.usage import RecordedSearch

        rec = Recorder(site.db, private)
        from docforge.servers import SearchRequest
        from pipeline.access import Principal

        RecordedSearch(LocalSearch(searcher), rec, "api")(SearchRequest(query="secret words"), Principal("eve@x.com"))
        assert rec.flush(10)
        rec.close()
    with psycopg.connect(site.db) as conn:
        q, sha, who = conn.execute(
            "SELECT question, question_sha, principal FROM usage_events ORDER BY id DESC LIMIT 1"
        ).fetchone()
    assert q is None and sha == hashlib.sha256(b"secret words").hexdigest()
    assert who == "sha256:" + hashlib.sha256(b"eve@x.com").hexdigest()


def test_prune_keeps_the_retention(site):
    with psycopg.connect(site.db, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO usage_events (kind, surface, question_sha, principal, mode, latency_ms, at) "
            "VALUES ('ask', 'test', 'old', 'x', 'hybrid', 1, now() - interval '100 days')"
        )
        assert prune(conn, 90) == 1
        assert conn.execute("SELECT count(*) FROM usage_events WHERE question_sha = 'old'").fetchone()[0] == 0


def test_a_burst_of_records_is_written_in_the_background(site):
    rec = Recorder(site.db, UsageConfig())
    threads = [threading.Thread(target=lambda: [rec.record(event("burst")) for _ in range(50)]) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert rec.flush(10) and rec.written == 200 and rec.dropped == 0
    rec.close()


def test_the_gaps_tab_in_headless_chromium(site, browser):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    wait = WebDriverWait(browser, 60)
    find = browser.find_element

    def log_in(token: str) -> None:
        browser.get(site.url + "/")
        wait.until(ec.visibility_of_element_located((By.ID, "token"))).send_keys(token)
        find(By.CSS_SELECTOR, "#login-form button").click()
        wait.until(ec.visibility_of_element_located((By.ID, "app-view")))
        find(By.ID, "tab-gaps").click()

    log_in(ADMIN)
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#gaps-groups tbody tr"))
    rows = browser.find_elements(By.CSS_SELECTOR, "#gaps-groups tbody tr")
    leave = next(r for r in rows if "parental leave" in r.text)
    assert f"{len(LEAVE) + 1} (" in leave.text and "open:" in leave.text
    assert "arctic terns" in find(By.ID, "gaps-weak").text
    assert "open:backups.md" in find(By.ID, "gaps-cited").text
    find(By.ID, "logout").click()
    log_in(BOB)  # a restricted caller: the reason, and nothing of anyone's questions
    wait.until(lambda d: "403" in find(By.ID, "gaps-status").text)
    assert "full-access" in find(By.ID, "gaps-status").text
    assert not find(By.ID, "gaps").is_displayed() and "parental" not in browser.page_source.lower()


def test_paraphrases_are_grouped_by_meaning_on_the_held_out_half(embedder):
    """bench/paraphrases.jsonl's `held` half (never fitted on), at the configured threshold: purity 1.00
    and completeness 0.97 measured (bench/gaps.py); a group never mixes two meanings."""
    from bench.gaps import load
    from pipeline.usage import completeness, groups, purity

    questions, labels = load("held")
    vectors = embedder.encode(questions, kind="query")
    found = groups(vectors, UsageConfig().same_meaning)
    assert purity(found, labels) >= 0.95 and completeness(found, labels) >= 0.9
    assert groups(vectors, UsageConfig().same_meaning) == found  # the same groups, run after run


def test_the_mcp_server_records_its_tool_calls(site, tmp_path):

    from mcp import StdioServerParameters

    from tests.test_mcp import DOCFORGE, session_calls

    env = docforge_env(DATABASE_URL=site.db, DOCFORGE_CONFIG=str(site.config), DOCFORGE_HOME=str(tmp_path))
    params = StdioServerParameters(command=DOCFORGE, args=["serve"], env=env)
    with open(tmp_path / "stderr.log", "w") as errlog:
        call = {"query": "vpn profile portal", "user_name": "ada", "team_name": "ops"}
        _, (result,) = session_calls(params, errlog, [call])
    assert not result.is_error
    with psycopg.connect(site.db) as conn:
        got = conn.execute(
            "SELECT surface, principal, doc_keys FROM usage_events WHERE question = 'vpn profile portal'"
        ).fetchall()
    assert got == [("mcp", "local", got[0][2])] and "open:vpn.md" in got[0][2]

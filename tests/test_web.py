"""The page at `/` (docforge.servers.web) on a real API server over a real ingested corpus: its open shell
and guarded reads over HTTP, then the whole flow in Debian's headless Chromium driven by Selenium through
the system chromedriver (nothing downloaded): log in, search, ask, open a citation, see the sources."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import psycopg
import pytest
from pydantic import SecretStr

import docforge.cli.render as render
from docforge.servers import LocalSearch
from docforge.servers.api import create_app
from docforge.servers.ask import LocalAsk
from docforge.servers.auth import AuthConfig, Authenticator
from docforge.servers.web import CSP, LocalStore
from pipeline.answers import Answerer
from pipeline.answers import render as render_answers
from pipeline.query import Searcher
from pipeline.query.hits import where
from tests.helpers import ServerThread
from tests.query_corpus import build_corpus

TOKEN = "web-test-token"
CHROMIUM, CHROMEDRIVER = shutil.which("chromium"), shutil.which("chromedriver")
# The legend as the page says it for a quoted, a reworded (with its probability) and an unsupported claim.
LEGEND_SAID = [v + (render_answers.PROBABILITY if k == "supported" else "") for k, v in render_answers.LEGEND.items()]


@pytest.fixture(scope="module")
def site(pg_server, embedder, tmp_path_factory):
    """The API over its own corpus (asking writes the answer cache: the shared corpus stays read-only)."""
    corpus = build_corpus(pg_server, embedder, tmp_path_factory.mktemp("web-corpus"))
    searcher = Searcher(corpus.settings, url=corpus.url, embedder=embedder, reranker=None)
    answerer = Answerer(corpus.settings, searcher=searcher, url=corpus.url, llm=None)  # extractive
    app = create_app(
        LocalSearch(searcher),
        Authenticator(AuthConfig(api_tokens=SecretStr(TOKEN))),
        ask=LocalAsk(answerer),
        store=LocalStore(searcher),
    )
    with ServerThread(app) as srv:
        srv.corpus = corpus
        yield srv
    answerer.close()
    searcher.close()


def test_the_page_and_the_cli_never_mark_the_same_stopwords_differently():
    js = (Path(render.__file__).parents[1] / "servers" / "web" / "app.js").read_text()
    listed = re.search(r'const STOP = new Set\(\s*"([^"]+)"', js)
    assert listed is not None and frozenset(listed.group(1).split()) == render._STOP
    assert render.terms("how is the vault sealed") == ["sealed", "vault"]


def test_page_is_open_and_everything_it_reads_is_guarded(site):
    page = httpx.get(f"{site.url}/")
    assert page.status_code == 200 and 'id="login-view"' in page.text
    assert page.headers["content-security-policy"] == CSP and TOKEN not in page.text
    assets = ("web/app.js", "web/marks.js", "web/app.css", "web/favicon.svg", "favicon.ico")
    for asset in assets:  # no 401 in the console
        assert httpx.get(f"{site.url}/{asset}").status_code == 200, asset
    assert httpx.get(f"{site.url}/favicon.ico").headers["content-type"].startswith("image/svg+xml")
    assert "http" not in httpx.get(f"{site.url}/web/app.css").text  # no external asset
    for path in ("sources", "chunks/x"):
        assert httpx.get(f"{site.url}/{path}").status_code == 401
    auth = {"Authorization": f"Bearer {TOKEN}"}
    sources = httpx.get(f"{site.url}/sources", headers=auth).json()["sources"]
    handbook = next(s for s in sources if s["name"] == "handbook")
    assert handbook["documents"] > 0 and handbook["chunks"] >= handbook["documents"] and handbook["failures"] == 0
    assert handbook["last_indexed"] and handbook["dagster_url"].endswith("partition=handbook")
    assert handbook["type"] == "git"  # the store's type: the page's Type filter is built from these
    assert httpx.get(f"{site.url}/chunks/no-such-chunk", headers=auth).status_code == 404


def test_serve_api_prints_the_page_url_and_serves_it(site, tmp_path):
    """The real CLI path: `docforge serve --api` tells the user where the page is, and serves it with /sources."""
    with socket.socket() as s:  # a free port, so the printed URL is the real one
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {
        **os.environ,
        "DATABASE_URL": site.corpus.url,
        "DOCFORGE_API_TOKENS": TOKEN,
        "DOCFORGE_HOME": str(tmp_path / "home"),
        "HF_HUB_OFFLINE": "1",
    }
    log = tmp_path / "stderr.log"
    with open(log, "wb") as err:
        proc = subprocess.Popen(
            [
                str(Path(sys.executable).with_name("docforge")),
                "serve",
                "--api",
                "--port",
                str(port),
                "--config",
                str(site.corpus.config),
            ],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=err,
        )
    try:
        for _ in range(600):  # the model loads first: at most 600 looks, 0.25 s apart
            if "Application startup complete" in log.read_text(errors="replace"):
                break
            assert proc.poll() is None, log.read_text(errors="replace")
            time.sleep(0.25)
        m = re.search(r"Open (http://127\.0\.0\.1:\d+/) in a browser", log.read_text(errors="replace"))
        assert m and m.group(1) == f"http://127.0.0.1:{port}/"
        assert 'id="login-view"' in httpx.get(m.group(1)).text
        sources = httpx.get(m.group(1) + "sources", headers={"Authorization": f"Bearer {TOKEN}"}).json()["sources"]
        assert {s["name"] for s in sources} == {"handbook", "payments"}
        assert TOKEN not in log.read_text(errors="replace")
    finally:
        proc.terminate()
        proc.wait(20)


@pytest.fixture
def browser(tmp_path, monkeypatch):
    if not (CHROMIUM and CHROMEDRIVER):
        pytest.skip(
            "no Chromium: install Debian's chromium and chromium-driver (apt-get install -y chromium "
            "chromium-driver; .ci/run does) to run the browser tests"
        )
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed (pip install -e '.[dev]')")
    from selenium.webdriver.chrome.service import Service

    monkeypatch.setenv("SE_OFFLINE", "true")  # Selenium Manager must never fetch a browser or a driver
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-default-apps",
        "--window-size=1100,900",
        f"--user-data-dir={tmp_path / 'profile'}",
    ):
        opts.add_argument(arg)
    opts.set_capability("goog:loggingPrefs", {"performance": "ALL"})
    driver = webdriver.Chrome(options=opts, service=Service(executable_path=CHROMEDRIVER))
    driver.implicitly_wait(0)
    yield driver
    driver.quit()


def requested_urls(driver) -> list[str]:
    """Every URL the page asked for, from the DevTools performance log."""
    urls = []
    for entry in driver.get_log("performance"):
        msg = json.loads(entry["message"])["message"]
        if msg["method"] == "Network.requestWillBeSent":
            urls.append(msg["params"]["request"]["url"])
    return urls


def test_the_page_in_headless_chromium(site, browser, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    shots = Path(os.environ.get("DOCFORGE_TEST_ARTIFACTS") or tmp_path / "artifacts")
    shots.mkdir(parents=True, exist_ok=True)
    wait = WebDriverWait(browser, 60)
    find = browser.find_element
    visible = lambda id_: wait.until(ec.visibility_of_element_located((By.ID, id_)))  # noqa: E731
    urls: list[str] = []

    # Without a token: the login view only.
    browser.get(site.url + "/")
    visible("login-view")
    assert not find(By.ID, "app-view").is_displayed() and not find(By.ID, "logout").is_displayed()
    browser.save_screenshot(str(shots / "1-login.png"))

    # A wrong token is refused; the right one opens the app.
    find(By.ID, "token").send_keys("not-the-token")
    find(By.CSS_SELECTOR, "#login-form button").click()
    wait.until(lambda d: "refused" in find(By.ID, "login-error").text)
    assert not find(By.ID, "app-view").is_displayed()
    find(By.ID, "token").send_keys(TOKEN)
    find(By.CSS_SELECTOR, "#login-form button").click()
    visible("app-view")
    assert browser.execute_script("return sessionStorage.getItem('docforge.token')") == TOKEN

    # The Type filter offers the types the store holds, not a fixed list.
    wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#search-type option")) > 1)
    types = [o.get_attribute("value") for o in browser.find_elements(By.CSS_SELECTOR, "#search-type option")]
    assert types == ["", "git"]

    # Search: the term is marked in an excerpt, under title › section, with a score and a link.
    find(By.ID, "q").send_keys("vault")
    find(By.CSS_SELECTOR, "#search-form button").click()
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#results .excerpt mark"))
    marks = [m.text.lower() for m in browser.find_elements(By.CSS_SELECTOR, "#results .excerpt mark")]
    assert marks and set(marks) == {"vault"}
    # Whole words only: "do" is marked in "do it", never inside "documented".
    assert browser.execute_script("return [...'documented, do it'.matchAll(wordsRe(['do']))].map(m => m.index)") == [12]
    # Stopwords are never marked: the page's terms are the CLI's (docforge.cli.render.terms).
    query = "How do the vault keys rotate in the cluster?"
    assert browser.execute_script("return terms(arguments[0])", query) == render.terms(query)
    first = find(By.CSS_SELECTOR, "#results .result")
    heading = first.find_element(By.CSS_SELECTOR, "h3").text
    assert heading and "score" in first.text
    assert len(heading.split(" › ")) == len(set(heading.split(" › ")))  # no heading shown twice
    # The page labels a place as the CLI and the answer prompts do (pipeline.query.hits.where).
    for title, section in [
        ("Third-party services", "Third-party services > Hugging Face support"),
        ("G", ""),
        ("", "A > B"),
    ]:
        assert browser.execute_script("return heading(arguments[0], arguments[1])", title, section) == where(
            title, section
        )
    ref = first.find_element(By.CSS_SELECTOR, "h3 .source-ref")  # file:// (a local repo): shown, not linked
    assert (ref.get_attribute("href") or ref.get_attribute("data-url")).endswith(".md")
    browser.save_screenshot(str(shots / "2-search.png"))

    # Ask (extractive): verified claims, the audit badge, a citation that expands to its evidence.
    find(By.ID, "tab-ask").click()
    visible("panel-ask")
    find(By.ID, "question").send_keys("How often is the Postgres password rotated?")
    find(By.ID, "ask-trace").click()
    find(By.CSS_SELECTOR, "#ask-form button").click()
    visible("answer")
    assert "audit STRICT" in find(By.CSS_SELECTOR, "#answer .audit").text
    assert find(By.CSS_SELECTOR, "#answer .audit-meaning").text == "every line is quoted from the cited evidence."
    claims = browser.find_elements(By.CSS_SELECTOR, "#answer .claim.quoted")
    assert claims and claims[0].find_element(By.CSS_SELECTOR, ".badge").text == "✓ quoted"
    # right under the marks: an answer's claims, or (not sure it answers) its numbered candidates
    legend = find(By.CSS_SELECTOR, "#answer .claims + .legend, #answer ol.candidates + .legend").text.splitlines()
    assert legend == ["Marks:", "✓ quoted word for word from the cited evidence"]
    # The three kinds read apart: a mark and a word each (not a colour only), the probability and the reason
    # shown; the legend names only the marks used.
    three = [
        {"text": "Q.", "pointers": ["E1"], "verified": True, "support": "quoted"},
        {"text": "R.", "pointers": ["E1"], "verified": True, "support": "supported", "probability": 0.912},
        {"text": "U.", "pointers": ["E1"], "verified": False, "support": "unsupported", "violations": ["no E1"]},
    ]
    shown = browser.execute_script(
        "return arguments[0].map(c => { const li = claimItem(c); return [li.className, li.textContent]; })"
        ".concat([[legend(arguments[0]).textContent]])",
        three,
    )
    assert shown == [
        ["claim quoted", "✓ quoted Q. E1"],
        ["claim supported", "≈ reworded, p=0.91 R. E1"],
        ["claim unsupported", "✗ not supported (no E1) U. E1"],
        ["Marks:" + "".join(LEGEND_SAID)],
    ]
    assert browser.execute_script("return meaning(arguments[0])", three) == render_answers.meaning(
        ["quoted", "supported", "unsupported"]
    )
    page = browser.execute_script("return [AUDIT_MEANING, MARKS, LEGEND, PROBABILITY]")
    r = render_answers
    assert page == [r.AUDIT_MEANING, r.MARKS, r.LEGEND, r.PROBABILITY]  # the page's copies are the server's
    card = find(By.CSS_SELECTOR, "#answer details.citation")
    assert card.get_attribute("open") is None
    find(By.CSS_SELECTOR, "#answer button.pointer").click()  # the first pointer (a claim's or candidate's): its card
    wait.until(lambda d: card.get_attribute("open") is not None)
    evidence = card.find_element(By.CSS_SELECTOR, ".evidence")
    wait.until(lambda d: "90 days" in evidence.text)
    # A block of a joined passage spans several chunks: its card shows them all, joined as the search joined them.
    with psycopg.connect(site.corpus.url) as conn:
        two = conn.execute("SELECT id, text FROM chunks ORDER BY doc_key, ordinal LIMIT 2").fetchall()
    joined = browser.execute_script(
        "const card = citationCard({pointer: 'E9', title: 'T', section: '', source: 's', chunk_index: 0, url: '',"
        " chunk_id: arguments[0], chunk_ids: arguments[1]}); document.body.append(card); card.open = true;"
        " return card.id",
        two[0][0],
        [two[0][0], two[1][0]],
    )
    wanted = two[0][1] + "\n\n" + two[1][1]
    text_of = f"return document.getElementById('{joined}').querySelector('.evidence').textContent"
    wait.until(lambda d: d.execute_script(text_of) == wanted)
    browser.execute_script(f"document.getElementById('{joined}').remove()")
    find(By.CSS_SELECTOR, "#answer details.trace summary").click()
    assert "retrieve" in find(By.CSS_SELECTOR, "#answer details.trace pre").text
    browser.save_screenshot(str(shots / "3-ask.png"))
    # A question the documentation cannot answer: no answer, and why.
    find(By.ID, "question").clear()
    find(By.ID, "question").send_keys("How can I reset my Jira password?")
    find(By.CSS_SELECTOR, "#ask-form button").click()
    wait.until(lambda d: "No answer" in d.find_element(By.ID, "answer").text)
    warn = find(By.CSS_SELECTOR, "#answer .warn-text").text
    assert warn.startswith("No answer: the sources do not support one (") and "Jira" in warn, warn

    # Sources: both sources, with counts and a link to the Dagster partition.
    find(By.ID, "tab-sources").click()
    wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#sources tbody tr")) == 2)
    row = next(r for r in browser.find_elements(By.CSS_SELECTOR, "#sources tbody tr") if "handbook" in r.text)
    assert "partition=handbook" in row.find_element(By.CSS_SELECTOR, "a").get_attribute("href")
    browser.save_screenshot(str(shots / "4-sources.png"))

    # Readable on a narrow window: nothing wider than the viewport, and the search box stays one line.
    browser.set_window_size(380, 800)
    assert browser.execute_script("return document.documentElement.scrollWidth <= window.innerWidth")
    find(By.ID, "tab-search").click()
    visible("q")
    assert find(By.ID, "q").size["height"] <= 80, find(By.ID, "q").size
    find(By.ID, "tab-sources").click()
    browser.save_screenshot(str(shots / "5-narrow.png"))

    # Logging out forgets the token.
    find(By.ID, "logout").click()
    visible("login-view")
    assert browser.execute_script("return sessionStorage.getItem('docforge.token')") is None

    urls += requested_urls(browser)
    assert urls, "the DevTools log recorded no request"
    outside = [
        u for u in urls if urlsplit(u).scheme in ("http", "https", "ws", "wss") and urlsplit(u).hostname != "127.0.0.1"
    ]
    assert not outside, outside
    assert all(p.stat().st_size > 0 for p in shots.glob("*.png")) and len(list(shots.glob("*.png"))) == 5


def test_an_unsure_answer_on_the_page_shows_each_candidate_apart(site, browser, embedder, tmp_path):
    """Not sure it answers: one plain header, each passage a numbered block under where it is and its
    citation, the legend under them, what to do next; "answers the question" said apart (the CLI's words)."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    from tests.test_answers_candidates import unsure_params

    settings = site.corpus.settings
    unsure = settings.model_copy(
        update={"answers": settings.answers.model_copy(update={"params": unsure_params(tmp_path)})}
    )
    searcher = Searcher(unsure, url=site.corpus.url, embedder=embedder, reranker=None)
    answerer = Answerer(unsure, searcher=searcher, url=site.corpus.url, llm=None)
    auth = Authenticator(AuthConfig(api_tokens=SecretStr(TOKEN)))
    app = create_app(LocalSearch(searcher), auth, ask=LocalAsk(answerer), store=LocalStore(searcher))
    wait, find = WebDriverWait(browser, 60), browser.find_element
    with ServerThread(app) as srv:
        browser.get(srv.url + "/")
        wait.until(ec.visibility_of_element_located((By.ID, "token"))).send_keys(TOKEN)
        find(By.CSS_SELECTOR, "#login-form button").click()
        wait.until(ec.visibility_of_element_located((By.ID, "tab-ask"))).click()
        find(By.ID, "question").send_keys("How often is the Postgres password rotated?")
        find(By.CSS_SELECTOR, "#ask-form button").click()
        wait.until(ec.visibility_of_element_located((By.ID, "answer")))
        a = httpx.post(srv.url + "/ask", json={"question": "How often is the Postgres password rotated?"},
                       headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60).json()  # fmt: skip
        assert find(By.CSS_SELECTOR, "#answer .unsure-head").text == render_answers.UNSURE_HEAD
        items = browser.find_elements(By.CSS_SELECTOR, "#answer ol.candidates > li.candidate")
        assert len(items) == len(a["candidates"]) >= 1
        for li, c in zip(items, a["candidates"], strict=True):  # numbered by the list, best first
            assert li.find_element(By.CSS_SELECTOR, ".candidate-place").text == (
                f"{render_answers.place(c['title'], c['section'])} {c['citation']}"
            )
            lines = [x.text for x in li.find_elements(By.CSS_SELECTOR, ".claim .claim-text")]
            assert lines == c["text"].splitlines() and not li.find_elements(By.CSS_SELECTOR, ".claim .pointer")
        legend = find(By.CSS_SELECTOR, "#answer ol.candidates + .legend").text.splitlines()  # under the marks
        assert legend == ["Marks:", render_answers.LEGEND["quoted"]]
        assert find(By.CSS_SELECTOR, "#answer .legend + .next").text == render_answers.UNSURE_NEXT
        said = find(By.CSS_SELECTOR, "#answer .addresses").text
        assert said.startswith("Answers the question: not sure (confidence ") and "<" not in said
        assert find(By.CSS_SELECTOR, "#answer .audit-meaning").text == "every line is quoted from the cited evidence."
        items[0].find_element(By.CSS_SELECTOR, ".candidate-place .pointer").click()  # opens its citation
        card = find(By.ID, "cite-" + a["candidates"][0]["citation"])
        wait.until(lambda d: card.get_attribute("open") is not None)
        # The page's copies are the server's: the words, and where a place is.
        r = render_answers
        assert browser.execute_script("return [UNSURE_HEAD, UNSURE_NEXT]") == [r.UNSURE_HEAD, r.UNSURE_NEXT]
        for title, section in [("T", "T > A > b  c"), ("T", "T"), ("", "A > B"), ("T", ""), ("Doc", "Doc > Doc")]:
            assert browser.execute_script("return place(arguments[0], arguments[1])", title, section) == r.place(
                title, section
            )
        browser.set_window_size(380, 800)
        assert browser.execute_script("return document.documentElement.scrollWidth <= window.innerWidth")
    answerer.close()
    searcher.close()

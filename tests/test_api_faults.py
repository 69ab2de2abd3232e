"""The HTTP API under faults: a revoked token, a NUL in an /ask filter, a store that stops (real servers on
127.0.0.1; the embedded Postgres of this test's DOCFORGE_HOME is stopped as `docforge db stop` does)."""

from __future__ import annotations

import hashlib
import threading
import time

import httpx
import yaml
from pydantic import SecretStr

from docforge.servers.api import create_app
from docforge.servers.auth import RELOAD_S, SETTLE_S, Authenticator
from docforge.servers.web import LocalStore
from pipeline.config import AuthConfig, env_settings
from pipeline.query import Searcher
from pipeline.store.db import stop_embedded, store_url
from tests.helpers import ServerThread

ADMIN, ANN, BOB = "admin-token", "ann-token", "bob-token"


def _entry(name: str, token: str) -> dict:
    return {"name": name, "sha256": hashlib.sha256(token.encode()).hexdigest(), "groups": ["eng"]}


def _no_search(req, reader=None) -> list[dict]:
    return []  # these tests are about who gets in, not what a search finds


def _never_asked(req, reader=None):
    raise AssertionError("a refused request must not reach the answerer")


def search(base: str, token: str) -> httpx.Response:
    body = {"query": "rotation", "user_name": "t", "team_name": "t"}
    return httpx.post(f"{base}/search", json=body, headers={"Authorization": f"Bearer {token}"}, timeout=30)


def test_removing_a_tokens_file_entry_revokes_it_without_a_restart(tmp_path):
    tokens = tmp_path / "tokens.yml"
    tokens.write_text(yaml.safe_dump({"tokens": [_entry("ann", ANN), _entry("bob", BOB)]}))
    now = [0.0]  # the authenticator's clock, stepped by the test: no wall time is waited or measured

    def two_looks():  # a change is seen at a request after RELOAD_S, taken at one SETTLE_S later
        now[0] += RELOAD_S
        search(srv.url, ADMIN)
        now[0] += SETTLE_S

    auth = Authenticator(AuthConfig(tokens_file=str(tokens)), clock=lambda: now[0])
    with ServerThread(create_app(_no_search, auth)) as srv:
        assert search(srv.url, ANN).status_code == 200 and search(srv.url, BOB).status_code == 200
        tokens.write_text(yaml.safe_dump({"tokens": [_entry("ann", ANN)]}))  # bob revoked
        two_looks()
        assert search(srv.url, BOB).status_code == 401
        assert search(srv.url, ANN).status_code == 200
        tokens.write_text("- name: ann\n  sha256: not-a-digest\n")  # a broken edit: the last good set stays
        two_looks()
        assert search(srv.url, ANN).status_code == 200 and search(srv.url, BOB).status_code == 401
        tokens.write_text(yaml.safe_dump([_entry("bob", BOB)]))  # fixed: taken
        two_looks()
        assert search(srv.url, BOB).status_code == 200 and search(srv.url, ANN).status_code == 401


def test_a_nul_in_an_ask_filter_is_a_4xx(tmp_path):
    auth = Authenticator(AuthConfig(api_tokens=SecretStr(ADMIN)))
    with ServerThread(create_app(_no_search, auth, ask=_never_asked)) as srv:
        for filters in ({"source": "a\x00b"}, {"$or": [{"tags": {"$in": ["x", "y\x00"]}}]}, {"k\x00": "v"}):
            res = httpx.post(
                f"{srv.url}/ask",
                json={"question": "how are keys rotated?", "filters": filters},
                headers={"Authorization": f"Bearer {ADMIN}"},
                timeout=30,
            )
            assert res.status_code == 422, res.text
            assert "NUL" in res.text


def test_a_stopped_store_is_a_503_with_retry_after_that_names_no_socket(docforge_home):
    settings = env_settings()
    url = store_url(settings)  # this test's own embedded server
    searcher = Searcher(settings, url=url, embedder=None, reranker=None)
    auth = Authenticator(AuthConfig(api_tokens=SecretStr(ADMIN)))
    try:
        app = create_app(_no_search, auth, store=LocalStore(searcher))
        with ServerThread(app) as srv:
            headers = {"Authorization": f"Bearer {ADMIN}"}
            assert httpx.get(f"{srv.url}/sources", headers=headers, timeout=30).status_code == 200
            stop_embedded(docforge_home)  # the outage
            for path in ("/sources", "/chunks/abc"):
                res = httpx.get(f"{srv.url}{path}", headers=headers, timeout=60)
                assert res.status_code == 503, res.text
                assert res.headers.get("Retry-After", "").isdigit()
                detail = res.json()["detail"]
                assert "unavailable" in detail
                for secret in (str(docforge_home), ".s.PGSQL", "postgresql://", "socket", url):
                    assert secret not in detail, detail
    finally:
        searcher.close()


def test_a_tokens_file_written_in_pieces_never_grants_a_group_it_does_not_hold(tmp_path):
    """Issue 48: a file caught half written (`groups: hr` of `hr-auditors`, valid YAML) is never taken; a
    real server, a real clock, requests all along while the file is rewritten in pieces, in place."""
    tokens = tmp_path / "tokens.yml"
    digest = hashlib.sha256(ANN.encode()).hexdigest()

    def body(group: str) -> bytes:
        return f"- name: ann\n  sha256: {digest}\n  groups: {group}-auditors\n".encode()

    tokens.write_bytes(body("hr"))
    seen: list[frozenset[str]] = []

    def record(req, reader=None) -> list[dict]:
        seen.append(reader.groups)
        return []

    auth = Authenticator(AuthConfig(tokens_file=str(tokens)))
    stop = threading.Event()

    def callers():
        while not stop.is_set():
            search(srv.url, ANN)

    with ServerThread(create_app(record, auth)) as srv:
        threads = [threading.Thread(target=callers) for _ in range(2)]
        for t in threads:
            t.start()
        try:
            for group in ("eng", "hr", "eng"):
                whole = body(group)
                cut = whole.index(b"-auditors")  # `groups: hr` alone would parse: the torn moment
                with open(tokens, "r+b") as f:  # in place, as an editor without rename writes
                    f.truncate(0)
                    for piece, pause in ((whole[:40], 0.1), (whole[40:cut], 0.3), (whole[cut:], 0)):
                        f.write(piece)
                        f.flush()
                        time.sleep(pause)  # under SETTLE_S: a writer's pieces, not a finished file
                time.sleep(RELOAD_S + 2 * SETTLE_S + 0.5)  # long enough to be taken
                assert frozenset({f"{group}-auditors"}) in seen[-5:], seen[-5:]
        finally:
            stop.set()
            for t in threads:
                t.join()
    assert set(seen) <= {frozenset({"hr-auditors"}), frozenset({"eng-auditors"})}, set(seen)
    assert len(seen) > 10  # requests ran all along

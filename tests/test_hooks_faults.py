"""Webhooks under faults (docforge/servers/hooks.py): unsigned deliveries refused first and admitted like
any request, a deeply nested signed body, replays named right, a stopped embedded store left stopped."""

from __future__ import annotations

import threading
import time

import httpx
from pydantic import SecretStr

from docforge.servers.api import create_app
from docforge.servers.auth import AuthConfig, Authenticator
from docforge.servers.hooks import Receiver
from pipeline.config import ApiConfig, load_settings
from pipeline.store.db import connect, stop_embedded, store_url
from pipeline.store.schema import ensure_schema
from tests.helpers import ServerThread
from tests.test_hooks import REPO, SECRET, github_body, github_headers, hooks, post, recorded

__all__ = ["hooks"]  # the fixture, shared with tests/test_hooks.py
UNSIGNED = {"X-GitHub-Event": "push", "Content-Type": "application/json"}


def test_an_unsigned_delivery_is_refused_before_sources_yml_is_read(hooks, database_url):
    base, cfg = hooks
    cfg.write_text("sources: [this is: not valid")  # a signed delivery now meets a 503
    body = github_body()
    assert post(base, "/hooks/git", body, github_headers(body)).status_code == 503
    res = post(base, "/hooks/git", body, UNSIGNED)
    assert res.status_code == 401 and "unsigned" in res.json()["detail"]
    assert recorded(database_url) == []


def test_a_deeply_nested_signed_body_is_a_400(hooks, database_url):
    base, _ = hooks
    for body in (b"[" * 100_000 + b"]" * 100_000, b'{"ref": ' + b'{"a": ' * 200 + b"1" + b"}" * 201):
        res = post(base, "/hooks/git", body, github_headers(body))
        assert res.status_code == 400, res.text
    assert recorded(database_url) == []


def test_a_replay_names_the_delivery_it_repeats(hooks):
    base, _ = hooks
    body = github_body()
    assert post(base, "/hooks/git", body, github_headers(body, delivery="d-7")).status_code == 202
    again = post(base, "/hooks/git", body, github_headers(body, delivery="d-8"))
    assert again.status_code == 401
    assert "github:d-7" in again.json()["detail"] and "delivery github:d-8 was already" in again.json()["detail"]


def test_unsigned_deliveries_take_an_admission_slot(tmp_path, write_config, database_url, monkeypatch):
    """One slot, no queue: while a signed delivery streams its body, an unsigned one is turned away with 503
    like any other request (a flood of them cannot crowd searches out); after it, the unsigned one is a 401."""
    monkeypatch.setenv("DOCFORGE_WEBHOOK_SECRET", SECRET)
    cfg = write_config([{"name": "handbook", "type": "git", "repo": REPO, "branch": "main"}])
    with connect(database_url) as conn:
        ensure_schema(conn, "test-model", 8)
    limits = ApiConfig(max_in_flight=1, max_asks_in_flight=1, max_queued=0, max_wait_s=0.1)
    auth = Authenticator(AuthConfig(api_tokens=SecretStr("api-token")))
    app = create_app(lambda req, reader=None: [], auth, limits=limits, hooks=Receiver(load_settings(cfg)))
    body = github_body()

    def slowly():
        for i in range(0, len(body), 16):
            time.sleep(0.1)
            yield body[i : i + 16]

    with ServerThread(app) as srv:
        slow: list[httpx.Response] = []
        t = threading.Thread(
            target=lambda: slow.append(
                httpx.post(f"{srv.url}/hooks/git", content=slowly(), headers=github_headers(body), timeout=60)
            )
        )
        t.start()
        time.sleep(0.5)  # the signed delivery holds the slot while its body streams
        busy = post(srv.url, "/hooks/git", body, UNSIGNED)
        t.join()
        assert busy.status_code == 503 and busy.headers.get("Retry-After"), busy.text
        assert slow[0].status_code == 202, slow[0].text
        assert post(srv.url, "/hooks/git", body, UNSIGNED).status_code == 401


def test_a_signed_delivery_does_not_restart_a_stopped_embedded_store(tmp_path, write_config, monkeypatch):
    monkeypatch.setenv("DOCFORGE_WEBHOOK_SECRET", SECRET)
    cfg = write_config([{"name": "handbook", "type": "git", "repo": REPO, "branch": "main"}])
    settings = load_settings(cfg)
    with connect(store_url(settings)) as conn:  # the embedded server of this test's DOCFORGE_HOME
        ensure_schema(conn, "test-model", 8)
    stop_embedded(settings.home)  # docforge db stop
    pid = settings.home / "pg" / "postmaster.pid"
    assert not pid.exists()
    app = create_app(
        lambda req, reader=None: [], Authenticator(AuthConfig(api_tokens=SecretStr("t"))), hooks=Receiver(settings)
    )
    with ServerThread(app) as srv:
        body = github_body()
        res = post(srv.url, "/hooks/git", body, github_headers(body))
    assert res.status_code == 503 and "not running" in res.json()["detail"]
    assert str(settings.home) not in res.text
    assert not pid.exists(), "the stopped server stays stopped"

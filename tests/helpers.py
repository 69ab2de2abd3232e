"""Helpers the tests share (fixtures live in conftest.py): the shared data, git repositories, a server thread."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.com",
}
# The incremental-ingest subset of the rust-rfcs corpus (small enough for CI).
RFC_GLOBS = ["text/000[1-3]*.md", "text/387*.md", "text/0000-*.md", "text/3931-*.md"]


CHECKOUT = Path(__file__).resolve().parents[1]


def docforge_env(**extra: str) -> dict[str, str]:
    """The environment of a docforge subprocess: this checkout's code (whatever the venv's install points
    at), models from disk only, no tokenizer threads; `extra` adds to it or overrides."""
    return {
        "PYTHONPATH": str(CHECKOUT),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
        **extra,
    }


def sealed_env(tmp: Path, database_url: str, config: Path, **extra: str) -> dict[str, str]:
    """`docforge_env` over this store and sources.yml, sealed off from this process's environment: the
    system PATH only, HOME and DOCFORGE_HOME under `tmp`."""
    home = {"HOME": str(tmp), "DOCFORGE_HOME": str(tmp / "home")}
    return docforge_env(PATH="/usr/bin:/bin", DATABASE_URL=database_url, DOCFORGE_CONFIG=str(config), **home, **extra)


def ingest_process(config: Path, env: dict[str, str]) -> subprocess.Popen:
    """`docforge ingest -c config` as a subprocess of this interpreter, its stderr piped (text)."""
    return subprocess.Popen(
        [sys.executable, "-c", "from docforge.cli import main; main()", "ingest", "-c", str(config)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


def shared(*parts: str) -> Path:
    """A path under ../shared/data, or skip the test when a user's clone lacks it."""
    p = SHARED_DATA.joinpath(*parts)
    if not p.exists():
        pytest.skip(f"needs the shared test data at {p} (absent in a plain clone)")
    return p


def git(repo: Path, *args: str) -> str:
    res = subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True, env={**os.environ, **GIT_ENV}
    )
    return res.stdout.strip()


def write_files(repo: Path, files: dict[str, str | bytes]) -> None:
    for rel, content in files.items():
        p = repo / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            p.write_bytes(content)
        else:
            p.write_text(content, encoding="utf-8")


def commit_repo(repo: Path, files: dict[str, str | bytes]) -> Path:
    """A git repository at `repo` holding `files`, committed on `main`."""
    repo.mkdir(parents=True, exist_ok=True)
    git(repo, "init", "-q", "-b", "main")
    write_files(repo, files)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "init")
    return repo


def ingested_repo(pg_server, embedder, root: Path, source: str, files: dict[str, str | bytes]):
    """A fresh database on the test server with `files` committed to a git repository under `root` and
    ingested as source `source`: (its url, the sources.yml path, the settings)."""
    import uuid

    import psycopg
    import yaml

    from pipeline.config import load_settings
    from pipeline.ingest import IngestContext, ingest_source

    name = f"{source[:1]}_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(pg_server.get_uri(), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    url = pg_server.get_uri(name)
    commit_repo(root / "repo", files)
    config = root / "sources.yml"
    config.write_text(yaml.safe_dump({"sources": [{"name": source, "type": "git", "repo": "repo"}]}))
    settings = load_settings(config)
    stats = ingest_source(IngestContext(settings, url=url, embedder=embedder), source)
    assert stats.files_failed == 0
    return url, config, settings


class ServerThread:
    """An ASGI app served by uvicorn on 127.0.0.1 (a free port) in a thread: a real HTTP server."""

    def __init__(self, app):
        import uvicorn

        self.server = uvicorn.Server(
            uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", timeout_graceful_shutdown=1)
        )
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> ServerThread:
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.02)
        port = self.server.servers[0].sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"
        return self

    def __exit__(self, *exc) -> None:
        self.server.should_exit = True
        self.thread.join(10)


def send_json(handler: BaseHTTPRequestHandler, status: int, body: object, headers: dict | None = None) -> None:
    """Answer a request of a `http.server` handler with `body` as JSON (bytes are sent as they are)."""
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    handler.send_response(status)
    for k, v in {"Content-Type": "application/json", **(headers or {})}.items():
        handler.send_header(k, v)
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


@contextmanager
def docforge_api(args: list[str], env: dict[str, str], log: Path, cwd: Path | None = None) -> Iterator[str]:
    """`docforge serve --api` on a free port of 127.0.0.1 as a subprocess (stderr into `log`): its base URL
    once it serves (the model loads first: at most 600 looks, 0.25 s apart); stopped after."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    exe = str(Path(sys.executable).with_name("docforge"))
    with open(log, "wb") as err:
        proc = subprocess.Popen([exe, "serve", "--api", "--port", str(port), *args], cwd=cwd, env=env, stderr=err)
    try:
        for _ in range(600):
            if "Application startup complete" in log.read_text(errors="replace"):
                break
            assert proc.poll() is None, log.read_text(errors="replace")
            time.sleep(0.25)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(20)

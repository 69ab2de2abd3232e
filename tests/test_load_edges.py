"""The last hostile inputs of issue 25, each met by the real CLI or a real server on 127.0.0.1:
httpcore's debug log of an echoed Authorization header, a sources.yml nested past any sense,
`docforge verify` over a file of broken lines, and two ingests of one source at once."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from pipeline.config import GitSourceConfig
from pipeline.records import Document
from pipeline.redact import MASK
from pipeline.sources.git import GitSource
from tests.helpers import ServerThread, git

DOCFORGE = str(Path(sys.executable).parent / "docforge")
TOKEN = "edge-suite-embedder-token-5f1c"


def run(args: list[str], env: dict | None = None, stdin: bytes | None = None, timeout: float = 300):
    return subprocess.run(
        [DOCFORGE, *args], env={**os.environ, **(env or {})}, input=stdin, capture_output=True, timeout=timeout
    )


def test_httpcore_debug_log_never_shows_an_echoed_token(database_url, write_config):
    """An embedder service that answers 401 quoting the caller's Authorization header back: at -vv,
    httpcore logs the response headers; the token is masked there as everywhere."""
    app = FastAPI()

    @app.get("/info")
    def info(request: Request) -> JSONResponse:
        echoed = request.headers.get("authorization", "")
        return JSONResponse({"detail": f"bad token {echoed}"}, status_code=401, headers={"Authorization": echoed})

    config = write_config([])
    with ServerThread(app) as srv:
        res = run(  # the API warms its query embedder before it listens: through the service
            ["-vv", "serve", "--api", "--port", "0", "-c", str(config)],
            {
                "EMBEDDER_URL": srv.url,
                "EMBEDDER_TOKEN": TOKEN,
                "DATABASE_URL": database_url,
                "DOCFORGE_API_TOKENS": "api-token-for-the-edge-suite",
            },
        )
    err = res.stderr.decode(errors="replace")
    assert "httpcore" in err and "receive_response_headers" in err, err[-3000:]  # the debug log is there
    assert TOKEN not in err and f"Bearer {MASK}" in err
    assert res.returncode == 1 and "Traceback" not in err


def test_tracked_symlinks_are_skipped_in_branch_mode(make_repo):
    """A symlink committed to the branch is no document: its blob is only the target's path."""
    repo = make_repo({"docs/a.md": "# A\n\nThe real page."})
    (repo / "docs" / "link.md").symlink_to("a.md")
    (repo / "docs" / "passwd.md").symlink_to("/etc/passwd")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "links")
    src = GitSource(GitSourceConfig(name="hb", type="git", repo=str(repo), branch="main"), repo)
    refs = src.list_refs()
    assert [r.path for r in refs] == ["docs/a.md"]
    assert [d.content for d in src.fetch(refs) if isinstance(d, Document)] == ["# A\n\nThe real page."]


@pytest.mark.parametrize(
    "text",
    [
        "sources:\n" + "".join("  " * i + "- x:\n" for i in range(1, 2000)),  # block style
        "sources: " + "[" * 2000 + "]" * 2000 + "\n",  # flow style
        "sources: " + "{a: " * 2000 + "1" + "}" * 2000 + "\n",
    ],
    ids=["block", "flow-list", "flow-map"],
)
def test_a_config_nested_2000_deep_is_a_clear_error(tmp_path, text):
    config = tmp_path / "sources.yml"
    config.write_text(text)
    res = run(["status", "-c", str(config)], timeout=120)
    err = res.stderr.decode()
    assert res.returncode == 1 and "Traceback" not in err and "RecursionError" not in err
    assert "nested more than 64 levels deep" in err and str(config) in err


def test_verify_answers_every_line_of_a_hostile_file(tmp_path):
    """A lone surrogate, JSON nested 1,500 deep, NaN, bytes that are not UTF-8, a wrong shape: each line
    gets its own error, every good line its verdict, the output is valid JSON, exit 1, no traceback."""
    good = {"id": "ok", "answer": "Tokens rotate every 90 days [E1]", "evidence": ["Tokens rotate every 90 days."]}
    lines = [
        json.dumps(good).encode(),
        rb'{"id": 2, "answer": "bad \ud800 text [E1]", "evidence": "bad text"}',
        b"[" * 1500 + b"]" * 1500,
        b'{"id": 1500, "answer": ' + b"[" * 1500 + b"]" * 1500 + b', "evidence": "x"}',
        b'{"id": NaN, "answer": "x [E1]", "evidence": "x"}',
        b'{"id": 5, "answer": "x [E1]", "evidence": "x", "n": 1e999}',
        b"\xff\xfe not utf-8",
        b'{"id": 7, "answer": 5}',
        b"",
        json.dumps({**good, "id": "last"}).encode(),
    ]
    path = tmp_path / "in.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    res = run(["verify", str(path)], timeout=120)
    assert res.returncode == 1 and b"Traceback" not in res.stderr, res.stderr
    out = [
        json.loads(line, parse_constant=lambda c: pytest.fail(f"{c} in the output")) for line in res.stdout.splitlines()
    ]
    assert len(out) == 9  # every line but the blank one
    assert out[0]["id"] == "ok" and out[0]["verified"] and out[-1]["id"] == "last" and out[-1]["verified"]
    errors = {o["line"]: o["error"] for o in out[1:-1]}
    assert list(errors) == [2, 3, 4, 5, 6, 7, 8]
    assert "lone surrogate" in errors[2]
    assert "levels deep (the limit is" in errors[3] and "levels deep (the limit is" in errors[4]
    assert "NaN" in errors[5] and "1e999" in errors[6]
    assert "not UTF-8" in errors[7] and "'answer' must be a string" in errors[8]
    assert "7 input line(s) could not be verified" in res.stderr.decode()


def test_verify_takes_time_linear_in_the_claims():
    """Claims checked against one block that grows with them (every claim's sentence, names repeated in
    each): the work per claim stays flat. Counted in evidence sentences looked at, not timed."""
    from pipeline.answers import verify as v

    looked = []
    real = v.CitedBlock.sentences_with

    def counting(self, positions):
        looked.append(len(positions))
        return real(self, positions)

    def work(n: int) -> int:
        sents = [f"The cache of team {i} keeps {i} items for Alice." for i in range(n)]
        answer = "\n".join(f"Alice says the cache of team {i} keeps {i} items [E1]" for i in range(n))
        looked.clear()
        verdict = v.verify(answer, {"E1": " ".join(sents)})
        assert len(verdict.claims) == n
        return sum(looked)

    v.CitedBlock.sentences_with = counting
    try:
        small, large = work(200), work(800)
    finally:
        v.CitedBlock.sentences_with = real
    assert large <= 4 * small * 1.5  # 4x the claims: about 4x the work, not 16x


def test_two_ingests_of_one_source_on_a_fresh_home(make_repo, write_config):
    """Two `docforge ingest` at once on a DOCFORGE_HOME with no server yet: one starts the embedded
    Postgres while the other waits for it, then one ingests while the other says another ingest of the
    source is running and waits; both succeed, the index holds each chunk once."""
    docs = {f"docs/p{i}.md": f"# Page {i}\n\nTopic {i} in plain words. " * 5 for i in range(4)}
    config = write_config([{"name": "a", "type": "git", "repo": str(make_repo(docs))}])
    # Outside pytest's tmp root: the server runs as its own system user, which must reach its data.
    home = Path(tempfile.mkdtemp(prefix="docforge-ingest-race-")) / "home"
    env = {**os.environ, "DOCFORGE_HOME": str(home)}
    env.pop("DATABASE_URL", None)
    procs = [
        subprocess.Popen(
            [DOCFORGE, "ingest", "-c", str(config), "--json"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        for _ in range(2)
    ]
    try:
        outs = [p.communicate(timeout=600) for p in procs]
    finally:
        from pipeline.store.db import stop_embedded

        stop_embedded(home)
        shutil.rmtree(home.parent, ignore_errors=True)
    errs = [e.decode(errors="replace") for _, e in outs]
    assert [p.returncode for p in procs] == [0, 0], errs
    assert not any("AssertionError" in e or "Traceback" in e for e in errs), errs
    # the one that waited said for what: the source, and who holds it (pipeline.store.locks)
    assert sum("for source 'a'" in e and "held by docforge pid" in e for e in errs) == 1, errs
    reports = [json.loads(o) for o, _ in outs]
    added = sorted(r["sources"]["a"]["files_added"] for r in reports)
    assert added == [0, 4], reports  # the second run found the work done


def test_an_embedded_server_that_cannot_start_says_why(write_config):
    """A data folder Postgres refuses (no configuration in it): the error names the failure and ends
    with the server log's own reason, not a bare exception type."""
    home = Path(tempfile.mkdtemp(prefix="docforge-bad-pg-")) / "home"
    (home / "pg").mkdir(parents=True)
    (home / "pg" / "PG_VERSION").write_text("17\n")  # looks initialised, holds nothing
    env = {**os.environ, "DOCFORGE_HOME": str(home)}
    env.pop("DATABASE_URL", None)
    try:
        res = subprocess.run(
            [DOCFORGE, "status", "-c", str(write_config([]))], env=env, capture_output=True, timeout=120
        )
    finally:
        shutil.rmtree(home.parent, ignore_errors=True)
    err = res.stderr.decode(errors="replace")
    assert res.returncode == 1 and "Traceback" not in err, err
    assert "cannot start the embedded Postgres" in err and "postgresql.conf" in err, err

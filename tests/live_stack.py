"""The whole push-to-search path, for real: a git repository served over HTTP on 127.0.0.1
(tests/git_server.py), `dagster dev` (webserver + daemon, the repository's dagster.yaml) and
`docforge serve --api` with webhooks on. Used by tests/test_freshness_live.py and bench/freshness.py.

`push(text)` commits a one-file change and pushes it; `deliver()` sends the GitHub-style webhook for
the branch's head, signed; `until_found(word)` polls the API's /search until a hit quotes `word`.
Every process is started in its own process group and stopped by group, then by PID.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import httpx
import yaml

from tests.git_server import GitHTTPServer, serve_repo
from tests.helpers import git
from tests.test_dagster_live import Live, free_port, stop

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
SECRET, API_TOKEN, GIT_USER, GIT_TOKEN = "live-webhook-secret", "live-api-token", "bot", "live-git-token"
SOURCE = "docs"
DOCS = {"README.md": "# Widget\n\nWidgets turn cranks.\n", "docs/use.md": "# Use\n\nTurn the crank slowly.\n"}
GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.com"}  # fmt: skip
RUNS = """query($tags: [ExecutionTag!]) { runsOrError(filter: {tags: $tags}) {
  ... on Runs { results { runId status creationTime startTime endTime tags { key value } } } } }"""
WORKSPACE = "{ workspaceOrError { ... on Workspace { locationEntries { loadStatus } } } }"
DONE = ("SUCCESS", "FAILURE", "CANCELED")


class Stack:
    def __init__(self, tmp: Path, database_url: str | None = None):
        self.tmp, self.database_url = tmp, database_url
        self.procs: list[subprocess.Popen] = []
        self.http = httpx.Client(timeout=60)
        self.pushes = 0

    # --- setup -------------------------------------------------------------------------------------------

    def __enter__(self) -> Stack:
        try:
            self._start()
        except BaseException:
            self.__exit__()
            raise
        return self

    def _start(self) -> None:
        self.bare, self.work = self.tmp / "served" / "docs.git", self.tmp / "work"
        seed = self.tmp / "seed"
        seed.mkdir(parents=True)
        git(seed, "init", "-q", "-b", "main")
        for rel, text in DOCS.items():
            (seed / rel).parent.mkdir(parents=True, exist_ok=True)
            (seed / rel).write_text(text)
        git(seed, "add", "-A")
        git(seed, "commit", "-qm", "init")
        self.bare.parent.mkdir(parents=True)
        subprocess.run(["git", "clone", "-q", "--bare", str(seed), str(self.bare)], check=True)
        serve_repo(self.bare)
        subprocess.run(["git", "clone", "-q", str(self.bare), str(self.work)], check=True)
        self.server = GitHTTPServer(self.bare.parent, GIT_USER, GIT_TOKEN).__enter__()
        self.repo_url = self.server.url("docs.git")
        cfg = self.tmp / "sources.yml"
        source = {"name": SOURCE, "type": "git", "repo": self.repo_url, "branch": "main", "credentials_env": "LIVE_GIT"}
        cfg.write_text(yaml.safe_dump({"sources": [source]}))
        home = self.tmp / "dagster_home"
        home.mkdir()
        shutil.copy(ROOT / "dagster.yaml", home / "dagster.yaml")  # verbatim: its state goes to ./.docforge
        self.env = {
            **os.environ,
            "DAGSTER_HOME": str(home),
            "DOCFORGE_CONFIG": str(cfg),
            "DOCFORGE_HOME": str(self.tmp / "docforge_home"),
            "LIVE_GIT": f"{GIT_USER}:{GIT_TOKEN}",
            "DOCFORGE_WEBHOOK_SECRET": SECRET,
            "DOCFORGE_API_TOKENS": API_TOKEN,
            "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
            "TOKENIZERS_PARALLELISM": "false",
        }
        if self.database_url:
            self.env["DATABASE_URL"] = self.database_url
        port = free_port()
        self.dagster = f"http://127.0.0.1:{port}"
        self.dagster_log = self.tmp / "dagster-dev.log"
        self.live = Live(self.dagster, self.dagster_log)
        self._spawn(["dagster", "dev", "-w", str(ROOT / "workspace.yaml"), "-h", "127.0.0.1", "-p", str(port)],
                    self.dagster_log)  # fmt: skip
        self.wait("the code location to load", self._loaded, 300)
        # The sources-sync sensor adds the partition and runs the first ingest (which builds the store).
        self.wait("the first ingest of the source", lambda: self._runs_done({"docforge/trigger": "sources-sync"}), 600)
        api_port = free_port()
        self.api = f"http://127.0.0.1:{api_port}"
        self.api_log = self.tmp / "api.log"
        self._spawn(["docforge", "serve", "--api", "--port", str(api_port)], self.api_log)
        self.wait("the API", lambda: self.http.get(f"{self.api}/health").status_code == 200, 300, every=0.5)

    def _spawn(self, argv: list[str], log: Path) -> None:
        with open(log, "wb") as out:  # cwd = tmp: dagster.yaml's .docforge lands there
            self.procs.append(
                subprocess.Popen(
                    [str(BIN / argv[0]), *argv[1:]],
                    cwd=self.tmp,
                    env=self.env,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            )

    def __exit__(self, *exc) -> None:
        for p in reversed(self.procs):
            stop(p)
        if server := getattr(self, "server", None):
            server.__exit__()
        if not self.database_url and hasattr(self, "env"):  # the embedded store the stack started
            subprocess.run([str(BIN / "docforge"), "db", "stop"], env=self.env, capture_output=True, check=False)
        self.http.close()

    def wait(self, what: str, probe, timeout: float, every: float = 2.0):
        """Poll `probe` until it returns something truthy; fail with the dagster dev log's tail."""
        return self.live.wait(what, probe, timeout, every)

    def gql(self, query: str, **variables) -> dict:
        return self.live.gql(query, **variables)

    def _loaded(self) -> bool:
        entries = self.gql(WORKSPACE)["workspaceOrError"]["locationEntries"]
        return bool(entries) and entries[0]["loadStatus"] == "LOADED"

    def runs(self, tags: dict[str, str]) -> list[dict]:
        found = self.gql(RUNS, tags=[{"key": k, "value": v} for k, v in tags.items()])["runsOrError"]["results"]
        return found

    def _runs_done(self, tags: dict[str, str]) -> list[dict]:
        runs = self.runs(tags)
        return runs if runs and all(r["status"] in DONE for r in runs) else []

    # --- a push, its delivery, the search --------------------------------------------------------------

    def push(self, text: str) -> str:
        """Commit `text` as a new paragraph of docs/use.md and push it; the new head."""
        self.pushes += 1
        with open(self.work / "docs" / "use.md", "a") as f:
            f.write(f"\n## Change {self.pushes}\n\n{text}\n")
        git(self.work, "commit", "-qam", f"change {self.pushes}")
        git(self.work, "push", "-q", "origin", "main")
        return git(self.work, "rev-parse", "HEAD").strip()

    def deliver(self, commit: str, secret: str | None = SECRET, url: str | None = None) -> httpx.Response:
        """GitHub's push delivery for `commit`, signed with `secret` (None: unsigned)."""
        body = json.dumps(
            {
                "ref": "refs/heads/main",
                "before": "0" * 40,
                "after": commit,
                "repository": {"clone_url": url or self.repo_url, "name": "docs", "default_branch": "main"},
            }
        ).encode()
        headers = {"X-GitHub-Event": "push", "X-GitHub-Delivery": str(uuid.uuid4()), "Content-Type": "application/json"}
        if secret is not None:
            headers["X-Hub-Signature-256"] = "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
        return self.http.post(f"{self.api}/hooks/git", content=body, headers=headers)

    def found(self, word: str) -> bool:
        res = self.http.post(
            f"{self.api}/search",
            json={"query": word, "limit": 5},
            headers={"Authorization": f"Bearer {API_TOKEN}"},
        )
        res.raise_for_status()
        return any(word in h["text"] for h in res.json()["hits"])

    def until_found(self, word: str, timeout: float = 300, every: float = 0.25) -> float:
        """Seconds until a search quotes `word`."""
        t0 = time.monotonic()
        self.wait(f"{word!r} to be searchable", lambda: self.found(word), timeout, every)
        return time.monotonic() - t0

"""Remote git repositories: a partial clone under $DOCFORGE_HOME, fetched before each run.

`repo:` may be a URL (https://, http://, ssh://, git://, file://) or scp-style
`git@host:path`. docforge keeps a bare, blob-less clone (`--filter=blob:none`,
the configured branch only; the remote's default branch when none is set) in
`$DOCFORGE_HOME/git/`, fetches the branch before each run, and ingests the
branch's tree: blob ids are the versions, so an unchanged file is never fetched,
and the blobs of the changed ones come in one batch (`prefetch`), not one round
trip each.

Credentials (http/https): `credentials_env` names an environment variable holding
`token` or `user:token`. They reach git as an HTTP header scoped to the repository's
URL through git's environment configuration (GIT_CONFIG_COUNT/KEY/VALUE), never in
a URL, an argument list, the clone's config, a log line, metadata or the store; a
git error message that might echo them is redacted. ssh URLs use the ssh agent or
keys of the user running docforge.

The push sensor watches the same thing this module fetches: `remote_head` (one
`git ls-remote`, same URL, same credentials, same default-branch rule).
"""

from __future__ import annotations

import base64
import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from pipeline.config import GitSourceConfig, source_secret
from pipeline.errors import GitSourceError

GIT_TIMEOUT_S = 600  # one clone or fetch; a stalled server must not hold a run forever
LS_REMOTE_TIMEOUT_S = 30
_SCP = re.compile(r"^[\w.-]+@[\w.-]+:")


def is_remote(repo: str) -> bool:
    """A URL (https://, ssh://, file:// ...) or scp-style `git@host:path`, not a local path."""
    return "://" in repo or _SCP.match(repo) is not None


@dataclass(frozen=True)
class Clone:
    path: Path  # the bare partial clone
    branch: str  # the branch it tracks (the remote's default when the config names none)
    url: str  # the configured URL (never holds a password: the config refuses one)


def clone_path(home: Path, cfg: GitSourceConfig) -> Path:
    """One clone per source and URL: renaming a source or changing its URL starts a fresh clone."""
    slug = re.sub(r"[^\w.-]+", "-", cfg.name)[:60]
    return Path(home).resolve() / "git" / f"{slug}-{hashlib.sha256(cfg.repo.encode()).hexdigest()[:12]}.git"


def git_env(cfg: GitSourceConfig) -> dict[str, str]:
    """The environment git runs in for this source: no prompts, and the credentials if any."""
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "true", "SSH_ASKPASS": "true"}
    env.pop("GIT_CONFIG_PARAMETERS", None)
    if cfg.credentials_env:
        secret = source_secret(cfg.credentials_env)
        if secret is None:
            raise GitSourceError(
                f"source {cfg.name!r}: credentials_env names {cfg.credentials_env}, which is not set in the environment"
            )
        value = secret.get_secret_value()
        user, token = value.split(":", 1) if ":" in value else ("x-access-token", value)
        basic = base64.b64encode(f"{user}:{token}".encode()).decode()
        env.update(
            {
                "GIT_CONFIG_COUNT": "1",
                "GIT_CONFIG_KEY_0": f"http.{cfg.repo}.extraHeader",
                "GIT_CONFIG_VALUE_0": f"Authorization: Basic {basic}",
            }
        )
    return env


def _git(
    cfg: GitSourceConfig,
    *args: str,
    cwd: Path | None = None,
    input: bytes | None = None,
    timeout: float = GIT_TIMEOUT_S,
) -> bytes:
    env = git_env(cfg)
    try:
        res = subprocess.run(["git", *args], cwd=cwd, input=input, capture_output=True, env=env, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise GitSourceError(f"source {cfg.name!r}: git {args[0]} {cfg.repo} timed out after {timeout:.0f}s") from None
    except FileNotFoundError:
        raise GitSourceError("git is not installed or not on PATH") from None
    if res.returncode != 0:
        msg = _redact(res.stderr.decode("utf-8", "replace").strip(), env)
        raise GitSourceError(f"source {cfg.name!r}: git {args[0]} {cfg.repo} failed: {msg}")
    return res.stdout


def _redact(text: str, env: dict[str, str]) -> str:
    """The text without any part of the credentials (a server or git may echo a header or a token)."""
    header = env.get("GIT_CONFIG_VALUE_0", "")
    secrets = [header, header.removeprefix("Authorization: Basic ")] if header else []
    if secrets:
        user_token = base64.b64decode(secrets[1]).decode("utf-8", "replace")
        secrets += [user_token, user_token.split(":", 1)[-1]]
    for s in sorted((s for s in secrets if len(s) >= 4), key=len, reverse=True):
        text = text.replace(s, "***")
    return text


def remote_head(cfg: GitSourceConfig) -> str:
    """The commit the source's branch (or the remote's HEAD) points at now, without cloning."""
    ref = f"refs/heads/{cfg.branch}" if cfg.branch else "HEAD"
    out = _git(cfg, "ls-remote", "--exit-code", cfg.repo, ref, timeout=LS_REMOTE_TIMEOUT_S).decode()
    if not out.strip():
        raise GitSourceError(f"source {cfg.name!r}: git ls-remote {cfg.repo}: no ref {ref}")
    return out.split()[0]


def sync_clone(home: Path, cfg: GitSourceConfig) -> Clone:
    """The source's partial clone, made if missing and fetched up to the remote's branch now."""
    path = clone_path(home, cfg)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_suffix(".lock"), "w") as lock:  # one fetch per clone at a time (runs may overlap)
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (path / "HEAD").exists():
            _clone(cfg, path)
        branch = cfg.branch or _default_branch(path)
        _git(cfg, "remote", "set-url", "origin", cfg.repo, cwd=path)  # no-op unless the URL form changed
        _git(
            cfg,
            "fetch",
            "--quiet",
            "--no-tags",
            "--prune",
            "--filter=blob:none",
            "origin",
            f"+refs/heads/{branch}:refs/heads/{branch}",
            cwd=path,
        )
    return Clone(path, branch, cfg.repo)


def _clone(cfg: GitSourceConfig, path: Path) -> None:
    """A bare, blob-less clone of the one branch, made aside and moved in whole."""
    tmp = Path(tempfile.mkdtemp(prefix=".clone-", dir=path.parent))
    try:
        args = ["clone", "--quiet", "--bare", "--filter=blob:none", "--single-branch", "--no-tags"]
        if cfg.branch:
            args += ["--branch", cfg.branch]
        _git(cfg, *args, cfg.repo, str(tmp / "c.git"))
        os.replace(tmp / "c.git", path)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _default_branch(path: Path) -> str:
    """The branch a clone made without --branch checked out: the remote's default."""
    head = (path / "HEAD").read_text().strip()
    if not head.startswith("ref: refs/heads/"):
        raise GitSourceError(f"{path}: the clone's HEAD is not a branch ({head[:60]})")
    return head.removeprefix("ref: refs/heads/")


def prefetcher(cfg: GitSourceConfig, path: Path):
    """A function fetching blobs by id in one request: a run reads only changed files, all at once."""

    def prefetch(blobs: list[str]) -> None:
        if blobs:
            _git(
                cfg,
                "-c",
                "fetch.negotiationAlgorithm=noop",
                "fetch",
                "--quiet",
                "--no-tags",
                "--no-write-fetch-head",
                "--recurse-submodules=no",
                "--filter=blob:none",
                "--stdin",
                "origin",
                cwd=path,
                input="".join(f"{b}\n" for b in dict.fromkeys(blobs)).encode(),
            )

    return prefetch

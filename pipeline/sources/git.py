"""Git repositories: the checked-out working tree, or the tree of a branch.

With no `branch`, files come from the working tree (what a user sees, edits
included); a file whose mtime and size are unchanged is never read again.
With a `branch`, files come from that ref's tree: the blob id is the version,
exact and free to compare. Globs are gitignore-style patterns anchored at the
repository root (`docs/**/*.md`), matched by pathspec.

A working tree is read through `read_file`: a link out of the repository (or into
`.git`), a FIFO, a device, a link loop or a file over `max_file_bytes` becomes a
Failure for that path alone, as does a name that is not UTF-8 (it could be neither
stored nor shown). Branch mode reads blobs, never the file system, and skips blobs
over the size limit before reading them.
"""

from __future__ import annotations

import logging
import os
import re
import subprocess
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pathspec

from pipeline.config import GitSourceConfig
from pipeline.errors import GitSourceError
from pipeline.parse import formats
from pipeline.records import DocRef, Document, Failure
from pipeline.sources.content import file_document
from pipeline.sources.files import UnreadableFile, read_file, shown_path, too_large

log = logging.getLogger(__name__)
SYMLINK_MODE = "120000"  # git's mode for a symbolic link (its blob holds the target path)


def run_git(repo: Path | str, *args: str, input: bytes | None = None) -> bytes:
    try:
        res = subprocess.run(["git", "-C", str(repo), *args], input=input, capture_output=True, check=True)
    except subprocess.CalledProcessError as e:
        msg = e.stderr.decode("utf-8", "replace").strip()
        raise GitSourceError(f"git {' '.join(args[:2])} failed in {repo}: {msg}") from None
    except FileNotFoundError:
        raise GitSourceError("git is not installed or not on PATH") from None
    return res.stdout


def match_spec(globs: Sequence[str]) -> pathspec.PathSpec:
    # Anchor plain patterns at the root: "README.md" means the top-level README only.
    lines = [g if g.startswith(("/", "!")) else "/" + g for g in globs]
    return pathspec.PathSpec.from_lines("gitwildmatch", lines)


def resolve_ref(repo: Path | str, branch: str) -> str:
    """The commit a branch name points at: local branch, then origin's, then any ref."""
    for ref in (f"refs/heads/{branch}", f"refs/remotes/origin/{branch}", branch):
        try:
            return run_git(repo, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}").decode().strip()
        except GitSourceError:
            continue
    raise GitSourceError(f"branch {branch!r} not found in {repo}")


def head_commit(repo: Path | str, branch: str | None = None) -> str:
    if branch:
        return resolve_ref(repo, branch)
    # Not resolve_ref: it would try refs/remotes/origin/HEAD before the checkout's own HEAD.
    return run_git(repo, "rev-parse", "--verify", "HEAD^{commit}").decode().strip()


def web_url(remote: str) -> str | None:
    """https://host/owner/name for a GitHub/GitLab-style remote, else None."""
    m = re.match(r"^(?:https?://(?:[^@/]+@)?|git@)([^/:]+)[/:](.+?)(?:\.git)?/?$", remote.strip())
    return f"https://{m.group(1)}/{m.group(2)}" if m and "." in m.group(1) else None


def _worktree_commit(repo: Path) -> str | None:
    """HEAD's commit, or None in a repository with no commit yet: its working tree is indexed all the same."""
    try:
        return head_commit(repo)
    except GitSourceError:
        if run_git(repo, "rev-list", "-n", "1", "--all").strip():
            raise  # there are commits: HEAD itself is broken
        return None


class GitSource:
    type = "git"

    def __init__(
        self,
        cfg: GitSourceConfig,
        repo: Path | str,
        origin: str | None = None,
        prefetch: Callable[[list[str]], None] | None = None,
    ):
        """A remote's partial clone (pipeline.sources.remote) gives `origin`, the URL shown as the repo,
        and `prefetch`, which fetches the blobs a run reads in one request."""
        self.name, self.cfg, self.tags = cfg.name, cfg, list(cfg.tags)
        self.repo = Path(repo)
        self.origin, self.prefetch = origin, prefetch
        if not self.repo.is_dir():
            why = "is not a directory" if self.repo.exists() else "does not exist"
            raise GitSourceError(f"source {cfg.name!r}: repo path {self.repo} {why}")
        try:
            run_git(self.repo, "rev-parse", "--git-dir")
        except GitSourceError:
            raise GitSourceError(f"source {cfg.name!r}: {self.repo} is not a git repository") from None
        self.spec = match_spec(cfg.globs)
        self.commit: str | None = head_commit(self.repo, cfg.branch) if cfg.branch else _worktree_commit(self.repo)
        try:
            remote = run_git(self.repo, "remote", "get-url", "origin").decode()
            self.base_url = web_url(remote)
        except GitSourceError:
            self.base_url = None

    def _url(self, path: str) -> str:
        if self.base_url and self.commit:
            return f"{self.base_url}/blob/{self.commit}/{path}"
        return (self.repo / path).as_uri()

    def _meta(self, path: str) -> dict:
        return {
            "repo": self.origin or str(self.repo),
            "commit": self.commit,
            "path": path,
            "url": self._url(path),
            "format": formats.detect(path) or "text",
        }

    def list_refs(self) -> list[DocRef]:
        return self._list_tree() if self.cfg.branch else self._list_worktree()

    def _list_worktree(self) -> list[DocRef]:
        out = run_git(self.repo, "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--deduplicate")
        refs = []
        for path in sorted({p for p in out.decode("utf-8", "surrogateescape").split("\0") if p}):
            if not self.spec.match_file(path):
                continue
            mtime_ns: int | None
            size: int | None
            try:
                st = os.stat(self.repo / path)
                mtime_ns, size = st.st_mtime_ns, st.st_size
            except OSError:
                if not os.path.lexists(self.repo / path):  # tracked but deleted in the working tree
                    continue
                mtime_ns = size = None  # a broken link or a loop: listed, so that fetch reports it
            refs.append(DocRef(self._key(path), path, None, mtime_ns, size, self._meta(path)))
        return refs

    def _key(self, path: str) -> str:
        return f"{self.name}:{shown_path(path)}"

    def _list_tree(self) -> list[DocRef]:
        assert self.commit is not None  # a branch always resolves to a commit
        # A partial clone (prefetch set) has no blob to size before fetching it: no --long there.
        sized = ["--long"] if self.prefetch is None else []
        out = run_git(self.repo, "ls-tree", "-r", "-z", *sized, self.commit)
        refs = []
        for entry in out.decode("utf-8", "surrogateescape").split("\0"):
            if not entry:
                continue
            info, path = entry.split("\t", 1)
            mode, kind, blob, *size = info.split()
            if mode == SYMLINK_MODE:  # its blob is the target's path, not a document: skipped
                log.debug("%s: %s is a symbolic link: skipped", self.name, shown_path(path))
                continue
            if kind == "blob" and self.spec.match_file(path):
                refs.append(DocRef(self._key(path), path, blob, None, int(size[0]) if size else None, self._meta(path)))
        return sorted(refs, key=lambda r: r.path)

    def _read(self, refs: Sequence[DocRef]) -> Iterator[tuple[DocRef, bytes | Failure]]:
        if not self.cfg.branch:
            for ref in refs:
                try:
                    yield ref, read_file(self.repo, ref.path, self.cfg.max_file_bytes, private=(".git",))
                except UnreadableFile as e:
                    yield ref, Failure(ref.key, "fetch", f"{shown_path(ref.path)}: {e}")
            return
        if not refs:
            return
        if self.prefetch is not None:
            self.prefetch([r.version for r in refs if r.version])
        # One `git cat-file --batch` for all blobs: one process, not one per file.
        out = run_git(self.repo, "cat-file", "--batch", input="".join(f"{r.version}\n" for r in refs).encode())
        pos = 0
        for ref in refs:
            nl = out.index(b"\n", pos)
            size = int(out[pos:nl].split()[2])
            if size > self.cfg.max_file_bytes:  # unsized in the listing (a partial clone): checked here
                why = too_large(size, self.cfg.max_file_bytes)
                yield ref, Failure(ref.key, "fetch", f"{shown_path(ref.path)}: {why}")
            else:
                yield ref, out[nl + 1 : nl + 1 + size]
            pos = nl + 1 + size + 1

    def fetch(self, refs: Sequence[DocRef]) -> Iterator[Document | Failure]:
        readable = []
        for ref in refs:
            if (problem := self._refuse(ref)) is not None:
                yield Failure(ref.key, "fetch", f"{shown_path(ref.path)}: {problem}")
            else:
                readable.append(ref)
        for ref, data in self._read(readable):  # a file's faults are its alone (`file_document`)
            yield data if isinstance(data, Failure) else self._document(ref, data)

    def _refuse(self, ref: DocRef) -> str | None:
        """Why a listed file is not read at all, or None."""
        if shown_path(ref.path) != ref.path:
            return "the file name is not valid UTF-8: skipped (rename it to index it)"
        if self.cfg.branch and ref.size is not None and ref.size > self.cfg.max_file_bytes:
            return too_large(ref.size, self.cfg.max_file_bytes)
        return None

    def _document(self, ref: DocRef, data: bytes) -> Document | Failure:
        title = Path(ref.path).stem if Path(ref.path).stem.lower() != "readme" else ref.path
        return file_document(ref, data, ref.meta["format"], title, ref.meta["url"])

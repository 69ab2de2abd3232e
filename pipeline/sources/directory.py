"""A plain directory tree (or one file): no git needed.

Listing walks the tree without following any symlinked directory (a loop, or a
way out of the root) and decides, from names and `lstat` alone, what is read:

  in scope      `globs` (gitignore-style, from the root) and `extensions`, when given
                (`""` in it: files without an extension); `include` name globs read
                files of no known format as text;
  skipped       and reported in `skipped` with the reason: directories named in
                `ignore_dirs` (.git, node_modules, virtualenvs, build outputs ...)
                or holding `pyvenv.cfg`, what the root `.gitignore` or `ignore`
                excludes, binary file types, files of no known format, special
                files, and symlinks that lead out of the root or to a directory;
                files that are no documents though their format is known
                (stylesheets, robots.txt, packaging metadata; the scripts of a
                source holding HTML pages) unless `include` names them; and, as
                they are read, HTML redirect stubs and script-only pages.

An ignored directory is reported once, never entered. The format of each file
comes from its name (pipeline.parse.formats), so the listing's `languages`
count needs no read. Like a git working tree, a file is read only when its
mtime or size changed, then kept only if its content hash changed; reading goes
through `read_file`, which re-checks the path against the root at open time.
"""

from __future__ import annotations

import fnmatch
import os
import stat
from collections.abc import Iterator, Sequence
from pathlib import Path

import pathspec

from pipeline.config import DirectorySourceConfig
from pipeline.errors import SourceError
from pipeline.parse import formats
from pipeline.records import DocRef, Document, Failure, Skipped
from pipeline.sources.content import file_document
from pipeline.sources.files import UnreadableFile, read_file, shown_path

MAX_SKIPPED_LISTED = 1000  # skips kept with their path per run; `files_skipped` counts them all


class DirectorySource:
    type = "directory"

    def __init__(self, cfg: DirectorySourceConfig, path: Path):
        self.name, self.cfg, self.tags = cfg.name, cfg, list(cfg.tags)
        if not path.exists():
            raise SourceError(f"source {cfg.name!r}: path {path} does not exist")
        real = Path(os.path.realpath(path))
        self.only: str | None = None  # one file: the source is that file alone
        if real.is_file():
            self.root, self.only = real.parent, real.name
        elif real.is_dir():
            self.root = real
        else:
            raise SourceError(f"source {cfg.name!r}: path {path} is neither a directory nor a regular file")
        self.scope = pathspec.PathSpec.from_lines(
            "gitwildmatch", [g if g.startswith(("/", "!")) else "/" + g for g in cfg.globs]
        )
        self.gitignore = self._root_gitignore() if cfg.gitignore else None
        self.ignore = pathspec.GitIgnoreSpec.from_lines(cfg.ignore) if cfg.ignore else None
        self.skipped: list[Skipped] = []
        self.files_skipped = 0

    def _root_gitignore(self) -> pathspec.GitIgnoreSpec | None:
        try:
            data = read_file(self.root, ".gitignore", 1 << 20)
        except UnreadableFile:
            return None  # none, or not a plain file in the root: nothing to honour
        return pathspec.GitIgnoreSpec.from_lines(data.decode("utf-8", "replace").splitlines())

    def _skip(self, path: str, reason: str) -> None:
        self.files_skipped += 1
        if len(self.skipped) < MAX_SKIPPED_LISTED:
            self.skipped.append(Skipped(shown_path(path), reason))

    def _excluded(self, rel: str) -> str | None:
        """Why .gitignore or `ignore` excludes a path (a directory's ends with '/'), or None."""
        if self.gitignore is not None and self.gitignore.match_file(rel):
            return "excluded by the root .gitignore"
        if self.ignore is not None and self.ignore.match_file(rel):
            return "excluded by the source's `ignore` patterns"
        return None

    def list_refs(self) -> list[DocRef]:
        self.skipped, self.files_skipped = [], 0
        if self.only is not None:
            ref = self._file(self.only, os.lstat(self.root / self.only))
            return [ref] if ref is not None else []
        refs: list[DocRef] = []
        todo = [""]  # directories to read, relative to the root; iterative: no recursion limit
        while todo:
            rel_dir = todo.pop()
            try:
                with os.scandir(self.root / rel_dir) as it:
                    entries = sorted(it, key=lambda e: e.name)
            except OSError as e:
                self._skip(rel_dir + "/", f"cannot list the directory: {e.strerror}")
                continue
            subdirs = []
            for entry in entries:
                rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
                try:
                    st = entry.stat(follow_symlinks=False)
                except OSError as e:
                    self._skip(rel, f"cannot stat: {e.strerror}")
                    continue
                if stat.S_ISLNK(st.st_mode):
                    if (why := self._link(rel)) is not None:
                        self._skip(rel, why)
                        continue
                    ref = self._file(rel, st)
                elif stat.S_ISDIR(st.st_mode):
                    if (why := self._dir(rel, entry.name)) is not None:
                        self._skip(rel + "/", why)
                    else:
                        subdirs.append(rel)
                    continue
                elif stat.S_ISREG(st.st_mode):
                    ref = self._file(rel, st)
                else:
                    self._skip(rel, "not a regular file (a FIFO, socket or device)")
                    continue
                if ref is not None:
                    refs.append(ref)
            todo += reversed(subdirs)  # depth first, in name order
        return sorted(self._without_site_scripts(refs), key=lambda r: r.path)

    def _without_site_scripts(self, refs: list[DocRef]) -> list[DocRef]:
        """Where the source holds HTML pages, its scripts are theirs (menus, search boxes): not documents."""
        if not any(r.meta["format"] == "html" for r in refs):
            return refs
        kept = []
        for r in refs:
            if r.meta["format"] in formats.SITE_SCRIPTS and not self._included(r.path):
                why = "a script of the source's HTML pages, not a document: not read"
                self._skip(r.path, f"{why} ({_include_hint(r.path)} on the source reads it)")
            else:
                kept.append(r)
        return kept

    def _link(self, rel: str) -> str | None:
        """Why a symlink is not followed, or None for a link to a file inside the root."""
        real = os.path.realpath(self.root / rel)
        if os.path.commonpath([str(self.root), real]) != str(self.root):
            return "a symlink that leads outside the source's root: not followed"
        if os.path.isdir(real):
            return "a symlink to a directory: not followed (it could loop)"
        if not os.path.exists(real):
            return "a broken symlink"
        return None

    def _dir(self, rel: str, name: str) -> str | None:
        if any(fnmatch.fnmatchcase(name, pattern) for pattern in self.cfg.ignore_dirs):
            return "ignored directory (ignore_dirs)"
        if os.path.lexists(self.root / rel / "pyvenv.cfg"):
            return "a virtualenv (holds pyvenv.cfg)"
        return self._excluded(rel + "/")

    def _file(self, rel: str, st: os.stat_result) -> DocRef | None:
        """The file's DocRef, or None when out of scope or skipped (then recorded)."""
        if not self.scope.match_file(rel) and self.only is None:
            return None
        suffix = os.path.splitext(rel)[1].lower()
        if self.cfg.extensions is not None and suffix not in self.cfg.extensions:
            return None
        if (why := self._excluded(rel)) is not None:
            self._skip(rel, why)
            return None
        if formats.is_binary_name(rel):
            self._skip(rel, f"binary file type ({suffix}): not read")
            return None
        if (what := formats.not_a_document(rel)) is not None and not self._included(rel):
            self._skip(rel, f"{what}, not a document: not read ({_include_hint(rel)} on the source reads it)")
            return None
        fmt = formats.detect(rel)
        if fmt is None:
            # A file named on its own, listed by `extensions:` or matched by `include:` is read as text.
            if self.cfg.extensions is None and self.only is None and not self._included(rel):
                self._skip(rel, _no_format_reason(rel))
                return None
            fmt = "text"
        url = (self.root / rel).as_uri()
        meta = {"path": rel, "url": url, "format": fmt, "root": str(self.root)}
        return DocRef(f"{self.name}:{shown_path(rel)}", rel, None, st.st_mtime_ns, st.st_size, meta)

    def _included(self, rel: str) -> bool:
        """`include:` name globs: on the file name, or on the whole path when the glob has a `/`."""
        name = rel.rsplit("/", 1)[-1]
        return any(fnmatch.fnmatchcase(rel if "/" in g else name, g) for g in self.cfg.include)

    def fetch(self, refs: Sequence[DocRef]) -> Iterator[Document | Failure]:
        from pipeline.parse.html import skip_reason  # here: a listing (a no-op run) never needs the parser

        for ref in refs:
            if shown_path(ref.path) != ref.path:
                yield Failure(
                    ref.key,
                    "fetch",
                    f"{shown_path(ref.path)}: the file name is not valid UTF-8: skipped (rename it to index it)",
                )
                continue
            try:
                data = read_file(self.root, ref.path, self.cfg.max_file_bytes, private=(".git",))
            except UnreadableFile as e:
                yield Failure(ref.key, "fetch", f"{ref.path}: {e}")
                continue
            # A file's faults are its alone (`file_document`): the rest of the source goes on.
            doc = file_document(ref, data, ref.meta["format"], Path(ref.path).name, ref.meta["url"])
            if isinstance(doc, Document) and doc.kind == "html" and (why := skip_reason(doc.content)):
                # Said once, when it is read; it is still recorded (the ledger knows it unchanged after)
                # and parses to no sections, so nothing of it is indexed.
                self._skip(ref.path, why)
            yield doc


def _include_hint(rel: str) -> str:
    """The `include:` line that would read a file: its extension's glob, else (robots.txt) its name."""
    name = rel.rsplit("/", 1)[-1]
    suffix = os.path.splitext(name)[1]
    by_suffix = suffix and (formats.not_a_document(name) is None or formats.not_a_document("x" + suffix))
    return f'`include: ["{f"*{suffix}" if by_suffix else name}"]`'


def _no_format_reason(rel: str) -> str:
    """Why a file was not read, naming the setting that would read it."""
    return f"no known text or document format: not read ({_include_hint(rel)} on the source reads it as text)"

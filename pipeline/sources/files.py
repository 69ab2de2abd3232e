"""Reading one file of a source's directory tree without trusting the tree.

A working tree can hold a symlink to /etc/passwd (indexed, then searchable by
anyone), to /dev/zero (read until memory runs out), to a FIFO (blocks forever),
or a link loop. `read_file` is the one way file-reading sources read: the path is
resolved and must stay inside the source's root (and out of its private parts,
such as `.git`, whose config may hold credentials); the result is opened without
following a last link and without blocking, must be a regular file, and is read
to at most `max_bytes`. A refusal is an `UnreadableFile` that says why, for that
file alone; the caller records it and goes on.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Sequence
from pathlib import Path

from pipeline.errors import SourceError

_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
_KINDS = {
    stat.S_IFDIR: "a directory",
    stat.S_IFIFO: "a FIFO",
    stat.S_IFSOCK: "a socket",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
}


class UnreadableFile(SourceError):
    """One file that is not read, and why (outside the root, not a regular file, too large ...)."""


def shown_path(path: str) -> str:
    """A path as text that can be printed and stored: undecodable name bytes become \\xNN escapes."""
    return path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def read_file(root: Path | str, relpath: str, max_bytes: int, private: Sequence[str] = ()) -> bytes:
    """The bytes of root/relpath, or UnreadableFile; never follows a link out of root, never blocks."""
    base = os.path.realpath(root)
    try:
        real = os.path.realpath(os.path.join(base, relpath), strict=True)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise UnreadableFile("symlink loop") from None
        if e.errno == errno.ENOENT:
            raise UnreadableFile("missing (a broken symlink, or deleted while listing)") from None
        raise UnreadableFile(f"cannot resolve the path: {e.strerror}") from None
    if os.path.commonpath([base, real]) != base:
        raise UnreadableFile("a symlink that leads outside the source's root: not followed") from None
    if any(part in private for part in Path(os.path.relpath(real, base)).parts):
        raise UnreadableFile(f"a symlink into {'/'.join(private)}: not followed") from None
    try:
        fd = os.open(real, _OPEN_FLAGS)
    except OSError as e:
        if e.errno in (errno.ELOOP, errno.EMLINK):  # the last component became a link after resolving
            raise UnreadableFile("changed into a symlink while reading") from None
        if e.errno == errno.ENXIO:
            raise UnreadableFile("not a regular file (a socket or device)") from None
        raise UnreadableFile(f"cannot open: {e.strerror}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise UnreadableFile(f"not a regular file ({_KINDS.get(stat.S_IFMT(st.st_mode), 'special file')})")
        if st.st_size > max_bytes:
            raise UnreadableFile(too_large(st.st_size, max_bytes))
        chunks, left = [], max_bytes + 1  # one byte more tells a file that grew past the limit
        while left > 0 and (data := os.read(fd, min(left, 1 << 20))):
            chunks.append(data)
            left -= len(data)
        if left <= 0:
            raise UnreadableFile(too_large(max_bytes + 1, max_bytes))
        return b"".join(chunks)
    except OSError as e:
        raise UnreadableFile(f"cannot read: {e.strerror}") from None
    finally:
        os.close(fd)


def too_large(size: int, max_bytes: int) -> str:
    return f"{_mb(size)} is over the {_mb(max_bytes)} limit (max_file_bytes): skipped"


def _mb(n: int) -> str:
    return f"{n / 2**20:.1f} MiB" if n >= 2**20 else f"{n} bytes"

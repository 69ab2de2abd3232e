"""What the repository tracks: no binaries, no large files, no scratch output, one number per migration.

Reads `git ls-files`, so it checks what a clone gets, not what lies untracked in a work tree.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MAX_BYTES = 1 << 20  # 1 MiB: larger test data belongs in tests/ or in shared/, never in the product
# Archives and packages, and what a command run by hand leaves behind: never at the root.
MIGRATION = re.compile(r"^(\d{4})_[a-z0-9_]+\.sql$")
ROOT_STRAYS = re.compile(r"\.(whl|zip|tar|gz|tgz|xz|bz2|7z|egg|txt|log|out|tmp|prof|pyc|so)$", re.I)


def tracked() -> list[Path]:
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    return [Path(p) for p in out.decode().split("\0") if p and (ROOT / p).is_file()]


def outside_tests(paths: list[Path]) -> list[Path]:
    return [p for p in paths if p.parts[0] != "tests"]


def test_no_large_file_outside_tests():
    sizes = {p: (ROOT / p).stat().st_size for p in outside_tests(tracked())}
    large = [f"{p} ({size:,} bytes)" for p, size in sizes.items() if size > MAX_BYTES]
    assert not large, f"tracked files over {MAX_BYTES:,} bytes: {large}"


def test_no_binary_outside_tests():
    binary = [str(p) for p in outside_tests(tracked()) if b"\0" in (ROOT / p).read_bytes()[:8192]]
    assert not binary, f"binary files tracked: {binary}"


def test_no_archive_or_scratch_file_at_the_root():
    strays = [str(p) for p in tracked() if len(p.parts) == 1 and ROOT_STRAYS.search(p.name)]
    assert not strays, f"archives or scratch output at the repository root: {strays}"


def test_migrations_numbered_once_each_without_gaps():
    names = sorted(p.name for p in (ROOT / "pipeline/store/migrations").iterdir() if p.suffix == ".sql")
    bad = [n for n in names if not MIGRATION.match(n)]
    assert not bad, f"migrations must be named NNNN_name.sql: {bad}"
    numbers = [int(MIGRATION.match(n).group(1)) for n in names]  # type: ignore[union-attr]
    duplicates = sorted({n for n in numbers if numbers.count(n) > 1})
    assert not duplicates, f"migration numbers used twice: {duplicates}"
    assert numbers == list(range(1, len(numbers) + 1)), f"migration numbers have gaps: {numbers}"

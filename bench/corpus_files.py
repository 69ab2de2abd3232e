"""A labelled corpus's files as docforge reads them, for bench/fit_answers.py's stores: a directory as
`docforge ingest PATH` registers it (an ad-hoc source), man pages rendered as `man -l` shows them, and a
question's page found under the corpus's files."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path


def adhoc(files: Path, d: Path) -> Path:
    """STORES/<name>/ as `docforge ingest FILES` makes it (bench/manual_check.py's WORK/<name>/home): the
    directory an ad-hoc source of its home, sources.yml empty — the store the held-out check asks."""
    from pipeline.adhoc import register
    from pipeline.config import load_settings

    d.mkdir(parents=True, exist_ok=True)
    config = d / "sources.yml"
    config.write_text("sources: []  # the ad-hoc source of home/ (`docforge ingest PATH`)\n", encoding="utf-8")
    before = os.environ.get("DOCFORGE_HOME")
    os.environ["DOCFORGE_HOME"] = str(d / "home")
    try:
        register(load_settings(config), [files])
    finally:
        if before is None:
            os.environ.pop("DOCFORGE_HOME")
        else:
            os.environ["DOCFORGE_HOME"] = before
    return config


def find(files: Path, page: str) -> str:
    """A question's page relative to `files`: as named, under it, or the first file of its name (or of
    its name before the first dot: a rendered page's source)."""
    p = Path(page)
    if not page:
        return ""
    if p.is_absolute() and p.is_relative_to(files) and p.exists():
        return str(p.relative_to(files))
    if not p.is_absolute() and (files / p).is_file():
        return page
    for pattern in (p.name, f"{p.name}.*", f"{p.name.split('.')[0]}.*"):
        found = sorted(f for f in files.rglob(pattern) if f.is_file())
        if found:
            return str(found[0].relative_to(files))
    return ""


def rendered(files: Path, globs: list[str], out: Path, how: str = "man") -> Path:
    """Each page of `globs` as docforge reads it, under `out`: a man page as `man -l PAGE > page.txt`
    writes it (80 columns, its indentation kept: pipeline.parse.manpage reads its sections and entries
    from them); an `.rst.txt` source (Sphinx's copy) as `.rst`."""
    out.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "MANWIDTH": "80", "LC_ALL": "C.UTF-8"}
    for g in globs:
        for f in sorted(files.glob(g)):
            if how == "rst":
                target = out / Path(g).parent / f.name.removesuffix(".txt")
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(f.read_bytes())
                continue
            name = f.name.removesuffix(".gz")
            text = subprocess.run(["man", "-l", str(f)], capture_output=True, text=True, env=env).stdout
            plain = subprocess.run(["col", "-b"], input=text, capture_output=True, text=True).stdout
            (out / f"{name}.txt").write_text(plain, encoding="utf-8")
    return out

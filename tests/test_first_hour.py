"""The first hour of a new user, as the README tells it: an empty directory, a folder of mixed files,
`docforge ingest PATH`, then search, ask, status, sources and the page, from that directory and from
another one; every assertion is on what a person reads (80 columns) or what a script parses (--json).

Real CLI processes, a real Dagster run, real Postgres, the packaged model; nothing mocked.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from rich.console import Console

from docforge.cli import render
from docforge.cli.options import SEARCH_MODES
from pipeline.config import adhoc_file, adhoc_home
from pipeline.query import MODES
from pipeline.query.hits import where
from tests.helpers import docforge_api, write_files
from tests.test_ingest_cli import docforge

MANUAL = """= Operator Manual
:toc:

The manual for the people who run the widget service.

== Rotating credentials

Rotate the service credentials every ninety days with `vaultctl rotate`; the old token stays valid
for one hour.

== Backups

Nightly backups go to the cold bucket.
"""
GIT_STYLE = """git-frobnicate(1)
=================

NAME
----
git-frobnicate - Frobnicate the working tree

DESCRIPTION
-----------
Frobnicates every tracked file in place, keeping the index untouched.
"""
LONG = "docs/operations/runbooks/database-credentials-rotation-procedure.md"
FILES = {
    "docs/guide.md": "# Deploy guide\n\n## Rolling back\n\nRun `deployctl rollback --to previous` to go back.\n",
    LONG: "# Database runbook\n\n## Failover\n\nPromote the standby replica with `pgctl promote`.\n",
    "manual.adoc": MANUAL,
    "Documentation/git-frobnicate.txt": GIT_STYLE,
    "README": "Widget Service\n\nThe widget service renders quarterly invoices for the billing team.\n",
    "logo.png": b"\x89PNG\r\n\x1a\n\x00\x00",
    "data.xyz": "opaque\n",
}


def cli(*args: str, cwd: Path, columns: int = 80, check: bool = True) -> subprocess.CompletedProcess:
    """`docforge` run from `cwd` in a terminal of `columns` columns."""
    here = Path.cwd()
    os.chdir(cwd)
    try:
        return docforge(*args, env={"COLUMNS": str(columns), "HF_HUB_OFFLINE": "1"}, check=check)
    finally:
        os.chdir(here)


def test_the_first_hour(tmp_path, database_url, docforge_home):
    work, other, folder = tmp_path / "work", tmp_path / "other", tmp_path / "work" / "folder"
    other.mkdir()
    write_files(folder, FILES)

    # Before anything is indexed: an error that says what to run, not "no results".
    empty = cli("search", "credentials", cwd=work, check=False)
    assert empty.returncode == 1 and "docforge ingest" in empty.stderr and "Traceback" not in empty.stderr

    # Ingest the folder: a table with the run's wall time, what was skipped and how to include it.
    run = cli("ingest", "folder", cwd=work)
    assert "Loading weights" not in run.stderr and "Warning" not in run.stderr, run.stderr
    assert re.search(r"│ folder\s+│ 5 added", run.stdout), run.stdout
    assert re.search(r"1 source\(s\) in \d+\.\d s", run.stdout)
    flat = " ".join(run.stdout.split())
    assert "data.xyz skipped" in flat and '`include: ["*.xyz"]` on the source reads it as text' in flat
    assert "source 'folder', documents" in run.stderr  # a source named after its folder reads as a name
    assert max(len(line) for line in run.stdout.splitlines()) <= 80
    assert adhoc_file(docforge_home).exists()

    for cwd in (work, other):  # the ad-hoc configuration is found from any directory
        hits = json.loads(cli("search", "how often are the service credentials rotated", "--json", cwd=cwd).stdout)
        assert hits[0]["doc_key"] == "folder:manual.adoc"
        assert hits[0]["title"] == "Operator Manual" and "Rotating credentials" in hits[0]["section"]
        readme = json.loads(cli("search", "quarterly invoices", "--json", cwd=cwd).stdout)
        assert readme[0]["doc_key"] == "folder:README" and readme[0]["title"] == "Widget Service"
    man = json.loads(cli("search", "keeping the index untouched", "--json", cwd=other).stdout)[0]
    assert man["doc_key"] == "folder:Documentation/git-frobnicate.txt" and "DESCRIPTION" in man["section"]

    # At 80 columns the citation is on its own line, in full; the excerpt holds the matched words.
    for columns in (80, 120):
        out = cli("search", "promote the standby replica", "-n", "2", cwd=other, columns=columns).stdout
        lines = out.splitlines()
        assert max(len(line) for line in lines) <= columns
        assert lines[0] == "Results for 'promote the standby replica'"
        head = lines[1]
        assert re.match(r"\s*1 \d\.\d{3} Database runbook › Failover$", head), out
        assert lines[2].strip() == LONG, out
        assert "Promote the standby replica" in lines[3]

    # ask: the answer, then each citation as a block with its file in full.
    ask = cli("ask", "How often are the service credentials rotated?", cwd=other)
    assert "Loading weights" not in ask.stderr
    cites = ask.stdout[ask.stdout.index("Citations") :].splitlines()
    assert any(line.strip() == "manual.adoc" for line in cites), ask.stdout
    assert any("Operator Manual › Rotating credentials" in line for line in cites), ask.stdout
    # a question the folder cannot answer: not found, why, and what to do next, at 80 columns
    none = cli("ask", "How can I reset my Jira password?", cwd=other, columns=80).stdout
    lines = none.splitlines()
    assert lines[0] == "Not found in the indexed documentation." and max(map(len, lines)) <= 80, none
    assert lines[1] == "Why: the index does not know reset, Jira, password." and "docforge sources" in lines[2], none

    # status: human times, the store's model, no "None"; -c before the subcommand works too.
    config = str(adhoc_file(docforge_home))
    for args in (("status",), ("-c", config, "status"), ("status", "-c", config)):
        status = cli(*args, cwd=other).stdout
        assert "None" not in status and re.search(r"folder\s+│ 5\s+│", status), status
        assert re.search(r"just now|\d+ min ago", status), status

    # sources: a table with a header.
    sources = cli("sources", cwd=other).stdout
    header = next(line for line in sources.splitlines() if "name" in line)
    assert [w for w in re.split(r"[\s┃│]+", header) if w] == [
        "name",
        "type",
        "location",
        "documents",
        "chunks",
        "last",
        "ingest",
    ]
    assert re.search(r"│ folder\s+│ directory │", sources), sources

    # Ingest again, from elsewhere: nothing changed, nothing done, the four checks still run.
    again = cli("ingest", cwd=other)
    assert re.search(r"│ folder\s+│ 5 unchanged", again.stdout) and "4/4 passed" in again.stdout, again.stdout
    assert "embedded" not in again.stdout and "documents 0/" not in again.stderr  # no stage ran
    (folder / "README").write_text("Widget Service\n\nThe widget service now renders yearly invoices too.\n")
    edited = cli("ingest", "folder", cwd=work)
    assert re.search(r"│ folder\s+│ 1 updated", edited.stdout) and "4/4 passed" in edited.stdout, edited.stdout
    assert json.loads(cli("search", "yearly invoices", "--json", cwd=other).stdout)[0]["doc_key"] == "folder:README"

    # The page: served from the other directory, it lists the folder with its type.
    serve_and_read_the_page(other, tmp_path)


def serve_and_read_the_page(cwd: Path, tmp_path: Path) -> None:
    env = {**os.environ, "DOCFORGE_API_TOKENS": "first-hour", "HF_HUB_OFFLINE": "1"}
    exe = str(Path(sys.executable).with_name("docforge"))
    log = tmp_path / "serve.log"
    with docforge_api([], env, log, cwd) as base:
        port = int(base.rsplit(":", 1)[1])
        assert f"Open {base}/" in log.read_text(errors="replace")
        assert httpx.get(f"{base}/favicon.ico").status_code == 200
        rows = httpx.get(f"{base}/sources", headers={"Authorization": "Bearer first-hour"}).json()["sources"]
        assert [(r["name"], r["type"], r["documents"]) for r in rows] == [("folder", "directory", 5)]

        # A second server on the same port: refused before it prints a URL, with the reason.
        busy = subprocess.run(
            [exe, "serve", "--api", "--port", str(port)], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
        )
        assert busy.returncode != 0 and "Open http" not in busy.stderr + busy.stdout
        assert f"cannot listen on 127.0.0.1:{port}" in busy.stderr and "--port" in busy.stderr


def test_an_empty_store_names_docforge_ingest(tmp_path, database_url, write_config):
    (tmp_path / "docs").mkdir()
    write_config([{"name": "docs", "type": "directory", "path": "docs"}])
    out = cli("search", "anything", cwd=tmp_path, check=False)
    assert out.returncode == 1 and "nothing is indexed yet" in out.stderr and "`docforge ingest`" in out.stderr
    status = cli("status", cwd=tmp_path).stdout
    assert "None" not in status and "docforge ingest" in status and "never" in status


def test_the_adhoc_home_without_docforge_home(tmp_path, monkeypatch):
    """No DOCFORGE_HOME: the nearest .docforge above holding ad-hoc sources, else the user's data directory."""
    monkeypatch.delenv("DOCFORGE_HOME")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    deep = tmp_path / "a" / "b"
    deep.mkdir(parents=True)
    monkeypatch.chdir(deep)
    assert adhoc_home() == tmp_path / "data" / "docforge"
    write_files(tmp_path / "a" / ".docforge", {"adhoc-sources.yml": "sources: []\n"})
    assert adhoc_home() == tmp_path / "a" / ".docforge"


def test_the_cli_modes_are_the_searchers():
    assert SEARCH_MODES == MODES


@pytest.mark.parametrize("width", [80, 120])
def test_a_hit_reads_at_80_and_120_columns(width):
    console = Console(width=width, record=True, force_terminal=False, color_system=None)
    path = "Documentation/technical/very-long-folder-name/api-parse-options-and-more-things.txt"
    text = ("Preamble words that do not matter here at all. " * 6) + "The --dry-run option is documented here. " * 2
    head = render.heading(where("git-parse(1)", "git-parse(1) > OPTIONS"))
    body = render.excerpt(text, render.terms("dry-run documented"))
    cite = render.citation(f"git:{path}", "git", "file:///x/" + path, None)
    console.print(render.block(" 1", "0.412", head, cite, body))
    lines = [line.rstrip() for line in console.export_text().splitlines()]
    assert lines[0] == " 1 0.412 git-parse(1) › OPTIONS"
    assert "".join(line.strip() for line in lines[1:3]).startswith(path)  # in full: folded only when wider
    if width == 120:
        assert lines[1] == " " * 9 + path  # under the title, on a line of its own
    assert all(line.startswith(" " * 9) for line in lines[1:] if line)  # a hanging indent, however it wraps
    assert "--dry-run option is documented" in " ".join(line.strip() for line in lines)
    assert all(len(line) <= width for line in lines)


def test_excerpt_marks_whole_words_around_the_match():
    text = "Intro. " * 80 + "You do rotate the documented keys."
    out = render.excerpt(text, render.terms("do documented"))
    assert out.plain.startswith("… ") and "rotate the documented keys" in out.plain
    marked = {out.plain[s.start : s.end] for s in out.spans if "bold" in str(s.style)}
    assert marked == {"documented"}  # "do" is a stop word; never a part of "documented"
    out = render.excerpt("do you document? do.", ["do"])
    assert {out.plain[s.start : s.end] for s in out.spans} == {"do"} and len(out.spans) == 2


def test_citations_name_a_file_by_its_path_and_a_page_by_its_url():
    assert render.citation("wiki:123", "wiki", "https://x.atlassian.net/wiki/pages/123", None).plain == (
        "https://x.atlassian.net/wiki/pages/123"
    )
    assert render.citation("g:docs/a.md", "g", "https://github.com/o/r/blob/abc/docs/a.md", None).plain == "docs/a.md"
    assert render.citation("d:guide.pdf", "d", "file:///tmp/d/guide.pdf", 3).plain == "guide.pdf, page 3"

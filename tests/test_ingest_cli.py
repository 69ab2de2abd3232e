"""End to end through the CLI and Dagster: a real repo, real model, real Postgres."""

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest
from rich.console import Console

from docforge.cli.ingest import print_report
from pipeline.store.db import database_url
from tests.helpers import git

CHECKS = {"chunks_have_embeddings", "no_orphan_chunks", "ledger_matches_index", "chunks_fit_model_window"}

DOCS = {
    "README.md": "# Acme handbook\n\nWhere the team writes down how things work.\n",
    "docs/leave.md": "# Time off\n\n## Vacation\n\nEvery employee receives twenty-five days of paid annual "
    "leave. Request days off in the HR portal at least two weeks ahead.\n",
    "docs/deploy.md": "# Deploying\n\n## Rollback\n\nIf a release misbehaves, run `kubectl rollout undo "
    "deployment/api` to restore the previous version.\n",
    "docs/db.md": "# Database\n\n## Backups\n\nPostgres is snapshotted every night at 02:00 UTC and "
    "snapshots are kept for thirty days.\n",
}


def docforge(*args, env=None, check=True):
    exe = Path(sys.executable).with_name("docforge")
    res = subprocess.run(
        [str(exe), *args], capture_output=True, text=True, env={**os.environ, **(env or {})}, timeout=600
    )
    if check and res.returncode != 0:
        raise AssertionError(f"docforge {args} exited {res.returncode}:\n{res.stdout}\n{res.stderr}")
    return res


@pytest.fixture
def handbook(make_repo, write_config):
    repo = make_repo({**DOCS, "docs/logo.md": b"\x89PNG\r\n\x00\x00binary", "docs/latin1.md": b"caf\xe9\n"})
    return write_config([{"name": "handbook", "type": "git", "repo": str(repo), "tags": ["hb"]}]), repo


def test_ingest_search_status(handbook, database_url):
    config, repo = handbook
    first = docforge("ingest", "--config", str(config), "--json", check=False)
    assert first.returncode == 1, "bad files make it a partial failure"
    report = json.loads(first.stdout)["sources"]["handbook"]
    assert report["files_added"] == 4 and report["files_failed"] == 2
    assert {f["key"] for f in report["failures"]} == {"handbook:docs/logo.md", "handbook:docs/latin1.md"}
    assert report["chunks_embedded"] == report["chunks_indexed"] > 0
    assert {c["name"] for c in report["checks"]} == CHECKS, "the CLI runs the asset checks too"
    assert all(c["passed"] for c in report["checks"])

    hits = json.loads(
        docforge("search", "how many holidays do I get per year", "--config", str(config), "--json").stdout
    )
    assert hits[0]["doc_key"] == "handbook:docs/leave.md"
    assert set(hits[0]) >= {"doc_key", "source", "url", "title", "section", "text", "score"}
    assert hits[0]["url"].endswith("docs/leave.md") and hits[0]["title"] == "Time off"
    for mode in ("dense", "keyword"):
        hits = json.loads(
            docforge("search", "undo a broken deployment", "--mode", mode, "--config", str(config), "--json").stdout
        )
        assert hits[0]["doc_key"] == "handbook:docs/deploy.md", mode

    status = json.loads(docforge("status", "--config", str(config), "--json").stdout)
    assert status["dimension"] == 384 and status["model"].endswith("all-MiniLM-L6-v2")
    assert status["chunks"] == report["chunks_indexed"] and status["documents"] == 4

    again = docforge("ingest", "--config", str(config), env={"COLUMNS": "80"}, check=False)
    assert again.returncode == 1, "the two bad files fail again"
    table = again.stdout
    assert max(len(line) for line in table.splitlines()) <= 80
    for word in ("source", "files", "chunks", "checks", "seconds", "handbook", "4 unchanged", "2 failed", "4/4 passed"):
        assert word in table, word
    assert "embedded" not in table, "nothing re-embedded on an unchanged run"
    assert "! handbook:docs/logo.md" in table and "! handbook:docs/latin1.md" in table


def test_summary_fits_80_columns():
    """Every header word whole at 80 columns, long names wrapped not cut, and what failed listed below."""
    stats = {
        "files_added": 1200,
        "files_updated": 35,
        "files_unchanged": 98765,
        "files_access_updated": 43,
        "files_deleted": 4,
        "files_failed": 2,
        "chunks_indexed": 123456,
        "chunks_embedded": 120000,
        "chunks_reused": 3456,
        "chunks_deleted": 789,
        "seconds": {"documents": 12.5, "chunks": 30.25, "embeddings": 600.0},
        "wall_seconds": 642.8,  # the table shows the run's wall time, not the sum of overlapping stages
    }
    checks = [
        {"name": n, "passed": n != "no_orphan_chunks", "severity": "ERROR", "description": "3 orphan chunks"}
        for n in sorted(CHECKS)
    ]
    report = {
        "confluence-engineering-space": {
            **stats,
            "checks": checks,
            "failures": [{"key": "confluence-engineering-space:123", "stage": "chunks", "error": "nested too deep"}],
        },
        "rust-rfcs": {**stats, "checks": checks[:1], "failures": []},
        "gone": {"error": "repo path /nowhere does not exist", "checks": [], "wall_seconds": 0.4},
    }
    console = Console(width=80, record=True)
    print_report(console, report)
    text = console.export_text()
    assert max(len(line) for line in text.splitlines()) <= 80
    header = next(line for line in text.splitlines() if "source" in line)
    for word in ("source", "files", "chunks", "checks", "seconds"):
        assert f" {word} " in header, header
    for cell in (
        "98765 unchanged",
        "43 access updated",
        "120000 embedded",
        "3456 reused",
        "3/4 passed",
        "1/1 passed",
        "not run",
        "642.8",
    ):
        assert cell in text, cell
    first_column = "".join(line.split("│")[1].strip() for line in text.splitlines() if line.startswith("│"))
    assert "confluence-engineering-space" in first_column and "…" not in text
    flat = " ".join(text.split())  # the notes below the table wrap at 80 columns
    for note in (
        "! confluence-engineering-space:123 (chunks): nested too deep",
        "✗ gone: repo path /nowhere does not exist",
        "✗ check no_orphan_chunks (ERROR) on confluence-engineering-space: 3 orphan chunks",
    ):
        assert note in flat, note


def test_a_failing_check_fails_the_ingest(make_repo, write_config, database_url):
    repo = make_repo({"README.md": "# Solo\n\nOnly file.\n", "docs/b.md": "# B\n\nAnother file.\n"})
    config = write_config([{"name": "solo", "type": "git", "repo": str(repo)}])
    docforge("ingest", "-c", str(config))
    with psycopg.connect(database_url) as conn:  # a chunk lost behind the ledger's back: the index is now wrong
        conn.execute("DELETE FROM chunks WHERE id = (SELECT min(id) FROM chunks)")
    res = docforge("ingest", "-c", str(config), "--json", check=False)
    assert res.returncode == 1
    out = json.loads(res.stdout)
    assert out["failed"] == ["solo"] and out["sources"]["solo"]["files_unchanged"] == 2
    checks = {c["name"]: c for c in out["sources"]["solo"]["checks"]}
    assert set(checks) == CHECKS
    bad = checks.pop("ledger_matches_index")  # the ledger still counts the deleted chunk
    assert not bad["passed"] and bad["severity"] == "ERROR"
    assert bad["description"].startswith("1 documents whose ledger row disagrees") and "'solo'" in bad["description"]
    assert all(c["passed"] for c in checks.values())


def test_brackets_in_paths_and_text_print_as_typed(make_repo, write_config, database_url):
    """Paths, queries and excerpts are text, never rich markup: `[/x]` once crashed the report."""
    page = "# Slices\n\nTake x[a..b] to slice; see [the runbook](https://example.test/runbook) for more.\n"
    repo = make_repo({"docs/[/x].md": page, "docs/[/bad].md": b"\x89PNG\r\n\x00\x00binary"})
    config = write_config([{"name": "odd", "type": "git", "repo": str(repo)}])
    res = docforge("ingest", "-c", str(config), env={"COLUMNS": "120"}, check=False)
    assert res.returncode == 1 and "Traceback" not in res.stderr and "MarkupError" not in res.stderr
    assert "! odd:docs/[/bad].md (decode): binary file" in res.stdout and "1 added" in res.stdout
    res = docforge("search", "slice x[a..b]", "-c", str(config), env={"COLUMNS": "250"})
    assert "Results for 'slice x[a..b]'" in res.stdout
    assert "Take x[a..b] to slice; see [the runbook](https://example.test/runbook) for more." in res.stdout
    assert "\n         docs/[/x].md\n" in res.stdout, res.stdout  # the citation: the path as typed, on its own line


def test_no_stored_chunk_exceeds_the_window(make_repo, write_config, database_url):
    long = "# Spec\n\n" + "\n\n".join(f"## Part {i}\n\n" + ("word " * 700) for i in range(3))
    repo = make_repo({"docs/spec.md": long, "README.md": "x" * 5000})
    config = write_config([{"name": "spec", "type": "git", "repo": str(repo)}])
    docforge("ingest", "-c", str(config))
    with psycopg.connect(database_url) as conn:
        counts = [r[0] for r in conn.execute("SELECT token_count FROM chunks")]
    assert len(counts) > 6 and max(counts) <= 256


def test_missing_repo_is_named_and_others_still_ingest(make_repo, write_config, database_url, tmp_path):
    good = make_repo({"README.md": "# Good\n\nfine\n"})
    config = write_config(
        [
            {"name": "gone", "type": "git", "repo": str(tmp_path / "missing")},
            {"name": "good", "type": "git", "repo": str(good)},
        ]
    )
    res = docforge("ingest", "-c", str(config), "--json", check=False)
    assert res.returncode == 1
    out = json.loads(res.stdout)
    assert "repo path" in out["sources"]["gone"]["error"] and "missing" in out["sources"]["gone"]["error"]
    assert out["sources"]["good"]["files_added"] == 1 and out["failed"] == ["gone"]


def test_bad_config_is_a_clean_error(write_config):
    config = write_config([{"name": "x", "type": "git", "repo": ".", "brnch": "main"}])
    res = docforge("ingest", "-c", str(config), check=False)
    assert res.returncode == 1
    assert "source 'x' (sources[0]), key 'brnch': unknown key" in res.stderr
    assert "Traceback" not in res.stderr


def test_embedded_store_under_docforge_home(make_repo, write_config, docforge_home):
    repo = make_repo({"README.md": "# Solo\n\nOnly file.\n"})
    config = write_config([{"name": "solo", "type": "git", "repo": str(repo)}])
    try:
        docforge("ingest", "-c", str(config))
        assert (docforge_home / "pg" / "PG_VERSION").exists()
        status = json.loads(docforge("status", "-c", str(config), "--json").stdout)
        assert status["chunks"] == 1
        # A new embedded server gets a search-sized buffer cache (Postgres ships 128 MB).
        assert "shared_buffers" in (docforge_home / "pg" / "postgresql.auto.conf").read_text()
        with psycopg.connect(database_url(docforge_home)) as conn:
            kb = conn.execute("SELECT setting::bigint * 8 FROM pg_settings WHERE name = 'shared_buffers'").fetchone()[0]
        assert kb > 128 * 1024
    finally:
        docforge("db", "stop", "-c", str(config), check=False)


def test_another_configured_model_follows_the_store(make_repo, write_config, database_url, tmp_path):
    """The store's live generation decides the model (docs/generations.md): configuring another one
    neither mixes vectors nor stops ingest; status names both and how to switch (`docforge reindex`)."""
    repo = make_repo({"README.md": "# A\n\ntext\n"})
    config = write_config([{"name": "a", "type": "git", "repo": str(repo)}])
    docforge("ingest", "-c", str(config))
    other = tmp_path / "other-model"
    import shutil

    from pipeline.embed import locate

    shutil.copytree(locate("all-MiniLM-L6-v2")[1], other)
    (repo / "README.md").write_text("# A\n\nnew text\n")
    git(repo, "commit", "-qam", "edit")
    res = docforge("ingest", "-c", str(config), "--json", env={"DOCFORGE_EMBEDDING__MODEL": str(other)})
    assert json.loads(res.stdout)["sources"]["a"]["files_updated"] == 1
    status = json.loads(
        docforge("status", "-c", str(config), "--json", env={"DOCFORGE_EMBEDDING__MODEL": str(other)}).stdout
    )
    assert (status["model"], status["configured_model"]) == ("sentence-transformers/all-MiniLM-L6-v2", "other-model")


def test_progress_bars_print_source_names_as_typed():
    """The bars shown on a terminal take the source name as text, not rich markup."""
    from docforge.cli.progress import showing
    from pipeline import progress

    class Tty(io.StringIO):
        def isatty(self):
            return True

    out = Tty()
    with showing(out):
        progress.begin_source("odd[/x]")
        progress.report("chunks", 1, 1)
    assert "odd[/x]: chunks" in out.getvalue()

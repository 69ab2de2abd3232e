"""End to end through the CLI and Dagster: a real repo, real model, real Postgres."""

import json
import os
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

from pipeline.store.db import database_url
from tests.conftest import write_files

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
    res = subprocess.run([str(exe), *args], capture_output=True, text=True, env={**os.environ, **(env or {})},
                         timeout=600)
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

    hits = json.loads(docforge("search", "how many holidays do I get per year", "--config", str(config),
                               "--json").stdout)
    assert hits[0]["source"] == "handbook:docs/leave.md"
    assert set(hits[0]) >= {"source", "url", "title", "section", "text", "score"}
    assert hits[0]["url"].endswith("docs/leave.md") and hits[0]["title"] == "Time off"
    for mode in ("dense", "keyword"):
        hits = json.loads(docforge("search", "undo a broken deployment", "--mode", mode, "--config", str(config),
                                   "--json").stdout)
        assert hits[0]["source"] == "handbook:docs/deploy.md", mode

    status = json.loads(docforge("status", "--config", str(config), "--json").stdout)
    assert status["dimension"] == 384 and status["model"].endswith("all-MiniLM-L6-v2")
    assert status["chunks"] == report["chunks_indexed"] and status["documents"] == 4

    again = json.loads(docforge("ingest", "--config", str(config), "--json", check=False).stdout)
    assert again["sources"]["handbook"]["chunks_embedded"] == 0
    assert again["sources"]["handbook"]["files_unchanged"] == 4


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
    config = write_config([{"name": "gone", "type": "git", "repo": str(tmp_path / "missing")},
                           {"name": "good", "type": "git", "repo": str(good)}])
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


def test_model_mismatch_is_refused(make_repo, write_config, database_url, tmp_path):
    repo = make_repo({"README.md": "# A\n\ntext\n"})
    config = write_config([{"name": "a", "type": "git", "repo": str(repo)}])
    docforge("ingest", "-c", str(config))
    other = tmp_path / "other-model"
    import shutil

    from pipeline.embed import locate

    shutil.copytree(locate("all-MiniLM-L6-v2")[1], other)
    res = docforge("ingest", "-c", str(config), "--json", env={"DOCFORGE_EMBEDDING__MODEL": str(other)},
                   check=False)
    assert res.returncode == 1
    err = json.loads(res.stdout)["sources"]["a"]["error"]
    assert "sentence-transformers/all-MiniLM-L6-v2" in err and "other-model" in err

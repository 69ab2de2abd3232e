"""What a new user meets in the first hour: the README's commands work after `make demo`, which says what it
leaves running; a first ingest in progress is said as such by search and status."""

from __future__ import annotations

import re
from pathlib import Path

import psycopg
from click.testing import CliRunner

from docforge.cli import main
from pipeline.store.db import lock_id

ROOT = Path(__file__).resolve().parents[1]


def test_make_demo_says_what_it_leaves_running_and_how_to_use_the_readme():
    demo = re.search(r"^demo:.*?(?=^\S)", (ROOT / "Makefile").read_text(), re.S | re.M)
    assert demo is not None
    lines = demo.group(0)
    assert "embedded Postgres is running" in lines and "docforge db stop" in lines
    assert "source $(VENV)/bin/activate" in lines
    readme = (ROOT / "README.md").read_text()
    bare = readme.index("docforge ingest ~/notes")  # the first bare `docforge` the README runs
    assert "source .venv/bin/activate" in readme[:bare]


def test_search_and_status_during_a_first_ingest_say_it_is_in_progress(tmp_path, write_config, database_url):
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "a.md").write_text("# A\n\nText.\n")
    cfg = write_config([{"name": "notes", "type": "directory", "path": str(tmp_path / "notes")}])
    runner = CliRunner()
    idle = runner.invoke(main, ["search", "text", "--config", str(cfg)])
    assert idle.exit_code == 1 and "nothing is indexed yet" in idle.output
    with psycopg.connect(database_url, autocommit=True) as held:  # the lock an ingest run holds
        held.execute("SELECT pg_advisory_lock(%s)", (lock_id("run:notes"),))
        busy = runner.invoke(main, ["search", "text", "--config", str(cfg)], env={"COLUMNS": "80"})
        assert busy.exit_code == 1
        assert "in progress" in busy.output and "nothing is indexed yet" not in busy.output
        assert all(len(line) <= 80 for line in busy.output.splitlines())
        status = runner.invoke(main, ["status", "--config", str(cfg)], env={"COLUMNS": "80"})
        assert status.exit_code == 0 and "ingesting now" in status.output and "in progress" in status.output
        as_json = runner.invoke(main, ["status", "--json", "--config", str(cfg)])
        assert '"ingesting": [\n    "notes"\n  ]' in as_json.output

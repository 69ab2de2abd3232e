"""Migrations: applied by ingest and `docforge db migrate`, never by a reader; a store that recorded
them under their old numbers keeps working, nothing re-applied."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest
from click.testing import CliRunner

from docforge.cli import main
from pipeline.answers import Answerer
from pipeline.config import load_settings
from pipeline.errors import OutdatedStore
from pipeline.ingest import IngestContext, ingest_source
from pipeline.query import Searcher
from pipeline.store.schema import RENAMED, ensure_schema, is_current, migrations, pending
from tests.helpers import write_files


def test_a_store_with_the_old_migration_names_keeps_its_history(database_url):
    with psycopg.connect(database_url, autocommit=True) as conn:
        ensure_schema(conn, "test-model", 8)
        conn.execute(
            "INSERT INTO documents (key, source, type, uri, url, title, content_hash) "
            "VALUES ('kb:a.md', 'kb', 'git', 'a.md', 'u', 'A', 'h')"
        )
        for old, new in RENAMED.items():  # as a store migrated before the renumbering recorded them
            conn.execute("UPDATE schema_migrations SET version = %s WHERE version = %s", (old, new))
        before = dict(conn.execute("SELECT version, applied_at FROM schema_migrations").fetchall())
        assert set(RENAMED) <= before.keys()
        assert is_current(conn) and pending(conn) == []  # a reader takes the old names as applied

        ensure_schema(conn, "test-model", 8)

        after = dict(conn.execute("SELECT version, applied_at FROM schema_migrations").fetchall())
        assert sorted(after) == [version for version, _ in migrations()]
        assert {RENAMED.get(v, v): at for v, at in before.items()} == after  # renamed, none applied again
        assert conn.execute("SELECT key FROM documents").fetchall() == [("kb:a.md",)]


def _one_migration_behind(url: str, embedder) -> str:
    """A built store whose last migration is not applied yet (as an older docforge left it)."""
    last = migrations()[-1][0]
    with psycopg.connect(url, autocommit=True) as conn:
        ensure_schema(conn, embedder.model_id, embedder.dimension)
        conn.execute("DELETE FROM schema_migrations WHERE version = %s", (last,))
    return last


def test_readers_refuse_an_older_store_until_db_migrate(database_url, embedder, write_config, tmp_path):
    """Search, ask and the CLI never migrate: they say to run `docforge db migrate`, which does."""
    last = _one_migration_behind(database_url, embedder)
    config = write_config([{"name": "kb", "type": "directory", "path": str(tmp_path)}])
    settings = load_settings(config)
    with Searcher(settings, url=database_url, embedder=embedder, reranker=None) as s:
        with pytest.raises(OutdatedStore, match=r"older than this docforge .*run `docforge db migrate`"):
            s.search("rotate the vault secret")
        with Answerer(settings, searcher=s, llm=None) as a, pytest.raises(OutdatedStore, match="db migrate"):
            a.ask("how often is the vault secret rotated?")
    with psycopg.connect(database_url) as conn:
        assert pending(conn) == [last]  # none of them applied it

    cli = CliRunner()
    refused = cli.invoke(main, ["search", "vault", "--config", str(config)])
    assert refused.exit_code == 1 and "run `docforge db migrate`" in refused.output
    done = cli.invoke(main, ["db", "migrate", "--config", str(config)])
    assert done.exit_code == 0 and done.output == f"applied 1 migration:\n  {last}\n"
    assert cli.invoke(main, ["db", "migrate", "--config", str(config)]).output == "the store's schema is up to date\n"
    with Searcher(settings, url=database_url, embedder=embedder, reranker=None) as s:
        assert s.search("rotate the vault secret") == []  # an index without chunks: nothing, and no error


def test_ask_on_an_older_store_exits_with_the_message_not_an_abort(database_url, embedder, write_config, tmp_path):
    """`docforge ask` loads the model in the background while it opens the store: refused at once, it
    must still exit 1 with the message (a process that exits mid-load aborts: "terminate called")."""
    _one_migration_behind(database_url, embedder)
    config = write_config([{"name": "kb", "type": "directory", "path": str(tmp_path)}])
    docforge = Path(sys.executable).parent / "docforge"
    env = {**os.environ, "DATABASE_URL": database_url}
    res = subprocess.run(
        [str(docforge), "ask", "how is the vault secret rotated?", "--config", str(config)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 1, res.stderr[-2000:]
    assert "(1 migration to apply): run `docforge db migrate`" in res.stderr
    assert "terminate called" not in res.stderr and "Traceback" not in res.stderr


def test_ingest_migrates_an_older_store(database_url, embedder, write_config, tmp_path):
    _one_migration_behind(database_url, embedder)
    write_files(tmp_path / "docs", {"vault.md": "# Vault\n\nRotate the vault secret every month.\n"})
    config = write_config([{"name": "kb", "type": "directory", "path": str(tmp_path / "docs")}])
    stats = ingest_source(IngestContext(load_settings(config), url=database_url, embedder=embedder), "kb")
    assert stats.files_added == 1
    with psycopg.connect(database_url) as conn:
        assert is_current(conn)


def test_db_migrate_on_an_empty_store_says_ingest_builds_it(database_url, write_config, tmp_path):
    config = write_config([{"name": "kb", "type": "directory", "path": str(tmp_path)}])
    out = CliRunner().invoke(main, ["db", "migrate", "--config", str(config)]).output
    assert out == "the store is empty: nothing to migrate (the first `docforge ingest` builds it)\n"

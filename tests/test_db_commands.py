"""`docforge db`: `reset --yes` leaves a database as a new one (no table, view, function or type of
docforge's stays: pipeline/store/schema.py drop_all), whichever migrations had run, and an ingest after it
works; `stop` needs no sources.yml."""

from __future__ import annotations

import psycopg
import pytest
from click.testing import CliRunner

from docforge.cli import main
from pipeline.config import load_settings
from pipeline.ingest import IngestContext, ingest_source
from pipeline.query import Searcher
from pipeline.store import generations
from pipeline.store.schema import _META, _MIGRATIONS, drop_all, ensure_schema, migrations
from tests.test_crash import new_db

# Every object of the current schema, but the vector extension's (which a reset keeps).
CATALOG = """
SELECT 'relation', c.relname, c.relkind::text FROM pg_class c
 WHERE c.relnamespace = current_schema()::regnamespace
   AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.objid = c.oid AND d.deptype = 'e')
UNION ALL
SELECT 'routine', p.oid::regprocedure::text, p.prokind::text FROM pg_proc p
 WHERE p.pronamespace = current_schema()::regnamespace
   AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.objid = p.oid AND d.deptype = 'e')
UNION ALL
SELECT 'type', t.typname, t.typtype::text FROM pg_type t
 WHERE t.typnamespace = current_schema()::regnamespace
   AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.objid = t.oid AND d.deptype = 'e')
ORDER BY 1, 2
"""


def catalog(conn) -> list[tuple]:
    return conn.execute(CATALOG).fetchall()


def test_reset_after_each_migration_leaves_a_new_database(pg_server):
    """Migrations 1..k applied, for every k: reset, and the catalog is a new database's; the full schema
    then builds on it."""
    steps = migrations()
    url = new_db(pg_server)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        pristine = catalog(conn)
        for k in range(1, len(steps) + 1):
            with conn.transaction():  # what ensure_schema does, stopped after migration k
                conn.execute(_META)
                conn.execute(_MIGRATIONS)
                for version, sql in steps[:k]:
                    conn.execute(sql.replace("{dim}", "8"))
                    conn.execute("INSERT INTO schema_migrations (version) VALUES (%s)", (version,))
            assert catalog(conn) != pristine
            drop_all(conn)
            assert catalog(conn) == pristine, f"left behind after {steps[k - 1][0]}"
        ensure_schema(conn, "some-model", 8)
        assert generations.live(conn) is not None
        drop_all(conn)
        assert catalog(conn) == pristine


@pytest.fixture
def notes_config(tmp_path, write_config):
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "rotation.md").write_text("# Credentials\n\nRotate the signing keys every ninety days.\n")
    (notes / "backups.md").write_text("# Backups\n\nSnapshots are kept for thirty days off site.\n")
    return write_config([{"name": "notes", "type": "directory", "path": str(notes)}])


def test_db_reset_then_ingest_and_search_work(notes_config, database_url, embedder):
    settings = load_settings(notes_config)
    first = ingest_source(IngestContext(settings, url=database_url, embedder=embedder), "notes")
    res = CliRunner().invoke(main, ["db", "reset", "--yes", "-c", str(notes_config)])
    assert res.exit_code == 0, res.output
    with psycopg.connect(database_url) as conn:
        assert not conn.execute(
            "SELECT proname FROM pg_proc WHERE proname LIKE 'docforge\\_%' "
            "AND pronamespace = current_schema()::regnamespace"
        ).fetchall()
    again = ingest_source(IngestContext(settings, url=database_url, embedder=embedder), "notes")
    assert again.files_added == first.files_added == 2 and again.chunks_embedded == first.chunks_embedded
    with Searcher(settings, url=database_url, embedder=embedder, reranker=None) as s:
        hits = s.search("how often are signing keys rotated", mode="keyword")
    assert hits and hits[0].doc_key == "notes:rotation.md"


def test_db_stop_needs_no_sources_yml(tmp_path, monkeypatch, docforge_home):
    from pipeline.config import env_settings
    from pipeline.store.db import store_url

    store_url(env_settings())  # starts this DOCFORGE_HOME's embedded server
    assert (docforge_home / "pg" / "postmaster.pid").exists()
    monkeypatch.chdir(tmp_path)  # no sources.yml here, nothing ingested
    res = CliRunner().invoke(main, ["db", "stop"])
    assert res.exit_code == 0, res.output
    assert "stopped the embedded server" in res.output
    assert not (docforge_home / "pg" / "postmaster.pid").exists()

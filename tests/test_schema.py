"""Migrations: a store that recorded them under their old numbers keeps working, nothing re-applied."""

from __future__ import annotations

import psycopg

from pipeline.store.schema import RENAMED, ensure_schema, is_current, migrations, pending


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

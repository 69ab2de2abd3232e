"""Exact incremental ingest over a history the test writes (issue: incremental).

Steps: 1→2 adds one file (one section the same text as another file's); 2→3 edits two; 3→4 adds one;
4→5 renames one with a one-line edit. Every step must embed only what is new.
"""

import uuid

import psycopg

from pipeline.config import load_settings
from pipeline.ingest import IngestContext, ingest_source
from pipeline.query import Searcher
from pipeline.store.db import connect
from pipeline.store.schema import migrate, migrations
from tests.helpers import git, write_files
from tests.test_query import _df_mismatches, _posting_mismatches

TOPICS = ("storage", "network", "backup", "logging", "scheduler", "billing", "search", "upgrade", "metrics")
SHARED = "## Licence\n\nThis handbook may be copied and changed under the terms every page of it states.\n"


def page(topic: str, sections: int = 4, edited: int | None = None) -> str:
    """A handbook page on `topic`: a title and `sections` sections of a paragraph each, every sentence
    its own; `edited`: that section's last sentence says something else."""
    out = [f"# The {topic} guide\n"]
    for i in range(sections):
        last = f"Section {i} was rewritten for the {topic} team." if i == edited else f"See section {i + 1} next."
        out.append(
            f"## {topic.title()} step {i}\n\nThe {topic} service reads its step {i} settings at start. "
            f"An operator sets the {topic} step {i} value before the first run, and checks the {topic} "
            f"log for the step {i} line afterwards. {last}\n"
        )
    return "\n".join(out)


def commit(repo, message: str) -> None:
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", message)


def run(config, url, embedder, source="docs"):
    return ingest_source(IngestContext(load_settings(config), url=url, embedder=embedder), source)


def index(url):
    with psycopg.connect(url) as conn:
        return conn.execute(
            "SELECT c.id, c.doc_key, c.text, v.embedding::text FROM chunks c "
            "LEFT JOIN vectors_1 v ON v.seq = c.seq ORDER BY c.id"
        ).fetchall()  # generation 1


def chunk_counts(url, *keys):
    with psycopg.connect(url) as conn:
        return [conn.execute("SELECT count(*) FROM chunks WHERE doc_key = %s", (k,)).fetchone()[0] for k in keys]


def test_a_history_embeds_only_what_changed(make_repo, write_config, database_url, embedder):
    repo = make_repo(
        {f"guide/{t}.md": page(t) + "\n" + SHARED for t in TOPICS[:2]} | {f"guide/{t}.md": page(t) for t in TOPICS[2:6]}
    )
    # A window of one section: each section a chunk of its own, as a long page's sections would be.
    source = {"name": "docs", "type": "git", "repo": str(repo), "globs": ["guide/*.md"]}
    config = write_config([source], chunking={"max_tokens": 64})
    cold = run(config, database_url, embedder)
    assert cold.files_added == 6 and cold.chunks_embedded == cold.chunks_indexed > 6 and cold.chunks_reused == 0

    noop = run(config, database_url, embedder)
    assert (noop.files_unchanged, noop.chunks_embedded, noop.chunks_indexed, noop.chunks_deleted) == (6, 0, 0, 0)

    added = f"docs:guide/{TOPICS[0]}-2.md"  # the first page's second edition: one more section, same title
    write_files(repo, {f"guide/{TOPICS[0]}-2.md": page(TOPICS[0], sections=5, edited=4) + "\n" + SHARED})
    commit(repo, "2: one page added")
    s2 = run(config, database_url, embedder)
    (new,) = chunk_counts(database_url, added)
    assert (s2.files_added, s2.files_updated, s2.files_unchanged) == (1, 0, 6)
    # every new chunk embedded, but for a text another document already has (the first edition's): reused
    assert s2.chunks_embedded + s2.chunks_reused == s2.chunks_indexed == new and s2.chunks_deleted == 0
    with psycopg.connect(database_url) as conn:
        (shared,) = conn.execute(
            "SELECT count(*) FROM chunks c WHERE c.doc_key = %s AND EXISTS (SELECT 1 FROM chunks o "
            "WHERE o.text_hash = c.text_hash AND o.doc_key <> c.doc_key)",
            (added,),
        ).fetchone()
    assert 0 < s2.chunks_reused <= shared < new  # reused only what another document already held

    edited = [f"docs:guide/{t}.md" for t in TOPICS[2:4]]
    before, total_before = index(database_url), sum(chunk_counts(database_url, *edited))
    write_files(repo, {f"guide/{t}.md": page(t, sections=5, edited=1) for t in TOPICS[2:4]})
    commit(repo, "3: two pages edited")
    s3 = run(config, database_url, embedder)
    total = sum(chunk_counts(database_url, *edited))
    assert (s3.files_updated, s3.files_unchanged) == (2, 5)
    assert 0 < s3.chunks_embedded < total and s3.chunks_reused == total - s3.chunks_embedded
    # Rows after an edit move to new ordinals (new ids) but keep their vectors: reused, not embedded.
    assert s3.chunks_indexed - s3.chunks_deleted == total - total_before
    untouched = {r for r in before if r[1] not in edited}
    assert untouched <= set(index(database_url))

    write_files(repo, {f"guide/{TOPICS[7]}.md": page(TOPICS[7])})
    commit(repo, "4: one page added")
    s4 = run(config, database_url, embedder)
    assert s4.files_added == 1 and s4.chunks_embedded == s4.chunks_indexed

    old_key, renamed_key = f"docs:guide/{TOPICS[4]}.md", f"docs:guide/{TOPICS[4]}-guide.md"
    git(repo, "mv", f"guide/{TOPICS[4]}.md", f"guide/{TOPICS[4]}-guide.md")
    write_files(repo, {f"guide/{TOPICS[4]}-guide.md": page(TOPICS[4], edited=2)})
    commit(repo, "5: one page renamed, one line of it edited")
    s5 = run(config, database_url, embedder)
    (old,) = chunk_counts(database_url, old_key)
    (renamed,) = chunk_counts(database_url, renamed_key)
    assert (s5.files_added, s5.files_deleted, old) == (1, 1, 0)
    assert s5.chunks_embedded == 1 and s5.chunks_reused == renamed - 1
    assert s5.chunks_deleted == s5.chunks_indexed == renamed


def test_deleted_and_out_of_scope_files_leave_the_index(make_repo, write_config, database_url, embedder):
    repo = make_repo({"docs/a.md": "# A\n\nalpha text", "docs/b.md": "# B\n\nbeta text", "README.md": "# R\n\nr"})
    config = write_config([{"name": "docs", "type": "git", "repo": str(repo)}])
    run(config, database_url, embedder)
    (repo / "docs" / "a.md").unlink()
    s = run(config, database_url, embedder)
    assert s.files_deleted == 1 and s.chunks_deleted == 1
    config = write_config([{"name": "docs", "type": "git", "repo": str(repo), "globs": ["docs/**/*.md"]}])
    s = run(config, database_url, embedder)
    assert s.files_deleted == 1
    with psycopg.connect(database_url) as conn:
        assert [r[0] for r in conn.execute("SELECT doc_key FROM chunks")] == ["docs:docs/b.md"]
        assert [r[0] for r in conn.execute("SELECT doc_key FROM ledger")] == ["docs:docs/b.md"]


def test_identical_documents_are_two_documents(make_repo, write_config, database_url, embedder):
    text = "# Runbook\n\nRestart the queue worker with `systemctl restart worker`.\n"
    repo = make_repo({"docs/one.md": text, "docs/two.md": text})
    config = write_config([{"name": "docs", "type": "git", "repo": str(repo)}])
    first = run(config, database_url, embedder)
    assert first.chunks_indexed == 2 and first.chunks_embedded == 1  # same text embedded once
    (repo / "docs" / "one.md").unlink()
    run(config, database_url, embedder)
    searcher = Searcher(load_settings(config), url=database_url, embedder=embedder)
    hits = searcher.search("how to restart the worker", limit=5)
    assert [h.doc_key for h in hits] == ["docs:docs/two.md"]


def test_chunker_change_rechunks_and_reuses_vectors(make_repo, write_config, database_url, embedder):
    repo = make_repo({"docs/a.md": "# A\n\n" + "\n\n".join(f"para {i} " + "word " * 60 for i in range(8))})
    config = write_config([{"name": "docs", "type": "git", "repo": str(repo)}])
    run(config, database_url, embedder)
    config = write_config([{"name": "docs", "type": "git", "repo": str(repo)}], chunking={"max_tokens": 128})
    s = run(config, database_url, embedder)
    assert s.files_updated == 1 and s.chunks_embedded > 0 and s.chunks_deleted > 0
    assert run(config, database_url, embedder).chunks_embedded == 0


def _store_at_0003(url: str, filled_by: str, embedder) -> None:
    """A store as migrations 0001-0003 left it (table `sources`, columns `source_key` and `partition`),
    holding the rows today's code wrote into the store at `filled_by`, under their old names."""
    with psycopg.connect(url, autocommit=True) as conn, conn.transaction():
        conn.execute("CREATE TABLE schema_migrations (version text PRIMARY KEY, applied_at timestamptz DEFAULT now())")
        conn.execute("CREATE TABLE docforge_meta (key text PRIMARY KEY, value text NOT NULL)")
        for version, text in migrations()[:3]:
            conn.execute(text.replace("{dim}", str(embedder.dimension)))
            conn.execute("INSERT INTO schema_migrations (version) VALUES (%s)", (version,))
        conn.execute(
            "INSERT INTO docforge_meta VALUES ('model', %s), ('dimension', %s)",
            (embedder.model_id, str(embedder.dimension)),
        )
    copies = [  # (today's SELECT, the INSERT of 0003's names); same column order
        (
            "SELECT key, source, type, uri, url, title, tags, meta::text, content_hash, version, mtime_ns, status "
            "FROM documents",
            "INSERT INTO sources (key, partition, type, uri, url, title, tags, meta, content_hash, "
            "version, mtime_ns, status) VALUES (%s, %s, %s, %s, %s, %s, %s, %s::jsonb, %s, %s, %s, %s)",
        ),
        (
            "SELECT c.id, c.doc_key, c.ordinal, c.heading_path, c.section, c.text, c.token_count, c.text_hash, "
            "g.model, v.embedding FROM chunks c JOIN vectors_1 v ON v.seq = c.seq JOIN generations g ON g.id = 1",
            "INSERT INTO chunks (id, source_key, ordinal, heading_path, section, text, token_count, "
            "text_hash, model, embedding) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
        ),
        (
            "SELECT doc_key, source, mtime_ns, size, version, content_hash, chunker, model, chunk_count, run_id "
            "FROM ledger",
            "INSERT INTO ledger (source_key, partition, mtime_ns, size, version, content_hash, "
            "chunker, model, chunk_count, run_id) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
        ),
    ]
    with connect(filled_by) as src, connect(url) as dst, dst.transaction(), dst.cursor() as cur:
        for select, insert in copies:
            cur.executemany(insert, src.execute(select).fetchall())


def test_a_store_from_before_the_vocabulary_migration_is_upgraded(
    make_repo, write_config, database_url, pg_server, embedder
):
    """Migration 0004 (`docforge db migrate`) renames an existing store in place: it still searches
    (postings intact), the next
    ingest finds every document unchanged, and a later edit is ingested incrementally."""
    repo = make_repo(
        {
            "docs/vault.md": "# Vault\n\nRotate the vault secret every month.\n",
            "docs/deploy.md": "# Deploy\n\nReleases go out through ArgoCD.\n",
        }
    )
    config = write_config([{"name": "kb", "type": "git", "repo": str(repo)}])
    scratch = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(pg_server.get_uri(), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{scratch}"')
    run(config, pg_server.get_uri(scratch), embedder, "kb")
    _store_at_0003(database_url, pg_server.get_uri(scratch), embedder)
    with psycopg.connect(database_url, autocommit=True) as conn:
        assert migrate(conn) == [v for v, _ in migrations()[3:]]

    with Searcher(load_settings(config), url=database_url, embedder=embedder, reranker=None) as s:
        for mode in ("keyword", "dense", "hybrid"):
            assert [h.doc_key for h in s.search("vault secret rotation", limit=1, mode=mode)] == ["kb:docs/vault.md"]
        assert s.search("vault", limit=1)[0].source == "kb"
        with s.connection() as conn:
            assert _df_mismatches(conn) == [] and _posting_mismatches(conn) == []
    with psycopg.connect(database_url) as conn:
        assert conn.execute("SELECT to_regclass('sources')").fetchone()[0] is None
        old_names = conn.execute(  # columns, indexes, constraints or function bodies still naming the old words
            "SELECT table_name || '.' || column_name FROM information_schema.columns WHERE table_schema = "
            "current_schema() AND column_name IN ('source_key', 'partition') UNION ALL "
            "SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() AND indexname ~ 'partition|sources_' "
            "UNION ALL SELECT conname FROM pg_constraint WHERE connamespace = current_schema()::regnamespace "
            "AND conname ~ 'partition|source_key|sources_' UNION ALL SELECT proname FROM pg_proc "
            "WHERE pronamespace = current_schema()::regnamespace AND prosrc ~ 'partition|source_key|sources'"
        ).fetchall()
        assert old_names == []

    noop = run(config, database_url, embedder, "kb")
    assert (noop.files_unchanged, noop.files_updated, noop.chunks_embedded, noop.chunks_indexed) == (2, 0, 0, 0)
    write_files(repo, {"docs/deploy.md": "# Deploy\n\nReleases go out through Spinnaker pipelines.\n"})
    git(repo, "commit", "-qam", "edit")
    edit = run(config, database_url, embedder, "kb")
    assert (edit.files_unchanged, edit.files_updated, edit.chunks_embedded) == (1, 1, 1)
    with Searcher(load_settings(config), url=database_url, embedder=embedder, reranker=None) as s:
        assert [h.doc_key for h in s.search("spinnaker", mode="keyword")] == ["kb:docs/deploy.md"]
        assert s.search("argocd", mode="keyword") == []
        with s.connection() as conn:
            assert _df_mismatches(conn) == [] and _posting_mismatches(conn) == []

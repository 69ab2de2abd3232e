"""Exact incremental ingest on the real rust-rfcs history (issue: incremental).

Snapshots: 1→2 adds one file; 2→3 edits two; 3→4 adds one; 4→5 renames one
with a one-line edit. Every step must embed only what is new.
"""

import psycopg
import pytest

from pipeline.config import load_settings
from pipeline.ingest import IngestContext, ingest_source
from tests.conftest import RFC_GLOBS, git


def run(config, url, embedder):
    return ingest_source(IngestContext(load_settings(config), url=url, embedder=embedder), "rfcs")


def index(url):
    with psycopg.connect(url) as conn:
        return conn.execute("SELECT c.id, c.source_key, c.text, c.embedding::text FROM chunks c ORDER BY id").fetchall()


def chunk_counts(url, *keys):
    with psycopg.connect(url) as conn:
        return [conn.execute("SELECT count(*) FROM chunks WHERE source_key = %s", (k,)).fetchone()[0] for k in keys]


@pytest.fixture
def rfcs_config(rfcs_repo, write_config):
    return write_config([{"name": "rfcs", "type": "git", "repo": str(rfcs_repo), "globs": RFC_GLOBS}])


def test_snapshot_history_embeds_only_what_changed(rfcs_repo, rfcs_config, database_url, embedder):
    cold = run(rfcs_config, database_url, embedder)
    assert cold.files_added == 6 and cold.chunks_embedded == cold.chunks_indexed > 0 and cold.chunks_reused == 0

    noop = run(rfcs_config, database_url, embedder)
    assert (noop.files_unchanged, noop.chunks_embedded, noop.chunks_indexed, noop.chunks_deleted) == (6, 0, 0, 0)

    git(rfcs_repo, "checkout", "-q", "snapshot-2")
    s2 = run(rfcs_config, database_url, embedder)
    new, = chunk_counts(database_url, "rfcs:text/3875-build-std-explicit-dependencies.md")
    assert (s2.files_added, s2.files_updated, s2.files_unchanged) == (1, 0, 6)
    assert s2.chunks_embedded == s2.chunks_indexed == new and s2.chunks_deleted == 0

    edited = ["rfcs:text/3873-build-std-context.md", "rfcs:text/3874-build-std-always.md"]
    before, total_before = index(database_url), sum(chunk_counts(database_url, *edited))
    git(rfcs_repo, "checkout", "-q", "snapshot-3")
    s3 = run(rfcs_config, database_url, embedder)
    total = sum(chunk_counts(database_url, *edited))
    assert (s3.files_updated, s3.files_unchanged) == (2, 5)
    assert 0 < s3.chunks_embedded < total and s3.chunks_reused == total - s3.chunks_embedded
    # Rows after an edit move to new ordinals (new ids) but keep their vectors: reused, not embedded.
    assert s3.chunks_indexed - s3.chunks_deleted == total - total_before
    untouched = {r for r in before if r[1] not in edited}
    assert untouched <= set(index(database_url))

    git(rfcs_repo, "checkout", "-q", "snapshot-4")
    s4 = run(rfcs_config, database_url, embedder)
    assert s4.files_added == 1 and s4.chunks_embedded == s4.chunks_indexed

    git(rfcs_repo, "checkout", "-q", "snapshot-5")
    s5 = run(rfcs_config, database_url, embedder)
    old, = chunk_counts(database_url, "rfcs:text/0000-rfmf-rust-foundation-maintainer-fund.md")
    renamed, = chunk_counts(database_url, "rfcs:text/3931-rfmf-rust-foundation-maintainer-fund.md")
    assert (s5.files_added, s5.files_deleted, old) == (1, 1, 0)
    assert s5.chunks_embedded == 1 and s5.chunks_reused == renamed - 1
    assert s5.chunks_deleted == s5.chunks_indexed == renamed


def test_deleted_and_out_of_scope_files_leave_the_index(make_repo, write_config, database_url, embedder):
    repo = make_repo({"docs/a.md": "# A\n\nalpha text", "docs/b.md": "# B\n\nbeta text", "README.md": "# R\n\nr"})
    config = write_config([{"name": "rfcs", "type": "git", "repo": str(repo)}])
    run(config, database_url, embedder)
    (repo / "docs" / "a.md").unlink()
    s = run(config, database_url, embedder)
    assert s.files_deleted == 1 and s.chunks_deleted == 1
    config = write_config([{"name": "rfcs", "type": "git", "repo": str(repo), "globs": ["docs/**/*.md"]}])
    s = run(config, database_url, embedder)
    assert s.files_deleted == 1
    with psycopg.connect(database_url) as conn:
        assert [r[0] for r in conn.execute("SELECT source_key FROM chunks")] == ["rfcs:docs/b.md"]
        assert [r[0] for r in conn.execute("SELECT source_key FROM ledger")] == ["rfcs:docs/b.md"]


def test_identical_documents_are_two_sources(make_repo, write_config, database_url, embedder):
    text = "# Runbook\n\nRestart the queue worker with `systemctl restart worker`.\n"
    repo = make_repo({"docs/one.md": text, "docs/two.md": text})
    config = write_config([{"name": "rfcs", "type": "git", "repo": str(repo)}])
    first = run(config, database_url, embedder)
    assert first.chunks_indexed == 2 and first.chunks_embedded == 1  # same text embedded once
    (repo / "docs" / "one.md").unlink()
    run(config, database_url, embedder)
    from pipeline.query import Searcher

    searcher = Searcher(load_settings(config), url=database_url, embedder=embedder)
    hits = searcher.search("how to restart the worker", limit=5)
    assert [h.source for h in hits] == ["rfcs:docs/two.md"]


def test_chunker_change_rechunks_and_reuses_vectors(make_repo, write_config, database_url, embedder):
    repo = make_repo({"docs/a.md": "# A\n\n" + "\n\n".join(f"para {i} " + "word " * 60 for i in range(8))})
    config = write_config([{"name": "rfcs", "type": "git", "repo": str(repo)}])
    run(config, database_url, embedder)
    config = write_config([{"name": "rfcs", "type": "git", "repo": str(repo)}], chunking={"max_tokens": 128})
    s = run(config, database_url, embedder)
    assert s.files_updated == 1 and s.chunks_embedded > 0 and s.chunks_deleted > 0
    assert run(config, database_url, embedder).chunks_embedded == 0

"""Two runs of one source serialise; runs of different sources do not wait."""

import threading

import psycopg

from pipeline.config import load_settings
from pipeline.ingest import IngestContext, ingest_source
from pipeline.store.db import lock_id, source_lock

DOCS = {f"docs/p{i}.md": f"# Page {i}\n\n" + f"Topic {i} explained in plain words. " * 30 for i in range(6)}


def ingest(config, url, embedder, name, out, key):
    out[key] = ingest_source(IngestContext(load_settings(config), url=url, embedder=embedder), name)


def test_same_source_twice_at_once_is_safe(make_repo, write_config, database_url, embedder):
    config = write_config([{"name": "a", "type": "git", "repo": str(make_repo(DOCS))}])
    out: dict = {}
    threads = [threading.Thread(target=ingest, args=(config, database_url, embedder, "a", out, k)) for k in (1, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    assert set(out) == {1, 2}
    with psycopg.connect(database_url) as conn:
        n, distinct = conn.execute("SELECT count(*), count(DISTINCT (doc_key, ordinal)) FROM chunks").fetchone()
        staged = conn.execute("SELECT count(*) FROM staged_documents").fetchone()[0]
    assert n == distinct == out[1].chunks_indexed + out[2].chunks_indexed and staged == 0
    assert out[1].chunks_embedded + out[2].chunks_embedded == n  # nothing embedded twice
    # Stages lock the source one at a time, so both runs may see the files as new,
    # but only one commits them: the index holds each chunk once.
    assert {out[1].files_added, out[2].files_added} <= {0, 6}


def test_other_sources_do_not_wait(make_repo, write_config, database_url, embedder):
    a, b = make_repo(DOCS, name="a"), make_repo({"README.md": "# B\n\nbee"}, name="b")
    config = write_config([{"name": "a", "type": "git", "repo": str(a)}, {"name": "b", "type": "git", "repo": str(b)}])
    ingest_source(IngestContext(load_settings(config), url=database_url, embedder=embedder), "b")  # schema exists
    out: dict = {}
    with psycopg.connect(database_url, autocommit=True) as holder:
        holder.execute("SELECT pg_advisory_lock(%s)", (lock_id(source_lock("a")),))  # a run of "a" is in progress
        ta = threading.Thread(target=ingest, args=(config, database_url, embedder, "a", out, "a"))
        ta.start()
        ingest(config, database_url, embedder, "b", out, "b")  # finishes while "a" is locked
        assert "b" in out and ta.is_alive() and "a" not in out
        holder.execute("SELECT pg_advisory_unlock(%s)", (lock_id(source_lock("a")),))
    ta.join(300)
    assert out["a"].files_added == 6

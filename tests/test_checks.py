"""Asset checks and store admin on a real index: pass on good data, fail (ERROR) on broken rows."""

from __future__ import annotations

import psycopg
import pytest
from dagster import AssetCheckSeverity, build_asset_check_context, build_op_context

from assets.checks import ingest_checks
from pipeline.config import load_settings
from pipeline.errors import StoreError
from pipeline.ingest import IngestContext, ingest_source
from pipeline.store import admin
from pipeline.store.db import lock_id, source_lock
from resources import EmbedderResource, PostgresResource, SourcesResource

DOCS = {
    "README.md": "# Widget\n\nWidgets turn cranks.\n",
    "docs/setup.md": "# Setup\n\n## Install\n\nRun the installer.\n\n## Configure\n\nEdit widget.toml.\n",
}
CHECKS = {key.name: c for c in ingest_checks for key in c.check_keys}


@pytest.fixture
def indexed(make_repo, write_config, database_url, embedder):
    """Two small sources, `alpha` and `beta`, ingested for real; returns the config path."""
    cfg = write_config(
        [
            {"name": "alpha", "type": "git", "repo": str(make_repo(DOCS, "alpha"))},
            {"name": "beta", "type": "git", "repo": str(make_repo(DOCS, "beta"))},
        ]
    )
    settings = load_settings(cfg)
    for name in ("alpha", "beta"):
        ingest_source(IngestContext(settings, url=database_url, embedder=embedder), name)
    return cfg


def run_check(name: str, cfg, url: str, source: str | None = "alpha"):
    """The check as a run of `source` (its partition) executes it, or unscoped for None."""
    resources = {
        "sources": SourcesResource(config_path=str(cfg)),
        "store": PostgresResource(database_url=url),
        "embedder": EmbedderResource(),
    }
    ctx = (
        build_op_context(resources=resources, partition_key=source)
        if source
        else build_asset_check_context(resources=resources)
    )
    return CHECKS[name](ctx)


def first_chunk(url: str, source: str = "alpha") -> tuple[str, str]:
    with psycopg.connect(url) as conn:
        return conn.execute(
            "SELECT c.id, c.doc_key FROM chunks c JOIN documents d ON d.key = c.doc_key "
            "WHERE d.source = %s ORDER BY c.id LIMIT 1",
            (source,),
        ).fetchone()


def sql(url: str, *statements: str, params: tuple = ()) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        for s in statements:
            conn.execute(s, params if "%s" in s else ())


@pytest.mark.parametrize("source", ["alpha", None])
def test_all_checks_pass_on_a_fresh_index(indexed, database_url, source):
    for name in CHECKS:
        res = run_check(name, indexed, database_url, source)
        assert res.passed, (name, res.description)
        assert res.metadata["count"].value == 0


def _null_embedding(url, cid, key):  # the live generation's (1: a fresh store's) vector of the chunk is gone
    sql(url, "DELETE FROM vectors_1 v USING chunks c WHERE v.seq = c.seq AND c.id = %s", params=(cid,))


def _orphan(url, cid, key):  # replica role skips the FK cascade, as a buggy bulk load would
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SET session_replication_role = replica")
        conn.execute("DELETE FROM documents WHERE key = %s", (key,))


def _ledger_count(url, cid, key):
    sql(url, "UPDATE ledger SET chunk_count = chunk_count + 1 WHERE doc_key = %s", params=(key,))


def _oversized(url, cid, key):
    sql(url, "UPDATE chunks SET token_count = 100000 WHERE id = %s", params=(cid,))


@pytest.mark.parametrize(
    "break_rows, check, offender",
    [
        (_null_embedding, "chunks_have_embeddings", "id"),
        (_orphan, "no_orphan_chunks", "id"),
        (_orphan, "ledger_matches_index", "key"),
        (_ledger_count, "ledger_matches_index", "key"),
        (_oversized, "chunks_fit_model_window", "id"),
    ],
)
def test_check_fails_on_broken_rows(indexed, database_url, break_rows, check, offender):
    cid, key = first_chunk(database_url)
    break_rows(database_url, cid, key)
    res = run_check(check, indexed, database_url)
    assert not res.passed
    assert res.severity == AssetCheckSeverity.ERROR
    assert res.metadata["count"].value == 1
    assert res.metadata["offending_ids"].value == [cid if offender == "id" else key]
    assert res.description.startswith("1 ") and "source 'alpha'" in res.description
    # Scoped to its source: the untouched one still passes.
    assert run_check(check, indexed, database_url, "beta").passed


def test_checks_pass_on_an_empty_store(write_config, database_url, make_repo):
    cfg = write_config([{"name": "alpha", "type": "git", "repo": str(make_repo(DOCS, "alpha"))}])
    assert all(run_check(name, cfg, database_url).passed for name in CHECKS)


def counts(url: str, source: str) -> dict[str, int]:
    with psycopg.connect(url) as conn:
        q = {t: f"SELECT count(*) FROM {t} WHERE source = %s" for t in ("documents", "ledger", "failures")}
        q["chunks"] = "SELECT count(*) FROM chunks c JOIN documents d ON d.key = c.doc_key WHERE d.source = %s"
        return {t: conn.execute(s, (source,)).fetchone()[0] for t, s in q.items()}


def test_purge_source_deletes_only_that_source(indexed, database_url):
    before = counts(database_url, "beta")
    with psycopg.connect(database_url, autocommit=True) as conn:
        purged = admin.purge_source(conn, "beta")
        assert admin.stored_sources(conn) == {"alpha"}
    assert (purged.documents, purged.chunks, purged.ledger) == (before["documents"], before["chunks"], before["ledger"])
    assert purged.deleted > 0
    assert counts(database_url, "beta") == {"documents": 0, "ledger": 0, "failures": 0, "chunks": 0}
    assert counts(database_url, "alpha") == before  # same files, same counts


def test_purge_refuses_while_the_source_is_being_ingested(indexed, database_url):
    with psycopg.connect(database_url, autocommit=True) as holder, psycopg.connect(database_url) as conn:
        holder.execute("SELECT pg_advisory_lock(%s)", (lock_id(source_lock("beta")),))
        with pytest.raises(StoreError, match="'beta' is being ingested"):
            admin.purge_source(conn, "beta")
    assert counts(database_url, "beta")["documents"] == 2

"""Blocks in the store (migration 0014): written by ingest, read back on hits, and
brought to a store built before them by the next ingest without computing a vector."""

import psycopg

from pipeline.config import load_settings
from pipeline.ingest import IngestContext, ingest_source
from pipeline.query import Searcher
from pipeline.records import unpack_blocks
from pipeline.store.db import connect
from tests.conftest_confluence import confluence_double, confluence_env  # noqa: F401 (fixtures)
from tests.helpers import write_files
from tests.test_blocks import STORAGE_PAGE, assert_well_formed

RUNBOOK = """\
# Payments runbook

Restart the worker with `systemctl restart payments.service` when the queue stalls.

## Settings

| Setting | Default |
|---------|---------|
| `timeout` | 30s |
| `retries` | 3 |

```bash
payments-cli drain --all
```
"""
GUIDE = "# Guide\n\n- first step\n- second step, with `make check`\n"


def _ingest(config, url, embedder, source="docs"):
    return ingest_source(IngestContext(load_settings(config), url=url, embedder=embedder), source)


def _config(tmp_path, write_config, access=None):
    write_files(tmp_path / "docs", {"runbook.md": RUNBOOK, "guide.md": GUIDE})
    entry = {"name": "docs", "type": "directory", "path": str(tmp_path / "docs")}
    return write_config([{**entry, **({"access": access} if access else {})}])


def test_ingest_stores_blocks_and_hits_read_them(tmp_path, write_config, database_url, embedder):
    config = _config(tmp_path, write_config)
    _ingest(config, database_url, embedder)
    hits = Searcher(load_settings(config), url=database_url, embedder=embedder).search(
        "what is the default timeout setting", limit=3
    )
    top = hits[0]
    assert top.doc_key == "docs:runbook.md" and top.blocks
    assert_well_formed(top.text, top.blocks)
    kinds = [b.kind for b in top.blocks]
    assert {"paragraph", "table_row", "code"} <= set(kinds)
    row = next(b for b in top.blocks if b.kind == "table_row")
    assert row.header == ("Setting", "Default") and top.text[row.start : row.end] == "| `timeout` | 30s |"
    assert [top.text[s:e] for s, e in row.code] == ["timeout"]
    code = next(b for b in top.blocks if b.kind == "code")
    assert code.lang == "bash" and top.text[code.start : code.end] == "payments-cli drain --all"

    with connect(database_url) as conn:
        rows = conn.execute("SELECT id, text, blocks FROM chunks").fetchall()
    stored = {cid: unpack_blocks(packed) for cid, _, packed in rows}
    for cid, text, _ in rows:
        assert stored[cid]
        assert_well_formed(text, stored[cid])
    assert top.blocks == stored[top.chunk_id]


def test_a_store_from_before_blocks_gets_them_with_no_vector_computed(tmp_path, write_config, database_url, embedder):
    config = _config(tmp_path, write_config)
    first = _ingest(config, database_url, embedder)
    assert first.chunks_embedded > 0
    with psycopg.connect(database_url, autocommit=True) as conn:  # the store as it was before 0014
        chunks = conn.execute("SELECT id, text FROM chunks ORDER BY id").fetchall()
        conn.execute("ALTER TABLE chunks DROP COLUMN blocks")
        conn.execute("ALTER TABLE staged_chunks DROP COLUMN blocks")
        conn.execute("DELETE FROM schema_migrations WHERE version = '0014_chunk_blocks'")
        conn.execute("UPDATE ledger SET chunker = '3' || substr(chunker, strpos(chunker, ':'))")
    upgraded = _ingest(config, database_url, embedder)
    assert upgraded.files_updated == 2  # re-chunked under the new chunker version
    assert upgraded.chunks_embedded == 0 and upgraded.chunks_reused == len(chunks)
    with psycopg.connect(database_url) as conn:
        assert conn.execute("SELECT id, text FROM chunks ORDER BY id").fetchall() == chunks  # same rows
        rows = conn.execute("SELECT text, blocks FROM chunks").fetchall()
    assert all(blocks for _, blocks in rows)
    again = _ingest(config, database_url, embedder)
    assert (again.files_unchanged, again.chunks_embedded) == (2, 0)


def test_a_confluence_page_is_searched_with_its_blocks(confluence_double, write_config, database_url, embedder):
    confluence_double.add_page("930001", "Config", STORAGE_PAGE)
    entry = {"name": "wiki", "type": "confluence", "base_url": confluence_double.base_url, "space": "DOCS"}
    config = write_config([entry])
    assert _ingest(config, database_url, embedder, "wiki").chunks_embedded > 0
    (top,) = Searcher(load_settings(config), url=database_url, embedder=embedder).search("default timeout", limit=1)
    assert_well_formed(top.text, top.blocks)
    rows = [top.text[b.start : b.end] for b in top.blocks if b.header == ("Setting", "Default")]
    assert rows == ["Setting: `timeout` | Default: 30s", "Setting: retries"]
    code = next(b for b in top.blocks if b.kind == "code" and b.lang)
    assert (code.lang, top.text[code.start : code.end]) == ("bash", "systemctl restart app")
    assert "Set `timeout` to 30." in top.text  # <code> keeps its backticks

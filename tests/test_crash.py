"""Crash safety: SIGKILL an ingest anywhere, re-run, get exactly a clean run's index."""

import os
import signal
import subprocess
import sys
import textwrap
import uuid

import numpy as np
import psycopg
import pytest

from pipeline.config import load_settings
from pipeline.ingest import IngestContext, ingest_source

SMALL = ["text/000[1-3]*.md", "text/3872*.md"]  # 4 real RFCs, a few dozen chunks

# The victim: a real ingest whose progress callback kills the process at a chosen point.
VICTIM = textwrap.dedent("""
    import os, signal, sys
    import pipeline.ingest.embeddings as emb
    from pipeline.config import load_settings
    from pipeline.ingest import IngestContext, ingest_source
    config, url, stage, at = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    emb.BLOCK = 8  # several embedding blocks, so a kill can land between them

    def progress(s, done, total):
        if s == stage and done >= at:
            os.kill(os.getpid(), signal.SIGKILL)

    ingest_source(IngestContext(load_settings(config), url=url, progress=progress), "rfcs")
    sys.exit(3)  # never reached when the kill point exists
""")


def new_db(pg_server) -> str:
    name = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(pg_server.get_uri(), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return pg_server.get_uri(name)


def snapshot(url):
    with psycopg.connect(url) as conn:
        chunks = conn.execute(
            "SELECT c.id, c.doc_key, c.ordinal, c.text, v.embedding::text FROM chunks c "
            "LEFT JOIN vectors_1 v ON v.seq = c.seq ORDER BY c.id"
        ).fetchall()  # generation 1
        ledger = conn.execute("SELECT doc_key, content_hash, chunk_count FROM ledger ORDER BY 1").fetchall()
        documents = conn.execute("SELECT key, content_hash FROM documents ORDER BY 1").fetchall()
        staged = conn.execute("SELECT count(*) FROM staged_documents").fetchone()[0]
    return chunks, ledger, documents, staged


def same_index(a, b):
    (ca, la, sa, _), (cb, lb, sb, _) = a, b
    assert [r[:4] for r in ca] == [r[:4] for r in cb]
    va = np.array([np.fromstring(r[4][1:-1], sep=",") for r in ca])
    vb = np.array([np.fromstring(r[4][1:-1], sep=",") for r in cb])
    assert np.allclose(va, vb, atol=1e-3)  # halfvec storage: batch-level float noise can move one half-ulp
    assert la == lb and sa == sb


@pytest.fixture
def small_config(rfcs_repo, write_config):
    return write_config([{"name": "rfcs", "type": "git", "repo": str(rfcs_repo), "globs": SMALL}])


@pytest.mark.slow  # ~70 s each on 2 cores
@pytest.mark.parametrize("stage, at", [("documents", 2), ("chunks", 2), ("embeddings", 8), ("write", 2)])
def test_kill_anywhere_then_rerun_converges(small_config, pg_server, embedder, stage, at, tmp_path):
    clean_url = new_db(pg_server)
    ingest_source(IngestContext(load_settings(small_config), url=clean_url, embedder=embedder), "rfcs")
    clean = snapshot(clean_url)
    assert clean[0] and clean[3] == 0

    url = new_db(pg_server)
    script = tmp_path / "victim.py"
    script.write_text(VICTIM)
    res = subprocess.run(
        [sys.executable, str(script), str(small_config), url, stage, str(at)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": os.getcwd()},
    )
    assert res.returncode == -signal.SIGKILL, res.stderr[-2000:]
    killed = snapshot(url)
    # Whatever made it in is consistent: every ledger row describes committed chunks.
    assert {r[0] for r in killed[1]} <= {r[0] for r in killed[2]}

    stats = ingest_source(IngestContext(load_settings(small_config), url=url, embedder=embedder), "rfcs")
    after = snapshot(url)
    same_index(after, clean)
    assert after[3] == 0, "no staging rows left behind"
    assert (
        ingest_source(IngestContext(load_settings(small_config), url=url, embedder=embedder), "rfcs").chunks_embedded
        == 0
    )
    if stage in ("embeddings", "write"):
        assert stats.chunks_embedded < len(clean[0]), "vectors computed before the kill were kept"

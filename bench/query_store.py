"""The made-up store bench/query.py measures: texts, their vectors, and a database loaded with them.

Texts are real chunks (the rust-rfcs corpus and SciFact, cut by the pipeline's chunker) repeated with
variation up to the size; vectors are real or drawn from a fitted Gaussian (see bench/query.py); the
store is loaded the way a cold ingest loads it: rows first (the BM25 triggers write the postings),
then the vectors, then the bulk indexes.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import time
from pathlib import Path

import numpy as np


def sized_texts(args: argparse.Namespace, emb, tmp: Path, n: int) -> list[tuple[str, str, str]]:
    """(document key, section, text) × n: real chunks, then varied repeats."""
    from pipeline.chunk import Chunker
    from pipeline.parse.markdown import parse_markdown
    from pipeline.records import Section

    chunker = Chunker(emb.tokenizer, emb.max_seq_length)
    repo = tmp / "rfcs"
    subprocess.run(["git", "clone", "-q", str(args.data / "corpus/rust-rfcs-md.bundle"), str(repo)], check=True)
    base: list[tuple[str, str, str]] = []
    for path in sorted(repo.rglob("*.md")):
        parsed = parse_markdown(path.read_text(encoding="utf-8"))
        base += [
            (f"rfcs:{path.relative_to(repo)}", " > ".join(c.heading_path), c.text)
            for c in chunker.chunk(parsed.title, parsed.sections)
        ]
    for line in (args.data / "beir/scifact/corpus.jsonl").open():
        doc = json.loads(line)
        base += [
            (f"scifact:{doc['_id']}", doc["title"], c.text)
            for c in chunker.chunk(doc["title"], [Section((doc["title"],), doc["text"])])
        ]
    rng = random.Random(1)
    out = list(base[:n])
    while len(out) < n:
        key, section, text = base[len(out) % len(base)]
        paras = text.split("\n\n")
        rng.shuffle(paras)
        if len(paras) > 2:
            paras.pop()
        out.append((f"{key}#v{len(out) // len(base)}", section, "\n\n".join(paras)))
    return out


def text_vectors(args: argparse.Namespace, emb, texts: list[tuple[str, str, str]]) -> np.ndarray:
    """Unit vectors for every text: real ones for each distinct text, or a fitted Gaussian (--vectors)."""
    rng = np.random.default_rng(3)
    n_base = sum(1 for key, _, _ in texts if "#" not in key)  # the distinct texts come first
    if args.vectors == "real":
        base = _real_vectors(args, [t for _, _, t in texts[:n_base]])
        mean, cov = base.mean(axis=0), np.cov(base, rowvar=False)
    else:
        sample = rng.choice(len(texts), size=min(args.real_sample, len(texts)), replace=False)
        real = emb.encode([texts[i][2] for i in sample])
        mean, cov = real.mean(axis=0), np.cov(real, rowvar=False)
    chol = np.linalg.cholesky(cov + 1e-6 * np.eye(cov.shape[0]))
    if args.vectors != "real":
        base = mean + rng.standard_normal((n_base, len(mean))) @ chol.T
        base /= np.linalg.norm(base, axis=1, keepdims=True)
    # A variant (paragraphs shuffled, one dropped) is its base moved by noise shaped like the
    # corpus; real mode scales the noise so variants sit as close to their base as real ones do.
    scale, target = 0.3, None
    variants = range(n_base, len(texts))
    if args.vectors == "real" and variants:
        probe = rng.choice(variants, size=min(200, len(variants)), replace=False)
        got = _real_vectors(args, [texts[i][2] for i in probe], cache=False)
        target = float(np.mean(np.sum(got * base[probe % n_base], axis=1)))
        noise = rng.standard_normal((len(probe), len(mean))) @ chol.T
        lo, hi = 0.0, 2.0
        for _ in range(30):  # bisect: mean cosine falls as the noise grows
            scale = (lo + hi) / 2
            moved = base[probe % n_base] + scale * noise
            cos = np.mean(np.sum(moved * base[probe % n_base], axis=1) / np.linalg.norm(moved, axis=1))
            lo, hi = (scale, hi) if cos > target else (lo, scale)
    vecs = np.empty((len(texts), len(mean)), dtype=np.float32)
    vecs[:n_base] = base
    for i in variants:
        v = base[i % n_base] + scale * (rng.standard_normal(len(mean)) @ chol.T)
        vecs[i] = v / np.linalg.norm(v)
    if args.vectors == "gaussian":
        what = f"Gaussian fitted to {args.real_sample} real embeddings"
    else:
        what = f"real embeddings of {n_base} distinct texts" + (
            f"; variants at mean cosine {target:.3f} to their base, as real variants are" if target else ""
        )
    print(f"[query] vectors: {what}", file=sys.stderr)
    return vecs


def _real_vectors(args: argparse.Namespace, texts: list[str], cache: bool = True) -> np.ndarray:
    """The model's vectors for texts: onnx-int8 when installed (2x faster; cosine 0.994 to fp32), cached."""
    import hashlib
    import importlib.util

    from pipeline.config import EmbeddingConfig
    from pipeline.embed import Embedder

    backend = "onnx-int8" if importlib.util.find_spec("onnxruntime") else "torch"
    emb = Embedder(EmbeddingConfig(backend=backend))
    digest = hashlib.sha256("\0".join([emb.model_id, backend, *texts]).encode()).hexdigest()[:16]
    path = emb.cache_dir.parent / "bench" / f"vectors-{digest}.npy"
    if cache and path.exists():
        return np.load(path)
    t = time.perf_counter()
    vecs = emb.encode(texts)
    print(f"[query] embedded {len(texts)} texts with {backend} in {time.perf_counter() - t:.0f} s", file=sys.stderr)
    if cache:
        path.parent.mkdir(parents=True, exist_ok=True)
        np.save(path, vecs)
    return vecs


def fresh_database(server_url: str, name: str) -> str:
    """A new, empty database `name` on the server of `server_url` (one already there is dropped)."""
    import psycopg
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    drop_database(server_url, name)
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return make_conninfo(**{**conninfo_to_dict(server_url), "dbname": name})


def drop_database(server_url: str, name: str) -> None:
    import psycopg

    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def load_store(args, url: str, emb, texts, vectors) -> tuple[dict, dict]:
    """Rows by COPY into the real schema (postings by its triggers), vectors into the live generation's
    table, then the bulk indexes built, as a cold ingest does. Seconds per stage; bytes by relation."""
    from pipeline.ingest.embeddings import BULK_INDEXES
    from pipeline.store import generations
    from pipeline.store.db import connect
    from pipeline.store.schema import ensure_schema

    timings: dict[str, float] = {}
    with connect(url) as conn:
        ensure_schema(conn, emb.model_id, emb.dimension)
        gen = generations.live(conn)
        defs = dict(conn.execute(BULK_INDEXES).fetchall())  # those a cold ingest rebuilds
        for name in defs:
            conn.execute(f'DROP INDEX "{name}"')
        timings.update(_copy_rows(conn, texts))
        t = time.perf_counter()
        copy_vectors(conn, gen.table_name, gen.vector_type, vectors)
        timings["vectors_s"] = time.perf_counter() - t
        conn.execute("SET maintenance_work_mem = '1GB'")
        for name, definition in defs.items():
            t = time.perf_counter()
            conn.execute(hnsw_params(args, definition))
            timings[f"{name}_s"] = time.perf_counter() - t
        t = time.perf_counter()
        for table in ("chunks", "documents", "bm25_docs", "bm25_blocks", "bm25_terms", gen.table_name):
            conn.execute(f'VACUUM ANALYZE "{table}"')  # as autovacuum would: index-only scans need it
        timings["vacuum_analyze_s"] = time.perf_counter() - t
        return timings, _relation_bytes(conn)


def hnsw_params(args, definition: str) -> str:
    """An index definition with --m / --ef-construction, when given, for an HNSW index."""
    if " USING hnsw " not in definition or (args.m is None and args.ef_construction is None):
        return definition
    head, _, with_ = definition.partition(" WITH (")
    params = dict(p.strip().split(" = ") for p in with_.rstrip(")").split(",")) if with_ else {}
    params |= {k: str(v) for k, v in (("m", args.m), ("ef_construction", args.ef_construction)) if v is not None}
    return f"{head} WITH ({', '.join(f'{k} = {v}' for k, v in params.items())})"


def _copy_rows(conn, texts) -> dict[str, float]:
    """Documents and chunks by COPY; the chunks' BM25 triggers (statistics, terms, postings) run at its end."""
    docs = sorted({key for key, _, _ in texts})  # a varied repeat is its own document
    out = {}
    with conn.transaction(), conn.cursor() as cur:
        tracked = _try(conn, "SET LOCAL track_functions = 'all'")  # the triggers' own time (superuser only)
        t = time.perf_counter()
        with cur.copy("COPY documents (key, source, type, uri, url, title, content_hash) FROM STDIN") as copy:
            for key in docs:
                copy.write_row((key, key.split(":")[0], "git", key, f"https://example.com/{key}", key, "-"))
        cols = "id, doc_key, ordinal, heading_path, section, text, token_count, text_hash"
        with cur.copy(f"COPY chunks ({cols}) FROM STDIN WITH (FORMAT BINARY)") as copy:
            copy.set_types(["text", "text", "int4", "text[]", "text", "text", "int4", "text"])
            for i, (key, section, text) in enumerate(texts):
                copy.write_row((f"c{i}", key, i, [section], section, text, 0, f"h{i}"))
        out["rows_s"] = time.perf_counter() - t
        if tracked:  # 0002's statistics and terms; 0008's postings: chunk term lists, then the packed lists
            for name, ms in conn.execute(
                "SELECT funcname, total_time FROM pg_stat_xact_user_functions WHERE funcname IN "
                "('docforge_bm25_inserted', 'docforge_bm25_docs', 'docforge_bm25_merge') ORDER BY 1"
            ):
                out[f"rows.{name.removeprefix('docforge_')}_s"] = ms / 1000  # part of rows_s
    return out


def _try(conn, statement: str) -> bool:
    import psycopg

    try:
        with conn.transaction():
            conn.execute(statement)
    except psycopg.errors.InsufficientPrivilege:
        return False
    conn.execute(statement)
    return True


def copy_vectors(conn, table: str, kind: str, vectors) -> None:
    from pgvector import HalfVector

    seqs = dict(conn.execute("SELECT id, seq FROM chunks").fetchall())
    wrap = HalfVector if kind == "halfvec" else (lambda v: v)
    with (
        conn.transaction(),
        conn.cursor() as cur,
        cur.copy(f'COPY "{table}" (seq, embedding) FROM STDIN WITH (FORMAT BINARY)') as copy,
    ):
        copy.set_types(["int8", kind])
        for i, vec in enumerate(vectors):
            copy.write_row((seqs[f"c{i}"], wrap(vec)))


def _relation_bytes(conn) -> dict[str, int]:
    """Bytes of every table (heap and TOAST) and index that holds data: {"table": n, "table/index": n}."""
    out = {}
    for table, size, indexes in conn.execute(
        "SELECT t.relname, pg_table_size(t.oid), coalesce(json_object_agg(i.relname, pg_relation_size(i.oid)) "
        "       FILTER (WHERE i.oid IS NOT NULL), '{}') "
        "FROM pg_class t LEFT JOIN pg_index x ON x.indrelid = t.oid LEFT JOIN pg_class i ON i.oid = x.indexrelid "
        "WHERE t.relkind = 'r' AND t.relnamespace = current_schema()::regnamespace GROUP BY t.relname, t.oid"
    ):
        if size:  # not the empty work tables (staged rows, failures)
            out[table] = size
            out.update({f"{table}/{name}": n for name, n in indexes.items()})
    return out

"""What bench/query.py measures on a store: search latency per mode and filter, the cost of access
control, and the recall of the HNSW index against exact search."""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np
from query_store import copy_vectors, hnsw_params

FILTERS = {"none": None, "type: git": {"type": "git"}, "source: scifact": {"source": "scifact"}}


def search_latency(args, url: str, queries: list[str], raw: bool = False) -> tuple[dict, str]:
    """p50/p95 of Searcher.search per mode and filter, query embedding included. The mode × filter
    pairs take turns, so that a busy spell of the machine falls on all of them; no query repeats
    within the Searcher's cache of recent query vectors."""
    import itertools

    from pipeline.config import Settings
    from pipeline.query import Searcher

    # The query embedder a user gets (embedding.query_backend: auto), not the ingest's `emb`.
    searcher = Searcher(Settings(home=Path(os.environ["DOCFORGE_HOME"])), url=url)
    pool = itertools.cycle(queries)
    pairs = [(mode, f) for mode in args.modes for f in args.filters]
    for _ in range(min(10, args.queries)):  # warm-up: connections, caches, model
        for mode, f in pairs:
            searcher.search(next(pool), 10, mode, filters=FILTERS[f])
    times: dict[tuple[str, str], list[float]] = {p: [] for p in pairs}
    for _ in range(args.queries):
        for mode, f in pairs:
            q = next(pool)
            t = time.perf_counter()
            searcher.search(q, 10, mode, filters=FILTERS[f])
            times[(mode, f)].append((time.perf_counter() - t) * 1000)
    out: dict[str, dict] = {}
    if raw:
        for (mode, f), ms in times.items():
            out.setdefault(mode, {})[f] = ms
        searcher.close()
        return out, ""
    for (mode, f), ms in times.items():
        out.setdefault(mode, {})[f] = {
            "p50": float(np.percentile(ms, 50)),
            "p95": float(np.percentile(ms, 95)),
            "mean": float(np.mean(ms)),
        }
    backend = searcher.embedder.cfg.backend
    searcher.close()
    return out, backend


def access_latency(args, url: str, queries: list[str]) -> dict:
    """p50/p95 per mode of callers who may read each --access share of the documents, and of a
    full-access caller (no access predicate at all), taking turns query by query on one store; the
    query's vector is embedded before the turns (the cost of access is in the SQL, not the model).

    Every document gets one clause: a document at rank r (a stable hash of its key, 0-99.99) lists
    `group:p<share>` for each share above r, so the caller in group p<share> may read that share."""
    import itertools

    from pipeline.access import Principal
    from pipeline.config import Settings
    from pipeline.query import Searcher
    from pipeline.store.db import connect

    shares = sorted(set(args.access))
    groups = [f"p{share:g}" for share in shares]
    with connect(url) as conn:
        conn.execute(
            "UPDATE documents d SET access = jsonb_build_array(coalesce((SELECT jsonb_agg(g) FROM unnest("
            "%s::float8[], %s::text[]) s(share, g) WHERE r.rank < s.share), '[]'::jsonb)) "
            "FROM (SELECT key, (abs(hashtextextended(key, 0)) %% 10000) / 100.0 AS rank FROM documents) r "
            "WHERE r.key = d.key",
            (shares, [f"group:{g}" for g in groups]),
        )
        conn.execute("VACUUM ANALYZE documents")
        seen = {
            g: conn.execute("SELECT avg((access->0 ? %s)::int) FROM documents", (f"group:{g}",)).fetchone()[0]
            for g in groups
        }
    readers = {"full access": None} | {
        f"{share:g} %": Principal(f"bench-{g}", frozenset({g})) for share, g in zip(shares, groups, strict=True)
    }
    searcher = Searcher(Settings(home=Path(os.environ["DOCFORGE_HOME"])), url=url)
    pool = itertools.cycle(queries)
    for _ in range(min(10, args.queries)):  # warm-up
        for mode in args.modes:
            for reader in readers.values():
                searcher.search(next(pool), 10, mode, reader=reader)
    times: dict[tuple[str, str], list[float]] = {(m, r): [] for m in args.modes for r in readers}
    for _ in range(args.queries):
        # Every reader meets the same query, its vector already embedded (an untimed search first):
        # what differs is only what each may read.
        q = next(pool)
        searcher.search(q, 10, "dense")
        for mode in args.modes:
            for name, reader in readers.items():
                t = time.perf_counter()
                searcher.search(q, 10, mode, reader=reader)
                times[(mode, name)].append((time.perf_counter() - t) * 1000)
    searcher.close()
    out: dict = {"documents_readable": {f"{s:g} %": float(seen[g]) for s, g in zip(shares, groups, strict=True)}}
    for (mode, name), ms in times.items():
        base = float(np.percentile(times[(mode, "full access")], 50))
        p50 = float(np.percentile(ms, 50))
        out.setdefault(mode, {})[name] = {"p50": p50, "p95": float(np.percentile(ms, 95)), "ratio": p50 / base}
    return out


def hnsw_recall(args, url: str, vectors: np.ndarray, qvecs: np.ndarray, efs: list[int]) -> dict:
    """recall@10 of the live generation's HNSW index (and, with --compare-float32, of one over float32
    vectors) against exact float32 search, per ef_search, with its SQL p50."""
    from pipeline.store import generations
    from pipeline.store.db import connect

    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    q = qvecs / np.linalg.norm(qvecs, axis=1, keepdims=True)
    truth = [set(np.argpartition(-(unit @ v), 10)[:10].tolist()) for v in q]
    out: dict = {"exact_halfvec": _exact_half_recall(vectors, qvecs, truth)}
    with connect(url) as conn:
        gen = generations.live(conn)
        row = {seq: int(cid[1:]) for cid, seq in conn.execute("SELECT id, seq FROM chunks")}
        tables = [(gen.vector_type, gen.table_name, str(gen.column_type.as_string(conn)))]
        if args.compare_float32 and gen.vector_type != "vector":
            t = time.perf_counter()
            conn.execute(
                f"CREATE TABLE bench_float32 (seq bigint PRIMARY KEY, embedding vector({vectors.shape[1]}) NOT NULL)"
            )
            copy_vectors(conn, "bench_float32", "vector", vectors)
            live = conn.execute(
                "SELECT indexdef FROM pg_indexes WHERE tablename = %s AND indexdef ~ ' USING hnsw '", (gen.table_name,)
            ).fetchone()[0]
            conn.execute("SET maintenance_work_mem = '1GB'")
            t_build = time.perf_counter()
            conn.execute(
                hnsw_params(
                    args,
                    "CREATE INDEX bench_float32_hnsw ON bench_float32 USING hnsw "
                    "(embedding vector_cosine_ops) WITH (" + live.split(" WITH (")[1],
                )
            )
            conn.execute("VACUUM ANALYZE bench_float32")
            out["float32_build_s"] = {"copy": t_build - t, "hnsw": time.perf_counter() - t_build}
            tables.append(("vector", "bench_float32", f"vector({vectors.shape[1]})"))
        knn = "SELECT seq FROM {table} ORDER BY embedding <=> %s::{type} LIMIT 10"
        conn.execute("SET enable_seqscan = off")  # the index even where a small table would be scanned
        plan = " ".join(
            r[0] for r in conn.execute("EXPLAIN " + knn.format(table=gen.table_name, type=tables[0][2]), (qvecs[0],))
        )
        out["plan"] = "hnsw index" if "Index Scan using" in plan and "hnsw" in plan else "NOT the index: " + plan[:200]
        for kind, table, cast in tables:
            for ef in efs:
                hits, ms = 0, []
                for v, want in zip(qvecs, truth, strict=True):
                    with conn.transaction():
                        conn.execute(f"SET LOCAL hnsw.ef_search = {int(ef)}")
                        t = time.perf_counter()
                        got = {row[s] for (s,) in conn.execute(knn.format(table=table, type=cast), (v,), prepare=False)}
                        ms.append((time.perf_counter() - t) * 1000)
                    hits += len(got & want)
                out.setdefault(kind, {})[ef] = {
                    "recall": hits / (10 * len(qvecs)),
                    "p50_ms": float(np.percentile(ms, 50)),
                }
    return out


def _exact_half_recall(vectors: np.ndarray, qvecs: np.ndarray, truth: list[set[int]]) -> float:
    """recall@10 of exact search over half-precision vectors (no index): what rounding to halfvec alone
    costs. pgvector's halfvec cosine converts each half to float and computes in float, as here."""
    half = vectors.astype(np.float16).astype(np.float32)
    half /= np.linalg.norm(half, axis=1, keepdims=True)
    hits = 0
    for v, want in zip(qvecs.astype(np.float16).astype(np.float32), truth, strict=True):
        hits += len(set(np.argpartition(-(half @ v), 10)[:10].tolist()) & want)
    return hits / (10 * len(truth))

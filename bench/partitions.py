"""What partitioning the vectors would cost a search: one HNSW graph against P per-partition graphs.

    DATABASE_URL=postgresql://...  python bench/query.py --chunks 100000 --keep --filters none
    python bench/partitions.py postgresql://.../docforge_query_100000 --partitions 1 8 32 100
    python bench/partitions.py --smoke   # on the tiny store bench/query.py --smoke leaves, in seconds

Reads the live generation's vectors from a store `bench/query.py --keep` left (real
embeddings and their corpus-shaped variants), copies them into a table LIST-
partitioned by `seq % P` (as per-source partitions would split a store: P sources of
equal size), one HNSW index per partition with the store's parameters, and times the
k-NN statement a search runs (ORDER BY distance LIMIT 10 over the parent: Postgres
merges the partitions' index scans) at the store's ef_search, against P = 1. Also
the same query restricted to one partition (a search filtered to one source), and
recall@10 against exact search. Prints one row per P.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import psycopg
from pgvector.psycopg import register_vector


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("url", nargs="?", help="a store built by bench/query.py --keep")
    ap.add_argument("--smoke", action="store_true", help="on the tiny store bench/query.py --smoke leaves")
    ap.add_argument("--partitions", type=int, nargs="+", default=[1, 8, 32, 100])
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--ef-search", type=int, default=100)
    args = ap.parse_args()
    if not args.url and not args.smoke:
        ap.error("give the URL of a store bench/query.py --keep left, or --smoke")
    if args.smoke:
        args.partitions, args.queries = [1, 3], 5
    if args.url:
        run(args)
    else:
        from query import on_kept_store

        on_kept_store(run, args)


def run(args: argparse.Namespace) -> None:
    with psycopg.connect(args.url, autocommit=True) as conn:
        register_vector(conn)
        table, vtype = conn.execute(
            "SELECT format('vectors_%s', id), vector_type FROM generations WHERE state = 'live'"
        ).fetchone()
        dim = conn.execute(f"SELECT vector_dims(embedding) FROM {table} LIMIT 1").fetchone()[0]
        opts = conn.execute(
            "SELECT array_to_string(c.reloptions, ', ') FROM pg_index x JOIN pg_class c ON c.oid = x.indexrelid "
            "JOIN pg_am a ON a.oid = c.relam WHERE x.indrelid = %s::regclass AND a.amname = 'hnsw'",
            (table,),
        ).fetchone()[0]
        n = conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
        rng = np.random.default_rng(5)
        seqs = [int(s) for s in rng.choice(conn.execute(f"SELECT array_agg(seq) FROM {table}").fetchone()[0], 200)]
        # queries: stored vectors, lightly moved (a query is near its answers, never one of them)
        queries = []
        for s in seqs[: args.queries]:
            v = np.asarray(
                conn.execute(f"SELECT embedding::vector FROM {table} WHERE seq = %s", (s,)).fetchone()[0].to_numpy()
            )
            v = v + rng.normal(0, 0.02, v.shape)
            queries.append((v / np.linalg.norm(v)).astype(np.float32))
        cast = f"{vtype}({dim})"
        truth = [
            {r for (r,) in conn.execute(f"SELECT seq FROM {table} ORDER BY embedding::vector <=> %s LIMIT 10", (q,))}
            for q in queries
        ]
        conn.execute("SET maintenance_work_mem = '1GB'")
        conn.execute(f"SET hnsw.ef_search = {args.ef_search}")
        print(f"{n:,} vectors ({cast}), HNSW {opts}, ef_search {args.ef_search}, {len(queries)} queries")
        print(f"{'partitions':>10} {'build s':>8} {'all: p50 ms':>12} {'p95':>6} {'recall@10':>10} {'one: p50 ms':>12}")
        base = None
        for p in args.partitions:
            conn.execute("DROP TABLE IF EXISTS bench_parts")
            conn.execute(
                f"CREATE TABLE bench_parts (part int NOT NULL, seq bigint NOT NULL, embedding {cast}) "
                "PARTITION BY LIST (part)"
            )
            for i in range(p):
                conn.execute(f"CREATE TABLE bench_parts_{i} PARTITION OF bench_parts FOR VALUES IN ({i})")
            conn.execute(f"INSERT INTO bench_parts SELECT seq % {p}, seq, embedding FROM {table}")
            t = time.perf_counter()
            conn.execute(f"CREATE INDEX ON bench_parts USING hnsw (embedding {vtype}_cosine_ops) WITH ({opts})")
            build = time.perf_counter() - t
            conn.execute("ANALYZE bench_parts")
            knn = f"SELECT seq FROM bench_parts {{where}} ORDER BY embedding <=> %s::{cast} LIMIT 10"
            all_ms, one_ms, hits = [], [], 0
            for _ in range(2):  # the second pass is timed: caches warm, as a serving store's are
                all_ms, one_ms, hits = [], [], 0
                for q, want in zip(queries, truth, strict=True):
                    t = time.perf_counter()
                    got = {r for (r,) in conn.execute(knn.format(where=""), (q,))}
                    all_ms.append((time.perf_counter() - t) * 1000)
                    hits += len(got & want)
                    t = time.perf_counter()
                    conn.execute(knn.format(where="WHERE part = 0"), (q,)).fetchall()
                    one_ms.append((time.perf_counter() - t) * 1000)
            p50 = float(np.percentile(all_ms, 50))
            base = base or p50
            print(
                f"{p:>10} {build:>8.1f} {p50:>12.2f} {np.percentile(all_ms, 95):>6.2f} "
                f"{hits / (10 * len(queries)):>10.3f} {np.percentile(one_ms, 50):>12.2f}   ({p50 / base:.1f}x)"
            )
        conn.execute("DROP TABLE IF EXISTS bench_parts")


if __name__ == "__main__":
    main()

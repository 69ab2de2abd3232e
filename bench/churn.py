"""What a re-index of part of a store costs the keyword and vector indexes, and what vacuum then costs.

    DATABASE_URL=postgresql://...  python bench/query.py --chunks 100000 --keep --filters none
    python bench/churn.py postgresql://.../docforge_query_100000 --share 0.1
    python bench/churn.py --smoke   # on the tiny store bench/query.py --smoke leaves, in seconds

Takes a store `bench/query.py --keep` left and re-writes `--share` of its documents
the way an ingest of changed files does: their chunks deleted, then inserted again
(same text, new rows: the BM25 triggers remove and re-add their postings), and
their vectors inserted into the live generation's table (its HNSW index updated
row by row). Prints seconds per step, bytes per table and index before, after the
writes and after VACUUM (which makes the dead rows' space reusable but does not
shrink the files), and VACUUM's own time per table.
"""

from __future__ import annotations

import argparse
import time

import psycopg

TABLES = ("chunks", "bm25_docs", "bm25_blocks")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("url", nargs="?", help="a store built by bench/query.py --keep")
    ap.add_argument("--smoke", action="store_true", help="on the tiny store bench/query.py --smoke leaves")
    ap.add_argument("--share", type=float, default=0.1, help="share of documents re-written (default 0.1)")
    args = ap.parse_args()
    if not args.url and not args.smoke:
        ap.error("give the URL of a store bench/query.py --keep left, or --smoke")
    if args.url:
        run(args)
    else:
        from query import on_kept_store

        on_kept_store(run, args)


def run(args: argparse.Namespace) -> None:
    with psycopg.connect(args.url, autocommit=True) as conn:
        vectors = conn.execute("SELECT format('vectors_%s', id) FROM generations WHERE state = 'live'").fetchone()[0]
        tables = (*TABLES, vectors)
        before = _sizes(conn, tables)
        n_docs = conn.execute("SELECT count(*) FROM documents").fetchone()[0]
        conn.execute("SELECT setseed(0.5)")
        steps: dict[str, float] = {}
        with conn.transaction():
            conn.execute(
                "CREATE TEMP TABLE picked AS SELECT key FROM documents ORDER BY random() LIMIT %s",
                (int(n_docs * args.share),),
            )
            conn.execute(
                f"CREATE TEMP TABLE saved AS SELECT c.*, v.embedding FROM chunks c JOIN {vectors} v ON v.seq = c.seq "
                "WHERE c.doc_key IN (SELECT key FROM picked)"
            )
            n = conn.execute("SELECT count(*) FROM saved").fetchone()[0]
            t = time.perf_counter()
            conn.execute("DELETE FROM chunks WHERE doc_key IN (SELECT key FROM picked)")  # vectors cascade
            steps["delete (postings removed)"] = time.perf_counter() - t
            cols = [
                c
                for (c,) in conn.execute(
                    "SELECT column_name FROM information_schema.columns WHERE table_name = 'chunks' "
                    "AND column_name NOT IN ('seq', 'tsv') AND is_generated = 'NEVER' ORDER BY ordinal_position"
                )
            ]
            t = time.perf_counter()
            conn.execute(f"INSERT INTO chunks ({', '.join(cols)}) SELECT {', '.join(cols)} FROM saved ORDER BY id")
            steps["insert (postings merged)"] = time.perf_counter() - t
            t = time.perf_counter()
            conn.execute(
                f"INSERT INTO {vectors} (seq, embedding) "
                "SELECT c.seq, s.embedding FROM saved s JOIN chunks c USING (id)"
            )
            steps["vectors (HNSW inserts)"] = time.perf_counter() - t
        written = _sizes(conn, tables)
        vacuum = {}
        for table in tables:
            t = time.perf_counter()
            conn.execute(f'VACUUM (ANALYZE) "{table}"')
            vacuum[table] = time.perf_counter() - t
        after = _sizes(conn, tables)
        total = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
        print(f"re-wrote {n:,} of {total:,} chunks ({int(n_docs * args.share):,} of {n_docs:,} documents)")
        for step, s in steps.items():
            print(f"  {step:<28} {s:7.1f} s  ({n / s:,.0f} chunks/s)")
        print(f"{'relation':<28} {'MB before':>10} {'written':>10} {'vacuumed':>10} {'vacuum s':>9}")
        for rel in before:
            vac = f"{vacuum[rel]:9.1f}" if rel in vacuum else ""
            print(f"  {rel:<26} {before[rel] / 1e6:10.1f} {written[rel] / 1e6:10.1f} {after[rel] / 1e6:10.1f} {vac}")


def _sizes(conn: psycopg.Connection, tables: tuple[str, ...]) -> dict[str, int]:
    """Bytes of each table (heap + TOAST) and, under it, each of its indexes."""
    out = {}
    for table in tables:
        out[table] = conn.execute("SELECT pg_table_size(%s::regclass)", (table,)).fetchone()[0]
        for name, size in conn.execute(
            "SELECT i.relname, pg_relation_size(i.oid) FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid "
            "WHERE x.indrelid = %s::regclass ORDER BY 1",
            (table,),
        ):
            out[f"{table}/{name}"] = size
    return out


if __name__ == "__main__":
    main()

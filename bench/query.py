"""Query latency and HNSW recall on a 100k-chunk store.

    python bench/query.py                         # 100k chunks, HNSW m=16 ef_construction=64
    python bench/query.py --chunks 20000 --m 24   # quicker / other index parameters

Texts are real: the rust-rfcs corpus and SciFact, chunked by the pipeline's own
chunker, then repeated with variation (paragraphs shuffled, one dropped) up to
--chunks. Document vectors are synthetic, because embedding 100k chunks takes
hours on a CPU: a Gaussian fitted (mean and full covariance) to real model
embeddings of --real-sample of those texts, normalised, and variants of one
text are near-duplicates of its vector. Queries are SciFact's real claims,
embedded by the real model inside each search (never a repeated query, so no
cache hit). The store is the real schema (BM25 triggers included), loaded the
way a cold ingest loads it: rows first, GIN and HNSW built after.

Prints p50/p95 of `Searcher.search` per mode, and recall@10 of the HNSW index
against exact search at several hnsw.ef_search values.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
DATA = ROOT.parent / "shared" / "data"

import numpy as np  # noqa: E402


def main() -> None:
    args = _parse()
    with tempfile.TemporaryDirectory(prefix="docforge-query-") as tmp:
        tmp = Path(tmp)
        os.environ["DOCFORGE_HOME"] = str(tmp / "home")
        from pipeline.config import EmbeddingConfig
        from pipeline.embed import Embedder
        from pipeline.store.db import database_url, stop_embedded

        emb = Embedder(EmbeddingConfig())
        url = database_url(tmp / "home", os.environ.get("DATABASE_URL"))
        try:
            texts = _texts(args, emb, tmp)
            vectors = _vectors(args, emb, texts)
            build = _load(args, url, emb, texts, vectors)
            queries = [json.loads(ln)["text"] for ln in (args.data / "beir/scifact/queries.jsonl").open()]
            random.Random(7).shuffle(queries)
            latency = _latency(args, url, emb, queries)
            recall = _recall(url, emb.encode(queries[-args.recall_queries:]), args.ef_search)
            _report(args, len(texts), build, latency, recall)
        finally:
            if not os.environ.get("DATABASE_URL"):
                stop_embedded(tmp / "home")


def _parse() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--chunks", type=int, default=100_000, help="store size (default 100000)")
    ap.add_argument("--m", type=int, default=16, help="HNSW m (default 16, as migration 0001)")
    ap.add_argument("--ef-construction", type=int, default=64, help="HNSW ef_construction (default 64)")
    ap.add_argument("--ef-search", type=int, nargs="+", default=[40, 100, 200, 400],
                    help="ef_search values for recall")
    ap.add_argument("--queries", type=int, default=150, help="timed searches per mode (distinct queries)")
    ap.add_argument("--modes", nargs="+", default=["dense", "keyword", "hybrid"], help="modes to time")
    ap.add_argument("--custom-plans", action="store_true",
                    help="SET plan_cache_mode = force_custom_plan on the Searcher's connection (diagnostic)")
    ap.add_argument("--recall-queries", type=int, default=100)
    ap.add_argument("--real-sample", type=int, default=800, help="texts embedded for the vector model")
    ap.add_argument("--data", type=Path, default=DATA, help="the shared data folder")
    return ap.parse_args()


def _texts(args: argparse.Namespace, emb, tmp: Path) -> list[tuple[str, str, str]]:
    """(document key, section, text) × --chunks: real chunks, then varied repeats."""
    from pipeline.chunk import Chunker
    from pipeline.parse.markdown import parse_markdown
    from pipeline.records import Section

    chunker = Chunker(emb.tokenizer, emb.max_seq_length)
    repo = tmp / "rfcs"
    subprocess.run(["git", "clone", "-q", str(args.data / "corpus/rust-rfcs-md.bundle"), str(repo)], check=True)
    base: list[tuple[str, str, str]] = []
    for path in sorted(repo.rglob("*.md")):
        parsed = parse_markdown(path.read_text(encoding="utf-8"))
        base += [(f"rfcs:{path.relative_to(repo)}", " > ".join(c.heading_path), c.text)
                 for c in chunker.chunk(parsed.title, parsed.sections)]
    for line in (args.data / "beir/scifact/corpus.jsonl").open():
        doc = json.loads(line)
        base += [(f"scifact:{doc['_id']}", doc["title"], c.text)
                 for c in chunker.chunk(doc["title"], [Section((doc["title"],), doc["text"])])]
    rng = random.Random(1)
    out = list(base[: args.chunks])
    while len(out) < args.chunks:
        key, section, text = base[len(out) % len(base)]
        paras = text.split("\n\n")
        rng.shuffle(paras)
        if len(paras) > 2:
            paras.pop()
        out.append((f"{key}#v{len(out) // len(base)}", section, "\n\n".join(paras)))
    return out


def _vectors(args: argparse.Namespace, emb, texts: list[tuple[str, str, str]]) -> np.ndarray:
    """Synthetic unit vectors from a Gaussian fitted to real embeddings; variants stay near their base."""
    rng = np.random.default_rng(3)
    sample = rng.choice(len(texts), size=min(args.real_sample, len(texts)), replace=False)
    real = emb.encode([texts[i][2] for i in sample])
    mean, cov = real.mean(axis=0), np.cov(real, rowvar=False)
    chol = np.linalg.cholesky(cov + 1e-6 * np.eye(cov.shape[0]))
    bases = {key.split("#")[0] for key, _, _ in texts}
    n_base = sum(1 for key, _, _ in texts if "#" not in key)
    base_vecs = mean + rng.standard_normal((n_base, len(mean))) @ chol.T
    vecs = np.empty((len(texts), len(mean)), dtype=np.float32)
    for i in range(len(texts)):
        v = base_vecs[i % n_base]
        if i >= n_base:  # a variant: the same content, slightly moved
            v = v + 0.3 * (rng.standard_normal(len(mean)) @ chol.T)
        vecs[i] = v / np.linalg.norm(v)
    print(f"[query] vectors: Gaussian fitted to {len(sample)} real embeddings; {len(bases)} documents",
          file=sys.stderr)
    return vecs


def _load(args, url: str, emb, texts, vectors) -> dict:
    """Rows by COPY into the real schema, then GIN and HNSW built (as a cold ingest does)."""
    from pipeline.store.db import connect
    from pipeline.store.schema import ensure_schema

    timings = {}
    with connect(url) as conn:
        ensure_schema(conn, emb.model_id, emb.dimension)
        defs = dict(conn.execute("SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'chunks' "
                                 "AND indexdef ~* ' USING (hnsw|gin) '").fetchall())
        for name in defs:
            conn.execute(f'DROP INDEX "{name}"')
        t = time.perf_counter()
        _copy_rows(conn, emb.model_id, texts, vectors)
        timings["copy_s"] = time.perf_counter() - t
        conn.execute("SET maintenance_work_mem = '1GB'")
        for name, definition in defs.items():
            if " USING hnsw " in definition:
                definition = definition.split(" WITH ")[0] + (
                    f" WITH (m = {args.m}, ef_construction = {args.ef_construction})")
            t = time.perf_counter()
            conn.execute(definition)
            timings[f"{name}_s"] = time.perf_counter() - t
        conn.execute("VACUUM ANALYZE chunks")
    return timings


def _copy_rows(conn, model: str, texts, vectors) -> None:
    docs = sorted({key for key, _, _ in texts})  # a varied repeat is its own document
    with conn.transaction(), conn.cursor() as cur:
        with cur.copy("COPY sources (key, partition, type, uri, url, title, content_hash) FROM STDIN") as copy:
            for key in docs:
                copy.write_row((key, key.split(":")[0], "git", key, f"https://example.com/{key}", key, "-"))
        cols = "id, source_key, ordinal, heading_path, section, text, token_count, text_hash, model, embedding"
        with cur.copy(f"COPY chunks ({cols}) FROM STDIN WITH (FORMAT BINARY)") as copy:
            copy.set_types(["text", "text", "int4", "text[]", "text", "text", "int4", "text", "text", "vector"])
            for i, ((key, section, text), vec) in enumerate(zip(texts, vectors)):
                copy.write_row((f"c{i}", key, i, [section], section, text, 0, f"h{i}", model, vec))


def _latency(args, url: str, emb, queries: list[str]) -> dict:
    """p50/p95 of Searcher.search per mode, query embedding included; distinct queries throughout."""
    from pipeline.config import Settings
    from pipeline.query import Searcher

    searcher = Searcher(Settings(home=Path(os.environ["DOCFORGE_HOME"])), url=url, embedder=emb)
    if args.custom_plans:  # psycopg prepares a statement run 5 times; Postgres may then pick a generic plan
        searcher.conn.execute("SET plan_cache_mode = force_custom_plan")
    pool = iter(queries)
    for _ in range(10):  # warm-up: connection, caches, model
        for mode in args.modes:
            searcher.search(next(pool), 10, mode)
    out = {}
    for mode in args.modes:
        times = []
        for _ in range(args.queries):
            q = next(pool)
            t = time.perf_counter()
            searcher.search(q, 10, mode)
            times.append((time.perf_counter() - t) * 1000)
        out[mode] = {"p50": float(np.percentile(times, 50)), "p95": float(np.percentile(times, 95)),
                     "mean": float(np.mean(times))}
    searcher.close()
    return out


def _recall(url: str, qvecs: np.ndarray, efs: list[int]) -> dict:
    """recall@10 of the HNSW index against an exact scan, per ef_search, with its SQL latency."""
    from pipeline.store.db import connect

    # prepare=False: a server-side prepared plan, made while index scans were off, would be reused
    knn = "SELECT id FROM chunks ORDER BY embedding <=> %s LIMIT 10"
    out = {}
    with connect(url) as conn:
        exact = []
        for v in qvecs:
            with conn.transaction():
                conn.execute("SET LOCAL enable_indexscan = off")
                exact.append({r[0] for r in conn.execute(knn, (v,), prepare=False)})
        plan = " ".join(r[0] for r in conn.execute("EXPLAIN " + knn, (qvecs[0],)))
        out["plan"] = "hnsw index" if "Index Scan using chunks_embedding" in plan else "NOT the index: " + plan[:200]
        for ef in efs:
            hits, times = 0, []
            for v, truth in zip(qvecs, exact):
                with conn.transaction():
                    conn.execute(f"SET LOCAL hnsw.ef_search = {int(ef)}")
                    t = time.perf_counter()
                    got = {r[0] for r in conn.execute(knn, (v,), prepare=False)}
                    times.append((time.perf_counter() - t) * 1000)
                hits += len(got & truth)
            out[ef] = {"recall": hits / (10 * len(qvecs)), "p50_ms": float(np.percentile(times, 50))}
    return out


def _report(args, n: int, build: dict, latency: dict, recall: dict) -> None:
    print(f"store     {n} chunks; HNSW m={args.m} ef_construction={args.ef_construction}; build: "
          + ", ".join(f"{k} {v:.1f}" for k, v in build.items()))
    for mode, s in latency.items():
        target = "   (targets p50 ≤ 25 ms, p95 ≤ 60 ms)" if mode == "hybrid" else ""
        print(f"{mode:<9} Searcher.search, limit 10, query embedding included: p50 {s['p50']:.1f} ms, "
              f"p95 {s['p95']:.1f} ms, mean {s['mean']:.1f} ms ({args.queries} queries){target}")
    print(f"dense SQL plan: {recall.pop('plan')}")
    for ef, r in recall.items():
        print(f"recall@10 hnsw.ef_search={ef}: {r['recall']:.3f} vs exact (SQL p50 {r['p50_ms']:.1f} ms)"
              f"   (target ≥ 0.95)")


if __name__ == "__main__":
    main()

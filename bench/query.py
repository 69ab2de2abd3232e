"""Query latency and HNSW recall on a 100k-chunk store.

    python bench/query.py                         # 100k chunks, HNSW m=16 ef_construction=64
    python bench/query.py --chunks 20000 --m 24   # quicker / other index parameters
    python bench/query.py --vectors gaussian      # no embedding at all (pessimistic recall)

Texts are real: the rust-rfcs corpus and SciFact, chunked by the pipeline's own
chunker, then repeated with variation (paragraphs shuffled, one dropped) up to
--chunks. Embedding 100k chunks takes hours on a CPU, so only the ~23k distinct
texts get real vectors (`--vectors real`, the default: the model's embeddings,
onnx-int8 when installed, cached under the model cache); a variant's vector is
its base's plus noise shaped like the corpus (its covariance), scaled so that
variants sit as close to their base as 200 really embedded variants do.
`--vectors gaussian` draws every base vector from a Gaussian fitted to
--real-sample real embeddings instead: no topical clusters, so HNSW recall is
pessimistic and nothing needs embedding. Queries are SciFact's real claims,
embedded by the real model inside each search (never a repeated query, so no
cache hit). The store is the real schema (BM25 triggers included), loaded the
way a cold ingest loads it: rows first, then GIN, HNSW and the postings' impact index.

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
        from pipeline.config import EmbeddingConfig, Settings
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
            latency, backend = _latency(args, url, queries)
            efs = sorted({*args.ef_search, Settings().search.ef_search})
            recall = _recall(url, emb.encode(queries[-args.recall_queries:]), efs)
            _report(args, len(texts), build, latency, backend, recall)
        finally:
            if not os.environ.get("DATABASE_URL"):
                stop_embedded(tmp / "home")


def _parse() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--chunks", type=int, default=100_000, help="store size (default 100000)")
    ap.add_argument("--m", type=int, default=16, help="HNSW m (default 16, as migration 0001)")
    ap.add_argument("--ef-construction", type=int, default=64, help="HNSW ef_construction (default 64)")
    ap.add_argument("--ef-search", type=int, nargs="+", default=[20, 40, 100, 200],
                    help="ef_search values for recall (the Searcher's default is always added)")
    ap.add_argument("--queries", type=int, default=150, help="timed searches per mode (distinct queries)")
    ap.add_argument("--modes", nargs="+", default=["dense", "keyword", "hybrid"], help="modes to time")
    ap.add_argument("--recall-queries", type=int, default=100)
    ap.add_argument("--vectors", choices=["real", "gaussian"], default="real",
                    help="document vectors: real = the model's (every distinct text, cached; ~10 min once on "
                         "2 CPU cores), gaussian = fitted to --real-sample texts (no topics: pessimistic)")
    ap.add_argument("--real-sample", type=int, default=800, help="texts embedded for the Gaussian")
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
            f"; variants at mean cosine {target:.3f} to their base, as real variants are" if target else "")
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


def _load(args, url: str, emb, texts, vectors) -> dict:
    """Rows by COPY into the real schema (postings by its triggers), then the bulk indexes built, as a cold ingest does."""
    from pipeline.ingest.embeddings import BULK_INDEXES
    from pipeline.store.db import connect
    from pipeline.store.schema import ensure_schema

    timings = {}
    with connect(url) as conn:
        ensure_schema(conn, emb.model_id, emb.dimension)
        defs = dict(conn.execute(BULK_INDEXES).fetchall())  # those a cold ingest rebuilds
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
        conn.execute("VACUUM ANALYZE bm25_postings")  # as autovacuum would: index-only scans need it
        timings["postings_mb"] = conn.execute(
            "SELECT pg_total_relation_size('bm25_postings') / 1e6").fetchone()[0]
        timings["chunks_mb"] = conn.execute("SELECT pg_total_relation_size('chunks') / 1e6").fetchone()[0]
    return timings


def _copy_rows(conn, model: str, texts, vectors) -> None:
    docs = sorted({key for key, _, _ in texts})  # a varied repeat is its own document
    with conn.transaction(), conn.cursor() as cur:
        with cur.copy("COPY documents (key, source, type, uri, url, title, content_hash) FROM STDIN") as copy:
            for key in docs:
                copy.write_row((key, key.split(":")[0], "git", key, f"https://example.com/{key}", key, "-"))
        cols = "id, doc_key, ordinal, heading_path, section, text, token_count, text_hash, model, embedding"
        with cur.copy(f"COPY chunks ({cols}) FROM STDIN WITH (FORMAT BINARY)") as copy:
            copy.set_types(["text", "text", "int4", "text[]", "text", "text", "int4", "text", "text", "vector"])
            for i, ((key, section, text), vec) in enumerate(zip(texts, vectors)):
                copy.write_row((f"c{i}", key, i, [section], section, text, 0, f"h{i}", model, vec))


def _latency(args, url: str, queries: list[str]) -> tuple[dict, str]:
    """p50/p95 of Searcher.search per mode, query embedding included; distinct queries throughout."""
    from pipeline.config import Settings
    from pipeline.query import Searcher

    # The query embedder a user gets (embedding.query_backend: auto), not the ingest's `emb`.
    searcher = Searcher(Settings(home=Path(os.environ["DOCFORGE_HOME"])), url=url)
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
    backend = searcher.embedder.cfg.backend
    searcher.close()
    return out, backend


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


def _report(args, n: int, build: dict, latency: dict, backend: str, recall: dict) -> None:
    from pipeline.config import Settings

    print(f"store     {n} chunks, {args.vectors} vectors; HNSW m={args.m} ef_construction={args.ef_construction}; build: "
          + ", ".join(f"{k} {v:.1f}" for k, v in build.items()))
    for mode, s in latency.items():
        target = "   (targets p50 ≤ 25 ms, p95 ≤ 60 ms)" if mode == "hybrid" else ""
        print(f"{mode:<9} Searcher.search, limit 10, query embedding ({backend}) included: p50 {s['p50']:.1f} ms, "
              f"p95 {s['p95']:.1f} ms, mean {s['mean']:.1f} ms ({args.queries} queries){target}")
    print(f"dense SQL plan: {recall.pop('plan')}")
    for ef, r in recall.items():
        chosen = "   ← the Searcher's ef_search (target ≥ 0.95)" if ef == Settings().search.ef_search else ""
        print(f"recall@10 hnsw.ef_search={ef}: {r['recall']:.3f} vs exact (SQL p50 {r['p50_ms']:.1f} ms){chosen}")


if __name__ == "__main__":
    main()

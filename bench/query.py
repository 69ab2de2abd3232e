"""Query latency, store size and HNSW recall at one or more store sizes, side by side.

    python bench/query.py                           # 100k chunks
    python bench/query.py --chunks 300000           # 100k and 300k in one run (the baseline size joins)
    python bench/query.py --chunks 20000 --m 24     # quicker / other index parameters
    python bench/query.py --vectors gaussian        # no embedding at all (pessimistic recall)
    python bench/query.py --compare-float32         # also an HNSW index of float32 vectors: recall of both
    python bench/query.py --compare-tree /tmp/base  # also another checkout's code, same store, in turns
    python bench/query.py --access 1 50 100         # also callers who may read 1 %, 50 %, 100 % of it
    python bench/query.py --smoke                   # the whole path on a tiny made-up corpus, in seconds

Texts are real: the rust-rfcs corpus and SciFact, chunked by the pipeline's own
chunker, then repeated with variation (paragraphs shuffled, one dropped) up to
the size. Embedding 300k chunks takes hours on a CPU, so only the ~23k distinct
texts get real vectors (`--vectors real`, the default: the model's embeddings,
onnx-int8 when installed, cached under the model cache); a variant's vector is
its base's plus noise shaped like the corpus (its covariance), scaled so that
variants sit as close to their base as 200 really embedded variants do.
`--vectors gaussian` draws every base vector from a Gaussian fitted to
--real-sample real embeddings instead: no topical clusters, so HNSW recall is
pessimistic and nothing needs embedding. Queries are SciFact's real claims,
embedded by the real model inside each search. Each size is a store of its own
(a database on one server), the real schema (BM25 triggers included), loaded
the way a cold ingest loads it: rows first (the triggers write the postings),
then the vectors, then the HNSW and GIN indexes. A smaller store holds the first
chunks of a larger one.

Prints, per size: build time per stage, bytes per chunk by table and index,
p50/p95 of `Searcher.search` per mode with no filter and with two broad ones
(`type: git`, every chunk; `source: scifact`, ~87% of them), and recall@10 of
the HNSW index (the live generation's vector type) against exact float32 search
at several hnsw.ef_search values. `--json` adds the figures as one JSON line.

`--access P …` also times callers who may read P % of the documents (access lists on every
document, docs/security.md) against no access control (a full-access caller: no predicate), on the
same store, the readers taking turns query by query; p50/p95 per mode and the ratio of p50s.

`--compare-tree DIR` also times the searches with the code of another checkout
(a release: `git archive bc15cdc | tar -x -C /tmp/base`) on the same store:
both run in child processes, in turns (three rounds each), and the report adds
the ratio of their p50s per mode and filter.
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
# the code measured: this checkout, or another one's (--compare-tree runs this file under it)
sys.path.insert(0, os.environ.get("DOCFORGE_BENCH_CODE", str(ROOT)))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
DATA = ROOT.parent / "shared" / "data"

import numpy as np  # noqa: E402

BASELINE = 100_000  # the size every run also measures when it measures a larger one
FILTERS = {"none": None, "type: git": {"type": "git"}, "source: scifact": {"source": "scifact"}}
TARGETS = {"hybrid": "targets p50 ≤ 25 ms, p95 ≤ 60 ms"}


def main() -> None:
    args = _parse()
    if args.latency_of:
        _child_latency(args)
        return
    sizes = sorted({*args.chunks, *([args.baseline] if args.baseline and max(args.chunks) > args.baseline else [])})
    with tempfile.TemporaryDirectory(prefix="docforge-query-") as tmp:
        tmp = Path(tmp)
        os.environ["DOCFORGE_HOME"] = str(tmp / "home")
        from pipeline.config import EmbeddingConfig, Settings
        from pipeline.embed import Embedder
        from pipeline.store.db import database_url, stop_embedded

        emb = Embedder(EmbeddingConfig())
        server = database_url(tmp / "home", os.environ.get("DATABASE_URL"))
        try:
            texts = _texts(args, emb, tmp, max(sizes))
            vectors = _vectors(args, emb, texts)
            queries = [json.loads(ln)["text"] for ln in (args.data / "beir/scifact/queries.jsonl").open()]
            random.Random(7).shuffle(queries)
            qvecs = emb.encode(queries[-args.recall_queries :])
            efs = sorted({*args.ef_search, Settings().search.ef_search})
            results = {}
            for n in sizes:
                url = _fresh_database(server, f"docforge_query_{n}")
                try:
                    t = time.perf_counter()
                    build, sizes_by_rel = _load(args, url, emb, texts[:n], vectors[:n])
                    print(f"[query] {n} chunks loaded in {time.perf_counter() - t:.0f} s", file=sys.stderr)
                    t = time.perf_counter()
                    latency, backend = _latency(args, url, queries)
                    if args.compare_tree:
                        latency["compared"] = _compare(args, url, queries)
                    if args.access:
                        latency["access"] = _access_latency(args, url, queries)
                    print(f"[query] {n} chunks: latency in {time.perf_counter() - t:.0f} s", file=sys.stderr)
                    t = time.perf_counter()
                    recall = _recall(args, url, vectors[:n], qvecs, efs)
                    print(f"[query] {n} chunks: recall in {time.perf_counter() - t:.0f} s", file=sys.stderr)
                finally:
                    if not args.keep:
                        _drop_database(server, f"docforge_query_{n}")
                results[n] = {
                    "build": build,
                    "bytes": sizes_by_rel,
                    "latency": latency,
                    "recall": recall,
                    "backend": backend,
                }
            _report(args, results)
            if args.json:
                print(json.dumps({str(n): r for n, r in results.items()}))
        finally:
            if not os.environ.get("DATABASE_URL"):
                stop_embedded(tmp / "home")


def _parse() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--chunks", type=int, nargs="+", default=[BASELINE], help="store sizes (default 100000)")
    ap.add_argument(
        "--baseline",
        type=int,
        default=BASELINE,
        help=f"also measured when a larger size is (default {BASELINE}; 0: never)",
    )
    ap.add_argument("--m", type=int, default=None, help="HNSW m (default: as the schema builds it)")
    ap.add_argument("--ef-construction", type=int, default=None, help="HNSW ef_construction (default: the schema's)")
    ap.add_argument(
        "--ef-search",
        type=int,
        nargs="+",
        default=[20, 40, 100, 200],
        help="ef_search values for recall (the Searcher's default is always added)",
    )
    ap.add_argument("--queries", type=int, default=150, help="timed searches per mode and filter")
    ap.add_argument("--modes", nargs="+", default=["dense", "keyword", "hybrid"], help="modes to time")
    ap.add_argument("--filters", nargs="+", default=list(FILTERS), choices=list(FILTERS), help="filters to time")
    ap.add_argument("--recall-queries", type=int, default=200)
    ap.add_argument(
        "--compare-float32",
        action="store_true",
        help="also build an HNSW index of the float32 vectors and report its recall beside",
    )
    ap.add_argument(
        "--vectors",
        choices=["real", "gaussian"],
        default="real",
        help="document vectors: real = the model's (every distinct text, cached; ~10 min once on "
        "2 CPU cores), gaussian = fitted to --real-sample texts (no topics: pessimistic)",
    )
    ap.add_argument("--real-sample", type=int, default=800, help="texts embedded for the Gaussian")
    ap.add_argument("--data", type=Path, default=DATA, help="the shared data folder")
    ap.add_argument(
        "--compare-tree",
        type=Path,
        default=None,
        help="also time the searches with this checkout's code (same store, in turns) and print p50 ratios",
    )
    ap.add_argument(
        "--access",
        type=float,
        nargs="+",
        default=[],
        metavar="PERCENT",
        help="also time callers who may read these shares of the documents (e.g. 1 50 100)",
    )
    ap.add_argument("--latency-of", default=None, help=argparse.SUPPRESS)  # a --compare-tree child: this URL
    ap.add_argument("--keep", action="store_true", help="keep each size's database (docforge_query_<n>)")
    ap.add_argument("--json", action="store_true", help="also print the figures as one JSON line")
    ap.add_argument("--smoke", action="store_true", help="the whole path on a tiny input, in seconds (bench/smoke.py)")
    args = ap.parse_args()
    if args.smoke:  # 150 chunks of made-up RFCs, Gaussian vectors, one timed search per mode
        from smoke import scratch, tiny_data

        args.chunks, args.baseline, args.vectors, args.real_sample, args.queries = [150], 0, "gaussian", 20, 1
        args.recall_queries, args.ef_search, args.filters, args.data = 5, [10], ["none"], tiny_data(scratch())
    return args


def _texts(args: argparse.Namespace, emb, tmp: Path, n: int) -> list[tuple[str, str, str]]:
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


def _fresh_database(server_url: str, name: str) -> str:
    """A new, empty database `name` on the server of `server_url` (one already there is dropped)."""
    import psycopg
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    _drop_database(server_url, name)
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return make_conninfo(**{**conninfo_to_dict(server_url), "dbname": name})


def _drop_database(server_url: str, name: str) -> None:
    import psycopg

    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _load(args, url: str, emb, texts, vectors) -> tuple[dict, dict]:
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
        _copy_vectors(conn, gen.table_name, gen.vector_type, vectors)
        timings["vectors_s"] = time.perf_counter() - t
        conn.execute("SET maintenance_work_mem = '1GB'")
        for name, definition in defs.items():
            t = time.perf_counter()
            conn.execute(_hnsw_params(args, definition))
            timings[f"{name}_s"] = time.perf_counter() - t
        t = time.perf_counter()
        for table in ("chunks", "documents", "bm25_docs", "bm25_blocks", "bm25_terms", gen.table_name):
            conn.execute(f'VACUUM ANALYZE "{table}"')  # as autovacuum would: index-only scans need it
        timings["vacuum_analyze_s"] = time.perf_counter() - t
        return timings, _relation_bytes(conn)


def _hnsw_params(args, definition: str) -> str:
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


def _copy_vectors(conn, table: str, kind: str, vectors) -> None:
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


def _compare(args, url: str, queries: list[str]) -> dict:
    """p50 per mode and filter of this checkout's code and of --compare-tree's, each in child processes
    that take turns (three rounds each) on the same store, and their ratio."""
    rounds, per = 3, max(1, args.queries // 3)
    times: dict[str, dict[str, dict[str, list[float]]]] = {"this": {}, "other": {}}
    for r in range(rounds):
        for who, tree in (("this", ROOT), ("other", args.compare_tree.resolve())):
            part = queries[r * per :] + queries[: r * per]  # a new stretch of queries each round
            env = {**os.environ, "DOCFORGE_BENCH_CODE": str(tree), "PYTHONPATH": str(tree)}
            cmd = [sys.executable, str(Path(__file__).resolve()), "--latency-of", url, "--queries", str(per)]
            cmd += ["--modes", *args.modes, "--filters", *args.filters]
            out = subprocess.run(cmd, env=env, cwd=tempfile.gettempdir(), input=json.dumps(part), text=True,
                                 capture_output=True, check=True)  # fmt: skip
            for mode, by_filter in json.loads(out.stdout.splitlines()[-1]).items():
                for f, ms in by_filter.items():
                    times[who].setdefault(mode, {}).setdefault(f, []).extend(ms)
    result: dict = {}
    for mode, by_filter in times["this"].items():
        for f, ms in by_filter.items():
            this, other = float(np.percentile(ms, 50)), float(np.percentile(times["other"][mode][f], 50))
            result.setdefault(mode, {})[f] = {"this_p50": this, "other_p50": other, "ratio": this / other}
    return result


def _child_latency(args) -> None:
    """A --compare-tree child: time the queries on stdin against --latency-of, print raw ms as JSON."""
    queries = json.loads(sys.stdin.read())
    with tempfile.TemporaryDirectory(prefix="docforge-child-") as home:  # gone with the child
        os.environ.setdefault("DOCFORGE_HOME", home)
        raw = _latency(args, args.latency_of, queries, raw=True)[0]
    print(json.dumps(raw))


def _latency(args, url: str, queries: list[str], raw: bool = False) -> tuple[dict, str]:
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


def _access_latency(args, url: str, queries: list[str]) -> dict:
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


def _recall(args, url: str, vectors: np.ndarray, qvecs: np.ndarray, efs: list[int]) -> dict:
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
            _copy_vectors(conn, "bench_float32", "vector", vectors)
            live = conn.execute(
                "SELECT indexdef FROM pg_indexes WHERE tablename = %s AND indexdef ~ ' USING hnsw '", (gen.table_name,)
            ).fetchone()[0]
            conn.execute("SET maintenance_work_mem = '1GB'")
            t_build = time.perf_counter()
            conn.execute(
                _hnsw_params(
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


def _report(args, results: dict) -> None:
    from pipeline.config import Settings

    sizes = list(results)
    width = 22

    def line(label: str, cells: list[str]) -> None:
        print(f"{label:<34}" + "".join(f"{c:>{width}}" for c in cells))

    first = results[sizes[0]]
    print(
        f"stores: {', '.join(str(n) for n in sizes)} chunks, {args.vectors} vectors, "
        f"query embedding ({first['backend']}) included in latency; {args.queries} searches per cell"
    )
    line("chunks", [f"{n:,}" for n in sizes])
    print("build, seconds per stage")
    for stage in first["build"]:
        label = stage.removesuffix("_s").replace("rows.", "  of which ")  # a trigger's share of the COPY
        line(f"  {label}", [f"{results[n]['build'].get(stage, float('nan')):.1f}" for n in sizes])
    print("bytes per chunk, by table (heap + TOAST) and index")
    names = sorted({k for n in sizes for k in results[n]["bytes"]}, key=lambda k: (k.split("/")[0], "/" in k, k))
    for name in names:
        if all(results[n]["bytes"].get(name, 0) < n for n in sizes):
            continue  # under a byte per chunk everywhere (a one-row table)
        label = f"    {name.split('/')[1]}" if "/" in name else f"  {name}"
        line(label, [f"{results[n]['bytes'].get(name, 0) / n:,.0f}" for n in sizes])
    line("  total", [f"{sum(results[n]['bytes'].values()) / n:,.0f}" for n in sizes])
    line("  total MB", [f"{sum(results[n]['bytes'].values()) / 1e6:,.0f}" for n in sizes])
    print("Searcher.search p50 / p95 ms, limit 10")
    if args.access:
        shares = results[sizes[0]]["latency"]["access"]["documents_readable"]
        print(
            "  readers: "
            + ", ".join(f"{k} may read {v:.1%} of the documents" for k, v in shares.items())
            + "; reader rows: the query vector embedded beforehand, (ratio of p50 to full access's)"
        )
    for mode in args.modes:
        for f in args.filters:
            cells = [
                f"{results[n]['latency'][mode][f]['p50']:.1f} / {results[n]['latency'][mode][f]['p95']:.1f}"
                for n in sizes
            ]
            line(f"  {mode:<8} {f}", cells)
        if len(args.filters) > 1:  # the cost of a broad filter, as a ratio of p50s
            for f in args.filters[1:]:
                line(
                    f"  {mode:<8} {f} / none",
                    [
                        f"{results[n]['latency'][mode][f]['p50'] / results[n]['latency'][mode]['none']['p50']:.2f}x"
                        for n in sizes
                    ],
                )
        if args.compare_tree:  # the same store, the other checkout's code, in turns
            for f in args.filters:
                cells = [
                    "{this_p50:.1f} / {other_p50:.1f} = {ratio:.2f}x".format(
                        **results[n]["latency"]["compared"][mode][f]
                    )
                    for n in sizes
                ]
                line(f"  {mode:<8} {f} vs {args.compare_tree.name}", cells)
        if args.access:  # the same store, callers who may read a share of it, in turns, vector embedded
            for name in results[sizes[0]]["latency"]["access"][mode]:
                line(
                    f"  {mode:<8} reader: {name}",
                    [
                        "{p50:.1f} / {p95:.1f} ({ratio:.2f}x)".format(**results[n]["latency"]["access"][mode][name])
                        for n in sizes
                    ],
                )
        if mode in TARGETS:
            print(f"  ({mode}: {TARGETS[mode]})")
    print(f"dense SQL plan: {first['recall']['plan']}")
    line("recall@10 exact halfvec (no index)", [f"{results[n]['recall']['exact_halfvec']:.3f}" for n in sizes])
    chosen = Settings().search.ef_search
    kinds = [k for k in ("halfvec", "vector") if k in first["recall"]]
    for kind in kinds:
        for ef in first["recall"][kind]:
            mark = "   ← the Searcher's" if ef == chosen else ""
            line(
                f"recall@10 {kind} ef_search={ef}",
                ["{recall:.3f} ({p50_ms:.1f} ms)".format(**results[n]["recall"][kind][ef]) for n in sizes],
            )
            if mark:
                print(f"  {mark.strip()} ef_search; recall against exact float32 search, SQL p50 in brackets")


if __name__ == "__main__":
    main()

"""retrieval.py's BEIR part: the dataset read, a subset of it, each document ranked by its best chunk,
nDCG@10 and recall@100 per mode, and their table."""

from __future__ import annotations

import json
import random
import sys
import time
from pathlib import Path

import click
from metrics import Qrels, mean_metric, ndcg_at_k, recall_at_k
from retrieval_store import ingest, ingested, own_store, stop


def load_beir(data: Path, split: str) -> tuple[dict[str, dict], dict[str, str], dict[str, dict[str, int]]]:
    """(corpus id → {title, text}, query id → text, qrels) in BEIR layout."""
    corpus = {}
    with open(data / "corpus.jsonl", encoding="utf-8") as f:
        for line in f:
            d = json.loads(line)
            corpus[str(d["_id"])] = {"title": d.get("title") or "", "text": d.get("text") or ""}
    qrels: dict[str, dict[str, int]] = {}
    with open(data / "qrels" / f"{split}.tsv", encoding="utf-8") as f:
        next(f)  # header
        for line in f:
            q, d, score = line.rstrip("\n").split("\t")
            qrels.setdefault(q, {})[d] = int(score)
    queries = {}
    with open(data / "queries.jsonl", encoding="utf-8") as f:
        for line in f:
            d = json.loads(line)
            if str(d["_id"]) in qrels:
                queries[str(d["_id"])] = d["text"]
    return corpus, queries, qrels


def subset(corpus: dict, queries: dict, qrels: Qrels, n_queries: int | None, n_docs: int | None, seed=None):
    """The first n queries, and a corpus of n docs that holds every judged document of those queries; the
    other documents in corpus order, or with `seed` a fixed-seed sample of them (distractors)."""
    if n_queries:
        keep = sorted(queries, key=lambda q: int(q) if q.isdigit() else q)[:n_queries]
        queries = {q: queries[q] for q in keep}
        qrels = {q: qrels[q] for q in keep}
    if n_docs:
        wanted = [d for q in qrels for d in qrels[q] if d in corpus]
        rest = [d for d in corpus if d not in set(wanted)]
        if seed is not None:
            random.Random(seed).shuffle(rest)
        ids = list(dict.fromkeys(wanted + rest))[: max(n_docs, len(set(wanted)))]
        corpus = {d: corpus[d] for d in ids}
    return corpus, queries, qrels


def doc_ranking(hits) -> list[str]:
    """Document ids in order of their best chunk."""
    return list(dict.fromkeys(Path(h.doc_key.split(":", 1)[1]).stem for h in hits))


def evaluate(searcher, queries: dict, qrels: Qrels, mode: str, depth: int, rerank: bool) -> dict:
    run, t0 = {}, time.perf_counter()
    for q, text in queries.items():
        hits = searcher.search(text, limit=depth, mode=mode, fetch_k=depth, rerank=rerank)
        run[q] = doc_ranking(hits)
    ms = (time.perf_counter() - t0) * 1000 / max(1, len(queries))
    return {
        "ndcg@10": mean_metric(ndcg_at_k, run, qrels, 10),
        "recall@100": mean_metric(recall_at_k, run, qrels, 100),
        "ms/query": ms,
    }


def run_beir(
    data: Path,
    split: str,
    limit_docs,
    n_queries,
    modes: list[str],
    depth: int,
    workdir: Path | None,
    database_url: str | None,
):
    from pipeline.query import Searcher

    corpus, queries, qrels = subset(*load_beir(data, split), n_queries, *limit_docs)
    workdir = (workdir or Path(__file__).resolve().parent / "results" / data.name).resolve()
    own_store(workdir)
    print(f"{data.name}: {len(corpus)} documents, {len(queries)} queries ({split})", file=sys.stderr)
    t0 = time.perf_counter()
    settings, url, stats, embedder = ingest(workdir, corpus, database_url)
    ingested(data.name, t0, stats)
    results = {}
    with Searcher(settings, url=url, embedder=embedder) as searcher:
        runs = [(m, False) for m in modes]
        if "hybrid" in modes and searcher.reranker is not None:
            runs.append(("hybrid", True))
        for mode, rerank in runs:
            name = mode + ("+rerank" if rerank else "")
            results[name] = evaluate(searcher, queries, qrels, mode, depth, rerank)
            print(f"  {name}: {results[name]}", file=sys.stderr)
    stop(workdir, database_url)
    return data.name, len(corpus), len(queries), results, searcher.reranker is None


def report_beir(name: str, n_docs: int, n_queries: int, results: dict, rerank_missing: bool, as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps({"dataset": name, "documents": n_docs, "queries": n_queries, "modes": results}))
        return
    click.echo(f"\n{name}: {n_docs} documents, {n_queries} queries\n")
    click.echo("| mode | nDCG@10 | recall@100 | ms/query |\n|---|---|---|---|")
    for mode, r in results.items():
        click.echo(f"| {mode} | {r['ndcg@10']:.3f} | {r['recall@100']:.3f} | {r['ms/query']:.0f} |")
    if rerank_missing:
        click.echo("\n(hybrid+rerank skipped: no reranker; set RERANK_ENABLED=true and RERANKER_MODEL or RERANKER_URL)")

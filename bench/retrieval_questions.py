"""retrieval.py's question sets: questions over a documentation corpus, each with the file that answers it;
hit@1/5/10 and MRR@10 per mode, at chunk and at document level, and their table."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import click
from metrics import first_rank, hit_rates
from retrieval_store import corpus_store, ingest_source_at, ingested, own_store, stop


def load_questions(path: Path) -> list[dict]:
    """{"question", "expected"} per line: the question and the path of the file that answers it."""
    out = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            q = json.loads(line)
            if not q.get("question") or not q.get("expected"):
                raise click.BadParameter(f"{path}:{n}: needs 'question' and 'expected'")
            out.append(q)
    return out


def evaluate_questions(searcher, questions: list[dict], mode: str, per_doc: int | None) -> dict:
    """Chunk level: the first 10 hits as a user sees them; document level: the first 10 documents of 50 hits."""
    chunk, doc, t0 = [], [], time.perf_counter()
    for q in questions:
        hits = searcher.search(q["question"], limit=50, mode=mode, per_doc=per_doc)
        first = searcher.search(q["question"], limit=10, mode=mode, per_doc=per_doc)
        chunk.append(first_rank([_path(h) for h in first], q["expected"], 10))
        doc.append(first_rank(list(dict.fromkeys(_path(h) for h in hits)), q["expected"], 10))
    ms = (time.perf_counter() - t0) * 1000 / max(1, 2 * len(questions))
    return {"chunk": hit_rates(chunk), "document": hit_rates(doc), "ms/query": ms}


def _path(hit) -> str:
    return hit.doc_key.split(":", 1)[1]


def run_questions(
    questions: list[dict],
    corpus: Path,
    workdir: Path,
    url: str | None,
    modes: list[str],
    per_doc: int | None,
    sample: tuple[list[str], int, int] | None = None,
) -> dict:
    from pipeline.query import Searcher

    own_store(workdir)
    config = corpus_store(workdir, corpus, sample)
    t0 = time.perf_counter()
    settings, url_, stats, embedder = ingest_source_at(config, None, url)
    ingested(corpus.name, t0, stats)
    results = {}
    with Searcher(settings, url=url_, embedder=embedder) as searcher:
        for mode in modes:
            results[mode] = evaluate_questions(searcher, questions, mode, per_doc)
            print(f"  {mode}: {results[mode]}", file=sys.stderr)
    stop(workdir, url)
    return results


def report_questions(name: str, n: int, results: dict, as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps({"questions": name, "count": n, "modes": results}))
        return
    click.echo(f"\n{name}: {n} questions (chunk: first 10 hits; document: first 10 documents)\n")
    click.echo("| mode | level | hit@1 | hit@5 | hit@10 | MRR@10 |\n|---|---|---|---|---|---|")
    for mode, r in results.items():
        for level in ("chunk", "document"):
            m = r[level]
            click.echo(
                f"| {mode} | {level} | {m['hit@1']:.3f} | {m['hit@5']:.3f} | {m['hit@10']:.3f} | {m['mrr@10']:.3f} |"
            )

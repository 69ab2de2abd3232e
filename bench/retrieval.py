"""Retrieval quality per search mode: a BEIR dataset (nDCG@10, recall@100) and, in the
same run, questions over a documentation corpus (hit@1/5/10 and MRR@10).

BEIR: every document becomes a markdown file (`# title` + text) in a git
repository, ingested by `ingest_source` into a store of its own (an embedded
Postgres under --workdir, or --database-url). Chunk hits are turned into a
document ranking by each document's best chunk, as BEIR scores documents.

Question sets (--questions FILE --corpus BUNDLE, repeatable, paired in order;
default: bench/rfcs_dev.jsonl over the rust-rfcs corpus and bench/uv_dev.jsonl
over the uv docs, paraphrased questions each with the file that answers it;
bench/uv_holdout.jsonl is held out of tuning): each corpus (a git repository or
bundle) is cloned into --questions-workdir/<corpus name> and ingested as one git
source of every markdown file. Each question is asked as a user would
(the default settings, `per_doc` included): chunk level = rank of the first chunk
of the right file among the first 10 hits; document level = rank of the right
file among the first 10 distinct documents of 50 hits.

Re-running with the same work folders re-uses the indexes (unchanged files are
skipped), so an existing store is picked up as it is.

\b
    python bench/retrieval.py                                   # SciFact + rust-rfcs and uv questions, every mode
    python bench/retrieval.py --workdir /tmp/bench/scifact --questions-workdir /tmp/bench  # kept stores
    python bench/retrieval.py --no-beir --questions bench/uv_holdout.jsonl --corpus ../shared/data/corpus/uv-docs.bundle
    python bench/retrieval.py --limit-docs 500 --queries 50 --questions ''  # a quick SciFact-only run
    RERANK_ENABLED=true RERANKER_MODEL=/models/ms-marco-MiniLM-L-6-v2 python bench/retrieval.py
    python bench/retrieval.py --smoke                           # the whole path on tiny made-up data
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

import click

sys.path.insert(0, str(Path(__file__).resolve().parent))
from metrics import Qrels, first_rank, hit_rates, mean_metric, ndcg_at_k, recall_at_k  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
# the shared data beside the checkout (main) or beside its worktrees' folder (wt/<name>)
SHARED = next((p / "shared" / "data" for p in ROOT.parents if (p / "shared" / "data").is_dir()), ROOT / "data")
DEFAULT_DATA = SHARED / "beir" / "scifact"
DEFAULT_SETS = (
    (ROOT / "bench" / "rfcs_dev.jsonl", SHARED / "corpus" / "rust-rfcs-md.bundle"),
    (ROOT / "bench" / "uv_dev.jsonl", SHARED / "corpus" / "uv-docs.bundle"),
)
GIT_ENV = {
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@example.com",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@example.com",
}


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


def write_repo(repo: Path, corpus: dict) -> None:
    """One markdown file per document, committed; unchanged files stay byte-identical across runs."""
    docs = repo / "docs"
    docs.mkdir(parents=True, exist_ok=True)
    wanted = {f"{d}.md" for d in corpus}
    for old in docs.glob("*.md"):
        if old.name not in wanted:
            old.unlink()
    for d, doc in corpus.items():
        body = f"# {doc['title'].strip()}\n\n{doc['text'].strip()}\n" if doc["title"].strip() else doc["text"]
        p = docs / f"{d}.md"
        if not p.exists() or p.read_text(encoding="utf-8") != body:
            p.write_text(body, encoding="utf-8")
    env = {**os.environ, **GIT_ENV}
    if not (repo / ".git").exists():
        subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True, env=env)
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True, env=env)
    subprocess.run(["git", "-C", str(repo), "commit", "-qm", "corpus", "--allow-empty"], check=True, env=env)


def ingest(workdir: Path, corpus: dict, url: str | None):
    """Index the corpus; returns (settings, database url, ingest stats)."""
    write_repo(workdir / "repo", corpus)
    config = workdir / "sources.yml"
    config.write_text("sources:\n  - name: beir\n    type: git\n    repo: repo\n    globs: ['docs/*.md']\n")
    return ingest_source_at(config, "beir", url)


def ingest_source_at(config: Path, source: str | None, url: str | None):
    """Index one source (default: the first) of a sources.yml; returns (settings, database url, ingest
    stats, embedder)."""
    from pipeline.config import load_settings
    from pipeline.ingest import IngestContext, ingest_source

    settings = load_settings(config)
    source = source or settings.sources[0].name

    def progress(stage: str, done: int, total: int) -> None:
        if done == total or done % 500 == 0:
            print(f"  {stage}: {done}/{total}", file=sys.stderr, flush=True)

    ctx = IngestContext(settings, url=url, progress=progress)
    return settings, ctx.url, ingest_source(ctx, source), ctx.embedder


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


def corpus_store(workdir: Path, corpus: Path, sample: tuple[list[str], int, int] | None = None) -> Path:
    """The questions' corpus as a git source in `workdir` (repo/, sources.yml); kept when present.
    `sample` = (expected files, n, seed): only those files and n others drawn with that seed."""
    repo, config = workdir / "repo", workdir / "sources.yml"
    if not (repo / ".git").exists():
        workdir.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "clone", "-q", str(corpus), str(repo)], check=True)
    if sample:
        globs = sampled_files(repo, *sample)
        head = "sources:\n  - name: docs\n    type: git\n    repo: repo\n    globs: "
        config.write_text(head + json.dumps(globs) + "\n")
    elif not config.exists():
        config.write_text("sources:\n  - name: docs\n    type: git\n    repo: repo\n    globs: ['**/*.md']\n")
    return config


def sampled_files(repo: Path, expected: list[str], n: int, seed: int) -> list[str]:
    """Every expected file and n other markdown files of the clone, drawn with a fixed seed, sorted."""
    listed = subprocess.run(["git", "-C", str(repo), "ls-files", "*.md"], capture_output=True, text=True, check=True)
    wanted = set(expected)
    rest = sorted(f for f in listed.stdout.splitlines() if f not in wanted)
    random.Random(seed).shuffle(rest)
    return sorted(wanted | set(rest[:n]))


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


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--data",
    type=click.Path(file_okay=False, path_type=Path),
    default=DEFAULT_DATA,
    show_default=True,
    help="BEIR dataset folder (corpus.jsonl, queries.jsonl, qrels/).",
)
@click.option("--beir/--no-beir", default=True, show_default=True, help="Measure the BEIR dataset.")
@click.option("--split", default="test", show_default=True, help="qrels split to evaluate.")
@click.option("--limit-docs", type=int, default=None, help="Index only N documents (judged ones first).")
@click.option("--queries", "n_queries", type=int, default=None, help="Evaluate only the first N queries.")
@click.option("--modes", default="dense,keyword,hybrid", show_default=True, help="Comma-separated modes.")
@click.option(
    "--depth",
    type=int,
    default=300,
    show_default=True,
    help="Chunks retrieved per query (and fetch_k per ranking) before grouping into documents.",
)
@click.option(
    "--workdir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Where the repo and embedded store live [default: bench/results/<dataset>].",
)
@click.option(
    "--database-url",
    envvar="BENCH_DATABASE_URL",
    default=None,
    help="Use this database instead of an embedded one [env: BENCH_DATABASE_URL].",
)
@click.option(
    "--questions",
    "questions_files",
    multiple=True,
    help="Questions over a documentation corpus, one JSON object a line; repeat with --corpus, paired in "
    "order ('' skips them) [default: bench/rfcs_dev.jsonl and bench/uv_dev.jsonl].",
)
@click.option(
    "--corpus",
    "corpora",
    type=click.Path(exists=True, path_type=Path),
    multiple=True,
    help="Git repository or bundle each --questions file is about [default: the rust-rfcs and uv docs bundles].",
)
@click.option(
    "--questions-workdir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Where each corpus's clone (repo/), sources.yml and embedded store (home/) live, in a folder "
    "named for the corpus; an existing one is reused [default: bench/results].",
)
@click.option(
    "--questions-database-url",
    envvar="BENCH_QUESTIONS_DATABASE_URL",
    default=None,
    help="Use this database for the questions' corpus (one set only) [env: BENCH_QUESTIONS_DATABASE_URL].",
)
@click.option(
    "--per-doc",
    type=click.IntRange(0),
    default=None,
    help="Chunks of one document per result list for the questions (0: no limit) [default: configured].",
)
@click.option(
    "--sample-docs",
    type=click.IntRange(0),
    default=None,
    help="Index only each question set's expected files and N other files of its corpus (distractors, "
    "drawn with --seed) [default: every file].",
)
@click.option("--seed", type=int, default=None, help="Seed of the distractor samples (--limit-docs, --sample-docs).")
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON.")
@click.option("--smoke", is_flag=True, help="The whole path on tiny made-up data, in seconds (bench/smoke.py).")
def main(
    data: Path,
    beir: bool,
    split: str,
    limit_docs: int | None,
    n_queries: int | None,
    modes: str,
    depth: int,
    workdir: Path | None,
    database_url: str | None,
    questions_files: tuple[str, ...],
    corpora: tuple[Path, ...],
    questions_workdir: Path | None,
    questions_database_url: str | None,
    per_doc: int | None,
    sample_docs: int | None,
    seed: int | None,
    as_json: bool,
    smoke: bool,
) -> None:
    """Print nDCG@10 and recall@100 per search mode on a BEIR dataset, and hit@k and MRR on each question set."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    if smoke:
        from smoke import scratch, tiny_data

        tmp = scratch()
        tiny = tiny_data(tmp / "data")
        data, n_queries, workdir, questions_workdir = tiny / "beir" / "scifact", 3, tmp / "beir", tmp / "questions"
        questions = tmp / "questions.jsonl"
        questions.write_text(
            json.dumps({"question": "how does the compiler treat lifetimes?", "expected": "text/0001-rfc-1.md"}) + "\n"
        )
        questions_files, corpora = (str(questions),), (tiny / "corpus" / "rust-rfcs-md.bundle",)
    mode_list = modes.split(",")
    sets = question_sets(questions_files, corpora)
    if questions_database_url and len(sets) > 1:
        raise click.BadParameter("one database holds one corpus: give one --questions set with it")
    beir_results = (
        run_beir(data, split, (limit_docs, seed), n_queries, mode_list, depth, workdir, database_url) if beir else None
    )
    asked = []
    for file, questions, corpus in sets:
        name = corpus.name.removesuffix(".bundle")
        qwork = ((questions_workdir or ROOT / "bench" / "results") / name).resolve()
        sample = ([q["expected"] for q in questions], sample_docs, seed or 0) if sample_docs is not None else None
        results = run_questions(questions, corpus, qwork, questions_database_url, mode_list, per_doc, sample)
        asked.append((f"{name} ({file.name})", len(questions), results))
    if beir_results:
        _report(*beir_results, as_json)
    for name, n, results in asked:
        _report_questions(name, n, results, as_json)


def question_sets(files: tuple[str, ...], corpora: tuple[Path, ...]) -> list[tuple[Path, list[dict], Path]]:
    """(file, its questions, corpus): the defaults, none for `--questions ''`, else the files with their corpora."""
    if not files:
        pairs = [(Path(q), c) for q, c in DEFAULT_SETS]
    elif files == ("",):
        return []
    elif len(corpora) != len(files):
        raise click.BadParameter(f"{len(files)} --questions files need as many --corpus, got {len(corpora)}")
    else:
        pairs = [(Path(q), c) for q, c in zip(files, corpora, strict=True)]
    return [(q, load_questions(q), c) for q, c in pairs]


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
    workdir = (workdir or ROOT / "bench" / "results" / data.name).resolve()
    _own_store(workdir)
    print(f"{data.name}: {len(corpus)} documents, {len(queries)} queries ({split})", file=sys.stderr)
    t0 = time.perf_counter()
    settings, url, stats, embedder = ingest(workdir, corpus, database_url)
    _ingested(data.name, t0, stats)
    results = {}
    with Searcher(settings, url=url, embedder=embedder) as searcher:
        runs = [(m, False) for m in modes]
        if "hybrid" in modes and searcher.reranker is not None:
            runs.append(("hybrid", True))
        for mode, rerank in runs:
            name = mode + ("+rerank" if rerank else "")
            results[name] = evaluate(searcher, queries, qrels, mode, depth, rerank)
            print(f"  {name}: {results[name]}", file=sys.stderr)
    _stop(workdir, database_url)
    return data.name, len(corpus), len(queries), results, searcher.reranker is None


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

    _own_store(workdir)
    config = corpus_store(workdir, corpus, sample)
    t0 = time.perf_counter()
    settings, url_, stats, embedder = ingest_source_at(config, None, url)
    _ingested(corpus.name, t0, stats)
    results = {}
    with Searcher(settings, url=url_, embedder=embedder) as searcher:
        for mode in modes:
            results[mode] = evaluate_questions(searcher, questions, mode, per_doc)
            print(f"  {mode}: {results[mode]}", file=sys.stderr)
    _stop(workdir, url)
    return results


def _own_store(workdir: Path) -> None:
    """A store of its own under `workdir` (an embedded server), never the user's DATABASE_URL."""
    os.environ["DOCFORGE_HOME"] = str(workdir / "home")
    os.environ.pop("DATABASE_URL", None)


def _ingested(name: str, t0: float, stats) -> None:
    print(
        f"{name}: ingested in {time.perf_counter() - t0:.0f}s: {stats.chunks_embedded} chunks embedded, "
        f"{stats.files_unchanged} documents unchanged",
        file=sys.stderr,
    )


def _stop(workdir: Path, database_url: str | None) -> None:
    if not database_url:  # the embedded server we started; the next run restarts it and reuses the index
        from pipeline.store.db import stop_embedded

        stop_embedded(workdir / "home")


def _report(name: str, n_docs: int, n_queries: int, results: dict, rerank_missing: bool, as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps({"dataset": name, "documents": n_docs, "queries": n_queries, "modes": results}))
        return
    click.echo(f"\n{name}: {n_docs} documents, {n_queries} queries\n")
    click.echo("| mode | nDCG@10 | recall@100 | ms/query |\n|---|---|---|---|")
    for mode, r in results.items():
        click.echo(f"| {mode} | {r['ndcg@10']:.3f} | {r['recall@100']:.3f} | {r['ms/query']:.0f} |")
    if rerank_missing:
        click.echo("\n(hybrid+rerank skipped: no reranker; set RERANK_ENABLED=true and RERANKER_MODEL or RERANKER_URL)")


def _report_questions(name: str, n: int, results: dict, as_json: bool) -> None:
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


if __name__ == "__main__":
    main()

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
skipped), so an existing store is picked up as it is. Its parts: retrieval_store.py
(the stores), retrieval_beir.py and retrieval_questions.py (each measure and its table).

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
import sys
from pathlib import Path

import click

sys.path.insert(0, str(Path(__file__).resolve().parent))  # its parts, beside it
from retrieval_beir import report_beir, run_beir  # noqa: E402
from retrieval_questions import load_questions, report_questions, run_questions  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
# the shared data beside the checkout (main) or beside its worktrees' folder (wt/<name>)
SHARED = next((p / "shared" / "data" for p in ROOT.parents if (p / "shared" / "data").is_dir()), ROOT / "data")
DEFAULT_DATA = SHARED / "beir" / "scifact"
DEFAULT_SETS = (
    (ROOT / "bench" / "rfcs_dev.jsonl", SHARED / "corpus" / "rust-rfcs-md.bundle"),
    (ROOT / "bench" / "uv_dev.jsonl", SHARED / "corpus" / "uv-docs.bundle"),
)


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
        report_beir(*beir_results, as_json)
    for name, n, results in asked:
        report_questions(name, n, results, as_json)


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


if __name__ == "__main__":
    main()

"""retrieval.py's stores: a BEIR set written as a git repository, a question set's corpus cloned (or
sampled), each ingested into a store of its own (an embedded Postgres under its work folder)."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

GIT_ENV = {
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@example.com",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@example.com",
}


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


def own_store(workdir: Path) -> None:
    """A store of its own under `workdir` (an embedded server), never the user's DATABASE_URL."""
    os.environ["DOCFORGE_HOME"] = str(workdir / "home")
    os.environ.pop("DATABASE_URL", None)


def ingested(name: str, t0: float, stats) -> None:
    print(
        f"{name}: ingested in {time.perf_counter() - t0:.0f}s: {stats.chunks_embedded} chunks embedded, "
        f"{stats.files_unchanged} documents unchanged",
        file=sys.stderr,
    )


def stop(workdir: Path, database_url: str | None) -> None:
    if not database_url:  # the embedded server we started; the next run restarts it and reuses the index
        from pipeline.store.db import stop_embedded

        stop_embedded(workdir / "home")

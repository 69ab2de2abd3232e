"""What every bench's `--smoke` mode runs on: tiny data shaped like ../shared/data, made on the spot.

A smoke run takes a bench's whole path (store, model, servers, report) on a handful of documents, in
seconds, so the test suite can run every bench and a refactor that breaks one breaks a test
(tests/test_bench_smoke.py). The figures a smoke run prints mean nothing; the run exiting 0 does.

`tiny_data(root)` writes `corpus/rust-rfcs-md.bundle` (a git bundle of markdown RFCs with tags
snapshot-1..5, each a change) and `beir/scifact/` (corpus, queries, qrels) under `root`, and returns it:
pass it where a bench takes `--data`.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

_GIT = {"GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.com", "GIT_COMMITTER_NAME": "bench"}
_GIT |= {"GIT_COMMITTER_EMAIL": "bench@example.com", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
TOPICS = ("borrow checker", "lifetimes", "trait objects", "closures", "macros", "async functions")


def scratch() -> Path:
    """A temporary folder for this smoke run, removed when the process exits."""
    path = Path(tempfile.mkdtemp(prefix="docforge-smoke-"))
    atexit.register(shutil.rmtree, path, ignore_errors=True)
    return path


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, env={**os.environ, **_GIT})


def _rfc(i: int, version: int) -> str:
    topic = TOPICS[i % len(TOPICS)]
    paras = [  # three sentences each: the answer bench builds claims from paragraphs of three or more
        f"Paragraph {j} of RFC {i} is about {topic} in the language. The compiler treats case {i * j + version} "
        f"as an error when the {topic} do not line up. Users who meet it should read the guide on {topic} first."
        for j in range(6)
    ]
    return f"# RFC {i}: {topic}\n\n## Summary\n\n" + "\n\n".join(paras) + "\n"


def tiny_data(root: Path, rfcs: int = 6) -> Path:
    """A data folder shaped like ../shared/data, small: see the module docstring."""
    repo = root / "rfcs"
    (repo / "text").mkdir(parents=True)
    _git(root, "init", "-q", "-b", "main", str(repo))
    for snapshot in range(1, 6):  # each snapshot adds one RFC, edits one and (from 3 on) deletes one
        for i in range(rfcs + snapshot - 1):
            (repo / "text" / f"{i:04d}-rfc-{i}.md").write_text(_rfc(i, snapshot if i == snapshot else 0))
        if snapshot >= 3:
            (repo / "text" / f"{snapshot - 3:04d}-rfc-{snapshot - 3}.md").unlink(missing_ok=True)
        _git(repo, "add", "-A")
        _git(repo, "commit", "-qm", f"snapshot {snapshot}")
        _git(repo, "tag", f"snapshot-{snapshot}")
    (root / "corpus").mkdir()
    _git(repo, "bundle", "create", "-q", str(root / "corpus" / "rust-rfcs-md.bundle"), "--all")
    beir = root / "beir" / "scifact"
    (beir / "qrels").mkdir(parents=True)
    docs = [
        {"_id": str(i), "title": f"Study {i}", "text": f"Vitamin {i} changes bone density in mice."} for i in range(12)
    ]
    (beir / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    queries = [{"_id": str(i), "text": f"does vitamin {i} change bone density?"} for i in range(12)]
    (beir / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    (beir / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\n" + "".join(f"{i}\t{i}\t1\n" for i in range(12))
    )
    return root


def tiny_html(root: Path, pages: int = 3) -> Path:
    """A folder of made-up HTML pages that share a site menu and footer, as a manual's pages do."""
    menu = (
        "<div class='nav'><a href='index.html'>Home</a> - <a href='a.html'>Menu</a> - <a href='b.html'>About</a></div>"
    )
    root.mkdir(parents=True, exist_ok=True)
    for i in range(pages):
        body = (
            f"<h1>Page {i}</h1><p>The <code>limit_{i}</code> setting caps the rows a query returns.</p>"
            f"<table><tr><th>Setting</th><th>Default</th></tr><tr><td>limit_{i}</td><td>{i * 10}</td></tr></table>"
        )
        (root / f"page-{i}.html").write_text(
            f"<html><head><title>Page {i}</title></head><body>{menu}{body}<footer>Copyright</footer></body></html>"
        )
    return root


def tiny_sets(root: Path) -> Path:
    """bench/sets in small: a fit and a report corpus (the tiny RFCs, as folders) with labelled questions."""
    import yaml

    repo = tiny_data(root / "data") / "rfcs"
    entries = []
    for name, split in (("smoke-fit", "fit"), ("smoke-report", "report")):
        rows = [
            {"question": f"What does the compiler treat as an error in RFC {i}?", "phrases": ["an error"]}
            for i in range(1, 4)
        ]
        rows.append({"question": "How do I configure the coffee machine's grinder?", "phrases": None})
        (root / name).mkdir(parents=True)
        (root / name / "questions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        entries.append({"name": name, "split": split, "questions": {"files": str(repo / "text"), "globs": ["*.md"]}})
    (root / "corpora.yml").write_text(yaml.safe_dump({"corpora": entries}))
    return root

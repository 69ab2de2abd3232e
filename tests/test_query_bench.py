"""The retrieval benchmark: metric definitions (hand-computed cases) and a tiny BEIR run end to end."""

from __future__ import annotations

import json
import math
import sys
import uuid
from pathlib import Path

import psycopg
import pytest
from click.testing import CliRunner

from bench.metrics import first_rank, hit_rates, mean_metric, ndcg_at_k, recall_at_k


def test_ndcg_hand_computed():
    judged = {"a": 1, "b": 1}
    assert ndcg_at_k(["a", "b", "x"], judged, 10) == 1.0
    assert ndcg_at_k(["x", "a"], judged, 10) == pytest.approx((1 / math.log2(3)) / (1 + 1 / math.log2(3)))
    assert ndcg_at_k(["x", "y", "a"], judged, 2) == 0.0  # beyond the cutoff
    assert ndcg_at_k(["b", "b", "a"], judged, 10) == 1.0  # duplicates count once
    graded = {"a": 2, "b": 1}
    assert ndcg_at_k(["b", "a"], graded, 10) == pytest.approx((1 + 2 / math.log2(3)) / (2 + 1 / math.log2(3)))
    assert ndcg_at_k([], judged, 10) == 0.0 and ndcg_at_k(["a"], {"a": 0}, 10) == 0.0


def test_recall_and_mean():
    judged = {"a": 1, "b": 1, "c": 0}
    assert recall_at_k(["a", "c", "x"], judged, 100) == 0.5
    assert recall_at_k(["x", "a", "b"], judged, 2) == 0.5
    qrels = {"q1": {"a": 1}, "q2": {"b": 1}}
    run = {"q1": ["a"]}  # q2 unanswered counts as 0
    assert mean_metric(recall_at_k, run, qrels, 10) == 0.5
    assert mean_metric(ndcg_at_k, {"q1": ["x", "a"], "q2": ["b"]}, qrels, 10) == pytest.approx(
        (1 / math.log2(3) + 1) / 2
    )


def test_first_rank_and_hit_rates():
    assert first_rank(["a", "b", "c"], "b", 10) == 2
    assert first_rank(["a", "b", "c"], ["c", "b"], 10) == 2
    assert first_rank(["a", "b", "c"], "c", 2) is None
    rates = hit_rates([1, 3, None, 7, 12])
    assert rates == {"hit@1": 0.2, "hit@5": 0.4, "hit@10": 0.6, "mrr@10": pytest.approx((1 + 1 / 3 + 1 / 7) / 5)}


def write_beir(root: Path) -> Path:
    docs = [
        ("d1", "Vitamin D and bone density", "Vitamin D supplements increase bone mineral density in adults."),
        ("d2", "Statins lower cholesterol", "Statin therapy reduces LDL cholesterol and cardiac events."),
        ("d3", "Sleep and memory", "Deep sleep consolidates long-term memory in the hippocampus."),
        ("d4", "Exercise and mood", "Aerobic exercise reduces symptoms of depression."),
    ]
    (root / "qrels").mkdir(parents=True)
    lines = [json.dumps({"_id": i, "title": t, "text": x}) + "\n" for i, t, x in docs]
    (root / "corpus.jsonl").write_text("".join(lines))
    (root / "queries.jsonl").write_text(
        json.dumps({"_id": "1", "text": "does vitamin D strengthen bones?"})
        + "\n"
        + json.dumps({"_id": "2", "text": "sleep helps remembering things"})
        + "\n"
        + json.dumps({"_id": "9", "text": "not judged"})
        + "\n"
    )
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n1\td1\t1\n2\td3\t1\n")
    return root


def test_tiny_beir_and_questions_run_end_to_end(pg_server, tmp_path, make_repo):
    """One run: a BEIR dataset and questions over a git corpus, each in a database of its own."""
    from bench import retrieval

    urls = []
    for _ in range(2):
        name = f"b_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(pg_server.get_uri(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        urls.append(pg_server.get_uri(name))
    data = write_beir(tmp_path / "beir")
    repo = make_repo(
        {
            "guide/rollback.md": "# Rolling back\n\nSwitch traffic back to the previous release.\n",
            "guide/keys.md": "# Rotating keys\n\nIssue a new signing key and retire the old one.\n",
            "README.md": "# Handbook\n\nOperations guides.\n",
        }
    )
    questions = tmp_path / "questions.jsonl"
    questions.write_text(
        json.dumps({"question": "how do I undo a bad deploy?", "expected": "guide/rollback.md"})
        + "\n"
        + json.dumps({"question": "replace the signing key", "expected": "guide/keys.md"})
    )
    args = [
        "--data",
        str(data),
        "--workdir",
        str(tmp_path / "work"),
        "--database-url",
        urls[0],
        "--json",
        "--depth",
        "10",
        "--questions",
        str(questions),
        "--corpus",
        str(repo),
        "--questions-workdir",
        str(tmp_path / "qwork"),
        "--questions-database-url",
        urls[1],
    ]
    res = CliRunner().invoke(retrieval.main, args)
    assert res.exit_code == 0, res.output
    beir, asked = (json.loads(line) for line in res.stdout.strip().splitlines()[-2:])
    assert (beir["documents"], beir["queries"]) == (4, 2)
    assert set(beir["modes"]) == {"dense", "keyword", "hybrid"}
    for scores in beir["modes"].values():
        assert scores["ndcg@10"] == 1.0 and scores["recall@100"] == 1.0
    assert asked["count"] == 2 and set(asked["modes"]) == {"dense", "keyword", "hybrid"}
    for mode in ("dense", "hybrid"):
        for level in ("chunk", "document"):
            assert asked["modes"][mode][level]["hit@1"] == 1.0, (mode, level, asked)
    assert (tmp_path / "qwork" / repo.name / "repo" / "guide" / "keys.md").exists()  # the corpus, cloned once


def test_subset_keeps_judged_documents():
    from bench import retrieval  # noqa: F401 (puts bench/ on the path its parts import each other by)
    from bench.retrieval_beir import subset

    corpus = {str(i): {"title": "", "text": str(i)} for i in range(10)}
    queries = {"1": "a", "2": "b", "3": "c"}
    qrels = {"1": {"7": 1}, "2": {"8": 1}, "3": {"9": 1}}
    c, q, r = subset(corpus, queries, qrels, n_queries=2, n_docs=3)
    assert set(q) == {"1", "2"} and set(r) == {"1", "2"}
    assert {"7", "8"} <= set(c) and len(c) == 3


def _tiny_data(root: Path, git) -> Path:
    """The shape of bench/query.py's data folder, small: a rust-rfcs-like git bundle and a SciFact-like BEIR set."""
    repo = root / "rfcs"
    (repo / "text").mkdir(parents=True)
    for i in range(4):
        paras = [
            f"Paragraph {j} of RFC {i}: borrow checker, lifetimes and trait objects, case {i * j}." for j in range(6)
        ]
        (repo / "text" / f"000{i}-rfc.md").write_text(f"# RFC {i}\n\n" + "\n\n".join(paras) + "\n")
    git(repo.parent, "init", "-q", "-b", "main", str(repo))
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "rfcs")
    (root / "corpus").mkdir()
    git(repo, "bundle", "create", "-q", str(root / "corpus" / "rust-rfcs-md.bundle"), "--all")
    beir = root / "beir" / "scifact"
    beir.mkdir(parents=True)
    (beir / "corpus.jsonl").write_text(
        "".join(
            json.dumps(
                {
                    "_id": str(i),
                    "title": f"Study {i}",
                    "text": f"Vitamin {i} changes bone density in mice. A second sentence about cholesterol and sleep.",
                }
            )
            + "\n"
            for i in range(12)
        )
    )
    (beir / "queries.jsonl").write_text(
        "".join(
            json.dumps({"_id": str(i), "text": f"does vitamin {i} change bone density {i}?"}) + "\n" for i in range(300)
        )
    )
    return root


def test_query_bench_measures_each_size_side_by_side(pg_server, tmp_path, monkeypatch, capsys):
    """bench/query.py --chunks A B: a store per size, each with build stages, bytes by table and index,
    latency per mode and filter, and recall of the live (halfvec) and a float32 HNSW index."""
    from bench import query as bench
    from tests.helpers import git

    data = _tiny_data(tmp_path / "data", git)
    monkeypatch.setenv("DATABASE_URL", pg_server.get_uri())  # the bench makes a database per size there
    monkeypatch.setattr(
        sys,
        "argv",
        [
            "query.py",
            "--chunks",
            "60",
            "150",
            "--baseline",
            "0",
            "--vectors",
            "gaussian",
            "--real-sample",
            "20",
            "--queries",
            "1",
            "--recall-queries",
            "5",
            "--ef-search",
            "10",
            "--compare-float32",
            "--json",
            "--data",
            str(data),
        ],
    )
    bench.main()
    out = capsys.readouterr().out
    report = json.loads(out.strip().splitlines()[-1])
    assert set(report) == {"60", "150"}
    for n, r in report.items():
        assert {"rows_s", "vectors_s", "vacuum_analyze_s"} <= set(r["build"])
        assert any(k.endswith("_hnsw_s") for k in r["build"]) and all(v >= 0 for v in r["build"].values())
        tables = {k for k in r["bytes"] if "/" not in k}
        assert {"chunks", "bm25_blocks", "bm25_docs", "vectors_1"} <= tables, tables
        assert "bm25_postings" not in tables  # a view of the blocks since migration 0008
        assert any(k.startswith("vectors_1/") and "hnsw" in k for k in r["bytes"])
        for mode in ("dense", "keyword", "hybrid"):
            assert set(r["latency"][mode]) == set(bench.FILTERS)
            assert all(0 < cell["p50"] <= cell["p95"] for cell in r["latency"][mode].values())
        assert r["recall"]["plan"] == "hnsw index"
        for kind in ("halfvec", "vector"):  # the live index is halfvec; --compare-float32 adds a float32 one
            assert set(r["recall"][kind]) == {"10", "100"}
            assert 0.9 <= r["recall"][kind]["100"]["recall"] <= 1.0, (n, kind, r["recall"][kind])
    assert report["150"]["bytes"]["chunks"] > report["60"]["bytes"]["chunks"]
    assert "chunks" in out and "60" in out and "150" in out and "recall@10 halfvec" in out
    with psycopg.connect(pg_server.get_uri()) as conn:  # the bench's databases are dropped
        assert conn.execute("SELECT count(*) FROM pg_database WHERE datname LIKE 'docforge_query_%'").fetchone()[0] == 0


def test_query_bench_compares_another_checkouts_code_on_the_same_store(pg_server, tmp_path, monkeypatch, capsys):
    """--compare-tree: the same searches with another checkout's code (here this one's), in turns, on the
    same store; the report gives both p50s and their ratio."""
    from bench import query as bench
    from tests.helpers import git

    data = _tiny_data(tmp_path / "data", git)
    monkeypatch.setenv("DATABASE_URL", pg_server.get_uri())
    args = ["--chunks", "60", "--baseline", "0", "--vectors", "gaussian", "--real-sample", "20", "--queries", "3"]
    args += ["--recall-queries", "5", "--ef-search", "10", "--modes", "hybrid", "--filters", "none"]
    args += ["--compare-tree", str(bench.ROOT), "--json", "--data", str(data)]
    monkeypatch.setattr(sys, "argv", ["query.py", *args])
    bench.main()
    out = capsys.readouterr().out
    cell = json.loads(out.strip().splitlines()[-1])["60"]["latency"]["compared"]["hybrid"]["none"]
    assert cell["this_p50"] > 0 and cell["other_p50"] > 0
    assert cell["ratio"] == cell["this_p50"] / cell["other_p50"]
    assert f"hybrid   none vs {bench.ROOT.name}" in out


def test_partitions_and_churn_benches_run_on_a_kept_store(pg_server, tmp_path, monkeypatch, capsys):
    """bench/query.py --keep leaves its store; bench/partitions.py times the dense k-NN over P partitions
    with recall, bench/churn.py re-writes a share of it and reports steps, sizes and vacuum."""
    from bench import churn, partitions
    from bench import query as bench
    from tests.helpers import git

    data = _tiny_data(tmp_path / "data", git)
    monkeypatch.setenv("DATABASE_URL", pg_server.get_uri())
    args = ["--chunks", "150", "--baseline", "0", "--vectors", "gaussian", "--real-sample", "20", "--queries", "1"]
    args += ["--recall-queries", "5", "--ef-search", "10", "--filters", "none", "--keep", "--data", str(data)]
    monkeypatch.setattr(sys, "argv", ["query.py", *args])
    bench.main()
    assert "recall@10 exact halfvec (no index)" in capsys.readouterr().out
    url = pg_server.get_uri("docforge_query_150")
    try:
        monkeypatch.setattr(sys, "argv", ["partitions.py", url, "--partitions", "1", "3", "--queries", "5"])
        partitions.main()
        rows = [ln.split() for ln in capsys.readouterr().out.splitlines()[2:]]
        assert [r[0] for r in rows] == ["1", "3"]
        assert all(0.0 <= float(r[4]) <= 1.0 for r in rows)  # recall@10
        monkeypatch.setattr(sys, "argv", ["churn.py", url, "--share", "0.2"])
        churn.main()
        out = capsys.readouterr().out
        assert out.startswith("re-wrote ") and "insert (postings merged)" in out and "bm25_blocks" in out
        with psycopg.connect(url) as conn:  # the re-written chunks are back, with vectors and exact postings
            assert conn.execute("SELECT count(*) FROM chunks").fetchone()[0] == 150
            assert conn.execute("SELECT count(*) FROM vectors_1").fetchone()[0] == 150
            assert conn.execute("SELECT to_regclass('bench_parts')").fetchone()[0] is None
            lists = "SELECT seq, term_id, tf, dl FROM bm25_postings"
            docs = "SELECT d.seq, u.t, u.tf, d.dl FROM bm25_docs d, unnest(d.terms, d.tfs) u(t, tf)"
            for a, b in ((lists, docs), (docs, lists)):  # the blocks hold each chunk's postings, no more
                assert conn.execute(f"SELECT count(*) FROM ({a} EXCEPT ALL {b}) x").fetchone()[0] == 0
    finally:
        with psycopg.connect(pg_server.get_uri(), autocommit=True) as conn:
            conn.execute('DROP DATABASE IF EXISTS "docforge_query_150" WITH (FORCE)')

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

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
from metrics import mean_metric, ndcg_at_k, recall_at_k  # noqa: E402


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
        (1 / math.log2(3) + 1) / 2)


def write_beir(root: Path) -> Path:
    docs = [("d1", "Vitamin D and bone density", "Vitamin D supplements increase bone mineral density in adults."),
            ("d2", "Statins lower cholesterol", "Statin therapy reduces LDL cholesterol and cardiac events."),
            ("d3", "Sleep and memory", "Deep sleep consolidates long-term memory in the hippocampus."),
            ("d4", "Exercise and mood", "Aerobic exercise reduces symptoms of depression.")]
    (root / "qrels").mkdir(parents=True)
    lines = [json.dumps({"_id": i, "title": t, "text": x}) + "\n" for i, t, x in docs]
    (root / "corpus.jsonl").write_text("".join(lines))
    (root / "queries.jsonl").write_text(json.dumps({"_id": "1", "text": "does vitamin D strengthen bones?"}) + "\n"
                                        + json.dumps({"_id": "2", "text": "sleep helps remembering things"}) + "\n"
                                        + json.dumps({"_id": "9", "text": "not judged"}) + "\n")
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n1\td1\t1\n2\td3\t1\n")
    return root


def test_tiny_beir_run_end_to_end(pg_server, tmp_path):
    import retrieval

    name = f"b_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(pg_server.get_uri(), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    data = write_beir(tmp_path / "beir")
    args = ["--data", str(data), "--workdir", str(tmp_path / "work"), "--database-url", pg_server.get_uri(name),
            "--json", "--depth", "10"]
    res = CliRunner().invoke(retrieval.main, args)
    assert res.exit_code == 0, res.output
    report = json.loads(res.stdout.strip().splitlines()[-1])
    assert (report["documents"], report["queries"]) == (4, 2)
    assert set(report["modes"]) == {"dense", "keyword", "hybrid"}
    for scores in report["modes"].values():
        assert scores["ndcg@10"] == 1.0 and scores["recall@100"] == 1.0


def test_subset_keeps_judged_documents():
    import retrieval

    corpus = {str(i): {"title": "", "text": str(i)} for i in range(10)}
    queries = {"1": "a", "2": "b", "3": "c"}
    qrels = {"1": {"7": 1}, "2": {"8": 1}, "3": {"9": 1}}
    c, q, r = retrieval.subset(corpus, queries, qrels, n_queries=2, n_docs=3)
    assert set(q) == {"1", "2"} and set(r) == {"1", "2"}
    assert {"7", "8"} <= set(c) and len(c) == 3

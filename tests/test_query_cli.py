"""`docforge search`: --json contract, --filter, --explain, --rerank, the rich table."""

from __future__ import annotations

import json
import subprocess

import pytest
from click.testing import CliRunner

from docforge.cli import main
from tests.test_mcp import DOCFORGE


@pytest.fixture
def run(corpus, monkeypatch):
    monkeypatch.setenv("DATABASE_URL", corpus.url)
    monkeypatch.setenv("COLUMNS", "200")  # rich wraps narrower tables
    for k in ("RERANK_ENABLED", "RERANKER_URL", "RERANKER_MODEL"):
        monkeypatch.delenv(k, raising=False)

    def invoke(*args: str):
        return CliRunner().invoke(main, ["search", *args, "--config", str(corpus.config)])

    return invoke


def test_json_contract_as_a_subprocess(corpus, tmp_path):
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "DOCFORGE_HOME": str(tmp_path),
        "DATABASE_URL": corpus.url,
        "DOCFORGE_CONFIG": str(corpus.config),
        "HF_HUB_OFFLINE": "1",
    }
    res = subprocess.run(
        [DOCFORGE, "search", "what do I do if a release goes wrong?", "--json", "-n", "3"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert res.returncode == 0, res.stderr
    hits = json.loads(res.stdout)
    assert len(hits) == 3 and hits[0]["doc_key"] == "handbook:docs/deploy.md"
    assert {"doc_key", "source", "url", "title", "section", "text", "score"} <= set(hits[0])
    assert hits[0]["title"] == "Deploying the service" and hits[0]["url"].endswith("/handbook/docs/deploy.md")


def test_filter_and_explain_json(run):
    res = run("refund", "--json", "--explain", "--filter", '{"source": "payments"}', "-n", "10")
    assert res.exit_code == 0, res.output
    hits = json.loads(res.stdout)
    assert {h["doc_key"] for h in hits} == {"payments:docs/refunds.md", "payments:docs/ledger.md"}
    assert hits[0]["dense_rank"] == 1 and hits[0]["keyword_rank"] == 1 and hits[0]["score"] == 1.0


def test_table_with_explain(run):
    res = run("how do I rotate the vault secret?", "--explain", "--mode", "hybrid")
    assert res.exit_code == 0, res.output
    assert "(dense #" in res.output and ", keyword #" in res.output and "Rotating credentials" in res.output


def test_brackets_in_the_query_are_echoed_intact(run):
    """The query is text, not rich markup: `x[a..b]` stays, `[/x]` does not crash the table."""
    res = run("refund slice x[a..b]")
    assert res.exit_code == 0, res.output
    assert "Results for 'refund slice x[a..b]'" in res.output
    res = run("zqxjv[/x] [bold]", "--mode", "keyword")  # no term in the corpus: the no-results line
    assert res.exit_code == 0, res.output
    assert res.output.strip().startswith("No results for 'zqxjv[/x] [bold]': try other words")


@pytest.mark.parametrize(
    "args, code, message",
    [
        (["--filter", "{not json"], 2, "not valid JSON"),
        (["--filter", "[1]"], 2, "must be a JSON object"),
        (["--filter", '{"source": {"$like": "x"}}'], 1, "unknown operator '$like' on field 'source'"),
        (["--rerank"], 1, "RERANK_ENABLED=true"),
    ],
)
def test_bad_options(run, args, code, message):
    res = run("refund", *args)
    assert res.exit_code == code and message in res.output, res.output


def test_every_line_fits_80_columns_and_paths_break_after_a_slash(corpus, monkeypatch):
    from rich.text import Text

    import docforge.cli.render as render

    monkeypatch.setenv("DATABASE_URL", corpus.url)
    for query in ("how do I configure the vault", "rotate credentials of a tenant", "the and of", "ci pipeline"):
        out = CliRunner().invoke(main, ["search", query, "--config", str(corpus.config)], env={"COLUMNS": "80"})
        assert out.exit_code == 0 and max(len(line) for line in out.output.splitlines()) <= 80, out.output
    long = "docs/operations/a-rather-long-folder-name/another-long-folder-name/runbook-for-the-service.md"
    broken = render.path_lines(Text(long), 40).plain.split("\n")
    assert "".join(broken) == long and all(len(line) <= 40 for line in broken)
    assert all(line.endswith("/") for line in broken[:-1])  # never mid-name

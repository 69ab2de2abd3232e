"""Labels a reader reads right: a quoted claim (✓), a reworded one the evidence supports (≈, with its
probability) and an unsupported one (✗) look different in the CLI at 80 columns, in JSON and through MCP,
with the legend printed where the marks are; "answers the question" is a statement of its own."""

from __future__ import annotations

import io
import json
import re

import pytest
from click.testing import CliRunner
from rich.cells import cell_len

from docforge.cli import main
from pipeline.answers import render
from pipeline.answers.model import Claim
from pipeline.config import load_settings
from pipeline.ingest import IngestContext, ingest_source
from tests.llm_double import LLMDouble
from tests.test_answers_e2e import DOCS

QUOTED = Claim("Secrets live in Vault.", ("E1",), True, "quote")
REWORDED = Claim("Vault holds the secrets.", ("E1",), True, "paraphrase", support="supported", probability=0.91)
UNSUPPORTED = Claim("Secrets live in Consul.", ("E1",), False, None, ("the name Consul is not in E1",))


def test_the_three_kinds_read_apart_with_their_legend():
    text = render.render([QUOTED, REWORDED, UNSUPPORTED], "UNGROUNDED", False)
    lines = text.splitlines()
    assert lines[1:4] == [
        "✓ Secrets live in Vault. [E1]",
        "≈ (reworded, p=0.91) Vault holds the secrets. [E1]",
        "✗ (not supported: the name Consul is not in E1) Secrets live in Consul. [E1]",
    ]
    assert lines[0].startswith("UNGROUNDED:") and lines[-1] == (
        "Marks: ✓ quoted word for word from the cited evidence · ≈ reworded; the cited evidence supports it"
        " (p: how likely it does) · ✗ not supported by the cited evidence: do not rely on it."
    )
    # The legend names the marks used, no others; a reworded claim without a probability says so plainly.
    only = render.render([QUOTED], "STRICT", False).splitlines()
    assert only == ["✓ Secrets live in Vault. [E1]", f"Marks: {render.LEGEND['quoted']}."]
    bare = Claim("Vault holds the secrets.", ("E1",), True, "paraphrase")
    assert bare.support == "supported" and render.claim_line(bare).startswith("≈ (reworded) Vault")
    assert QUOTED.as_dict()["support"] == "quoted" and UNSUPPORTED.as_dict()["support"] == "unsupported"


def test_what_the_claims_are_as_a_whole_is_said_from_the_claims():
    m = render.AUDIT_MEANING
    assert render.meaning(["quoted", "quoted"]) == m["STRICT"]  # however the mode also weighs the question
    assert render.meaning(["quoted", "supported"]) == m["HYBRID"]
    assert render.meaning(["supported", "unsupported"]) == m["UNGROUNDED"] and render.meaning([]) == ""
    # An answer recorded before claims carried `support`: read from its strategy.
    old = [{"verified": True, "strategy": "span"}, {"verified": True, "strategy": "paraphrase"}, {"verified": False}]
    assert [render.support_of(c) for c in old] == ["quoted", "supported", "unsupported"]


@pytest.fixture
def handbook(database_url, embedder, make_repo, write_config, monkeypatch):
    repo = make_repo(DOCS, name="handbook")
    config = write_config([{"name": "handbook", "type": "git", "repo": str(repo), "globs": ["docs/*.md"]}])
    ingest_source(IngestContext(load_settings(config), url=database_url, embedder=embedder), "handbook")
    with LLMDouble() as llm:
        monkeypatch.setenv("DOCFORGE_LLM_BASE_URL", llm.base_url)
        monkeypatch.setenv("DOCFORGE_LLM_MODEL", "scripted")
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        yield config, llm


def three_kinds(blocks) -> str:
    p = next(b.pointer for b in blocks if "blue-green" in b.text)
    return "\n".join(
        [
            f"Releases go out with blue-green deployments through ArgoCD. [{p}]",  # quoted
            f"Blue-green deployments are how releases go out [{p}]",  # reworded
            f"Releases go out with canary deployments through Spinnaker. [{p}]",  # not supported
        ]
    )


def test_the_cli_at_80_columns_marks_each_kind_and_prints_the_legend_under_them(handbook):
    config, llm = handbook
    llm.answer = three_kinds
    res = CliRunner().invoke(main, ["ask", "How do releases go out?", "-c", str(config)], env={"COLUMNS": "80"})
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    assert all(cell_len(line) <= 80 for line in lines), max(lines, key=cell_len)
    marked = [i for i, line in enumerate(lines) if line[:2] in ("✓ ", "≈ ", "✗ ")]
    assert [lines[i][:11] for i in marked] == ["✓ Releases ", "≈ (reworded", "✗ (not supp"]
    assert re.match(r"≈ \(reworded, p=0\.\d\d\) Blue-green", lines[marked[1]])  # with its probability
    wrapped = lines[marked[-1] + 1]  # the unsupported line wraps under its text, not under its mark
    assert wrapped.startswith("  ") and not wrapped.startswith("   ")
    legend = lines[marked[-1] + 2 : marked[-1] + 5]  # right under the marked lines: one mark a row
    assert legend == [
        "Marks: ✓ quoted word for word from the cited evidence",
        "       ≈ reworded; the cited evidence supports it (p: how likely it does)",
        "       ✗ not supported by the cited evidence: do not rely on it",
    ]
    # How the evidence backs it, and whether it answers the question: two statements, two lines.
    mode = next(i for i, line in enumerate(lines) if line.startswith("UNGROUNDED: some lines"))
    assert lines[mode + 1].startswith("Answers the question: ")
    assert any(line.startswith("answer ") and "docforge answers verify" in line for line in lines)

    res = CliRunner().invoke(main, ["ask", "How do releases go out?", "-c", str(config), "--json"])
    out = json.loads(res.stdout)
    assert [c["support"] for c in out["claims"]] == ["quoted", "supported", "unsupported"]
    assert all("probability" in c for c in out["claims"])
    assert out["answer"].splitlines()[-1].startswith("Marks: ✓ quoted")


def test_a_reworded_claims_probability_reads_at_80_columns():
    from rich.console import Console

    from docforge.cli.ask import answer_block
    from docforge.cli.render import emit

    console = Console(file=io.StringIO(), width=80)
    for part in answer_block(render.render([QUOTED, REWORDED, UNSUPPORTED], "UNGROUNDED", False)):
        emit(console, part)
    lines = console.file.getvalue().splitlines()
    assert "≈ (reworded, p=0.91) Vault holds the secrets. [E1]" in lines
    assert "       ≈ reworded; the cited evidence supports it (p: how likely it does)" in lines
    assert all(cell_len(line) <= 80 for line in lines)


def test_mcp_answers_carry_the_marks_the_legend_and_each_claims_support(handbook, database_url, embedder):
    import anyio

    from docforge.servers import LocalSearch
    from docforge.servers.ask import LocalAsk
    from docforge.servers.mcp import ASK_DESCRIPTION, build_mcp
    from pipeline.answers import Answerer
    from pipeline.query import Searcher

    config, llm = handbook
    llm.answer = three_kinds
    settings = load_settings(config)
    with Searcher(settings, url=database_url, embedder=embedder, reranker=None) as searcher:
        answerer = Answerer(settings, searcher=searcher)
        server = build_mcp(LocalSearch(searcher), ask=LocalAsk(answerer))
        args = {"question": "How do releases go out?", "user_name": "ada", "team_name": "platform"}
        res = anyio.run(server.call_tool, "ask_documentation", args)
        answerer.close()
    out = res.structured_content
    assert [c["support"] for c in out["claims"]] == ["quoted", "supported", "unsupported"]
    assert [line[:2] for line in out["answer"].splitlines()[1:4]] == ["✓ ", "≈ ", "✗ "]
    assert out["answer"].splitlines()[-1].startswith("Marks: ")
    assert all(w in ASK_DESCRIPTION for w in ("✓ quoted", "≈ reworded", "✗ not supported", "addresses_question"))

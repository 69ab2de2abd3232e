"""What a person reads when the extractive answerer is not sure: one plain header line, then each candidate
passage its own numbered block under where it is and its citation, a blank line between; ✓ says quoted,
"answers the question" is said apart; the same structure in JSON (`candidates`), through MCP and (in
tests/test_web.py) on the page. Made-up corpora; parameters that make every answer unsure (or sure)."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner
from rich.cells import cell_len

from docforge.cli import main
from pipeline.answers import params as fitted
from pipeline.answers import render
from pipeline.answers.model import Claim, Evidence
from pipeline.config import load_settings
from pipeline.ingest import IngestContext, ingest_source

RELAY = {
    "docs/limits.md": (
        "# Relay limits\n\n## size_cap\n\nsize_cap (default: 40M)\n\nThe largest message the relay accepts; "
        "a bigger one is refused at the end of its data.\n\n## line_cap\n\nline_cap (default: 998)\n\n"
        "The longest line the relay accepts in a message body, in bytes.\n"
    ),
    "docs/queue.md": (
        "# The queue\n\n## Retries\n\nA message that cannot be delivered waits in the queue and is retried "
        "every 15 minutes; after 5 days it bounces to its sender.\n"
    ),
}
QUESTION = "how big may a message be?"


def unsure_params(tmp_path: Path, sure: float = 1.0) -> Path:
    """The shipped parameters with `sure` moved (1.0: never sure; 0.0: always) and nothing abstaining."""
    raw = json.loads(fitted.file_for(fitted.DEFAULT_MODEL).read_text())
    out = tmp_path / f"params-{sure}.json"
    out.write_text(json.dumps(raw | {"sure": sure, "threshold": 0.0, "floor": 0.0}))
    return out


@pytest.fixture
def relay(database_url, embedder, make_repo, write_config, tmp_path):
    """A made-up relay manual, ingested; its config with parameters under which no answer is sure."""
    repo = make_repo(RELAY, name="relay")
    source = [{"name": "relay", "type": "git", "repo": str(repo), "globs": ["docs/*.md"]}]
    config = write_config(source, answers={"params": str(unsure_params(tmp_path))})
    ingest_source(IngestContext(load_settings(config), url=database_url, embedder=embedder), "relay")
    return config


def _ev(pointer: str, section: str) -> Evidence:
    return Evidence(pointer, "h" + pointer, "c" + pointer, "", "Relay limits", section, "", "relay:x", "relay", 0, 1.0)


def test_each_candidate_is_a_numbered_block_under_where_it_is():
    claims = [
        Claim("size_cap (default: 40M)", ("E1",), True, "quote"),
        Claim("The largest message the relay accepts.", ("E1",), True, "quote"),
        Claim("The longest line the relay accepts.", ("E2",), True, "span"),
    ]
    evidence = [_ev("E1", "Relay limits > size_cap"), _ev("E2", "Relay limits > line_cap")]
    text = render.render(claims, "STRICT", False, "not sure: confidence 0.40 …", render.places(evidence))
    assert text.splitlines() == [
        render.UNSURE_HEAD,
        "",
        "1. size_cap — Relay limits [E1]",
        "   ✓ size_cap (default: 40M)",
        "   ✓ The largest message the relay accepts.",
        "",
        "2. line_cap — Relay limits [E2]",
        "   ✓ The longest line the relay accepts.",
        "",
        f"Marks: {render.LEGEND['quoted']}.",
        render.UNSURE_NEXT,
    ]
    # No internal threshold and the confidence not said in the text: the reason is a statement of its own.
    assert "<" not in text and "0.40" not in text
    # A sure answer reads as before: one marked line a claim, its pointer after it, the legend.
    assert render.render(claims[:1], "STRICT", False, "", render.places(evidence)).splitlines() == [
        "✓ size_cap (default: 40M) [E1]",
        f"Marks: {render.LEGEND['quoted']}.",
    ]
    # JSON: one candidate a block, best first, with where it is, its pointer, its lines and its confidence.
    got = render.candidates(claims, evidence, {"E1": 0.61, "E2": 0.2})
    assert [(c.citation, c.section, c.text, c.confidence) for c in got] == [
        ("E1", "Relay limits > size_cap", "size_cap (default: 40M)\nThe largest message the relay accepts.", 0.61),
        ("E2", "Relay limits > line_cap", "The longest line the relay accepts.", 0.2),
    ]


def test_a_place_is_its_last_heading_then_its_title_when_that_says_more():
    assert render.place("Relay limits", "Relay limits > size_cap") == "size_cap — Relay limits"
    assert render.place("Relay limits", "Relay limits") == "Relay limits"
    assert render.place("Relay limits", "") == "Relay limits"
    assert render.place("", "A > B") == "B"
    assert render.place("T", "A >  x   y") == "x y — T"  # whitespace folded: one line


def _blocks(lines: list[str]) -> list[list[str]]:
    """The numbered blocks of an unsure answer as the CLI prints it: a heading and the lines under it."""
    out: list[list[str]] = []
    for line in lines:
        if re.match(r"\d+\. ", line):
            out.append([line])
        elif out and line.startswith("   ") and len(out[-1]) and not line.startswith("Marks"):
            out[-1].append(line)
        elif out and out[-1][-1:] != [""]:
            out[-1].append("")  # the block ended
    return [[x for x in b if x] for b in out]


def test_the_cli_at_80_columns_shows_each_candidate_apart(relay):
    res = CliRunner().invoke(main, ["ask", QUESTION, "-c", str(relay)], env={"COLUMNS": "80"})
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    assert all(cell_len(line) <= 80 for line in lines), max(lines, key=cell_len)
    assert lines[0] == render.UNSURE_HEAD and lines[1] == ""  # one plain header line, then the blocks
    head = [i for i, line in enumerate(lines) if re.match(r"\d+\. ", line)]
    assert 2 <= len(head) <= 3 and [lines[i][:3] for i in head] == [f"{n}. " for n in range(1, len(head) + 1)]
    assert all(lines[i - 1] == "" for i in head)  # a blank line before each block
    places = [re.fullmatch(r"\d+\. (.+) \[(E\d+)\]", lines[i]) for i in head]
    assert all(places) and len({m[1] for m in places}) == len(places)  # each from its own section
    for block in _blocks(lines[: lines.index(next(ln for ln in lines if ln.startswith("Marks:")))]):
        assert block[1].startswith("   ✓ ")  # its lines under its heading, marked
        assert all(ln.startswith(("   ✓ ", "     ")) for ln in block[1:]), block  # wrapped under the text
        assert not any("[E" in ln for ln in block[1:])  # the citation is the heading's
    marks = lines.index(f"Marks: {render.LEGEND['quoted']}")
    assert lines[marks + 1] == render.UNSURE_NEXT  # what to do next, right under the legend
    flat = " ".join(res.output.split())
    # Quoted and answering are two statements; the reason once, no internal threshold.
    assert "STRICT: every line is quoted from the cited evidence. Answers the question: not sure (confidence" in flat
    assert re.search(r"not sure \(confidence 0\.\d\d that (one of these \d passages|the first passage) holds", flat)
    assert " < " not in flat and "perhaps not" not in flat
    assert f"More passages: docforge search '{QUESTION}'" in flat  # where else to look, as a command
    assert flat.count("Citations") == 1 and all(f"[{m[2]}] " in flat.split("Citations")[1] for m in places)
    # The recorded answer, candidates and their places included, passes its provenance check.
    answer_id = re.search(r"docforge answers verify (\w+)", flat)[1]
    check = CliRunner().invoke(main, ["answers", "verify", answer_id, "-c", str(relay)])
    assert check.exit_code == 0 and "stages match" in check.output, check.output


def test_json_carries_the_candidates_beside_the_fields_it_had(relay):
    res = CliRunner().invoke(main, ["ask", QUESTION, "-c", str(relay), "--json"])
    out = json.loads(res.stdout)
    assert out["addresses_question"] is False and out["addresses_reason"].startswith("not sure: confidence ")
    assert {"answer", "claims", "citations", "confidence", "audit_mode"} <= out.keys()  # kept as they were
    cands = out["candidates"]
    assert 2 <= len(cands) <= 3
    assert all(set(c) == {"citation", "title", "section", "url", "text", "confidence"} for c in cands)
    cited = {c["pointer"]: c for c in out["citations"]}
    for c in cands:
        assert cited[c["citation"]]["section"] == c["section"] and 0.0 <= c["confidence"] <= 1.0
        lines = [k["text"] for k in out["claims"] if k["pointers"] == [c["citation"]]]
        assert c["text"].splitlines() == lines  # its lines, as the claims quote them
    assert len({(c["title"], c["section"]) for c in cands}) == len(cands)
    assert out["answer"].splitlines()[0] == render.UNSURE_HEAD


def test_a_sure_answer_offers_no_candidates(relay, tmp_path):
    config = Path(relay)
    raw = config.read_text().replace(str(unsure_params(tmp_path)), str(unsure_params(tmp_path, sure=0.0)))
    config.write_text(raw)
    res = CliRunner().invoke(main, ["ask", QUESTION, "-c", str(config), "--json"])
    out = json.loads(res.stdout)
    assert out["addresses_question"] is True and out["candidates"] == []
    assert render.UNSURE_HEAD not in out["answer"] and out["answer"].startswith("✓ ")
    res = CliRunner().invoke(main, ["ask", QUESTION, "-c", str(config)], env={"COLUMNS": "80"})
    assert "Answers the question: yes." in res.output and not re.search(r"^\d+\. ", res.output, re.M)


def test_mcp_gives_the_candidates_and_says_how_to_read_them(relay, database_url, embedder):
    import anyio

    from docforge.servers import LocalSearch
    from docforge.servers.ask import LocalAsk
    from docforge.servers.mcp import ASK_DESCRIPTION, build_mcp
    from pipeline.answers import Answerer
    from pipeline.query import Searcher

    settings = load_settings(relay)
    with Searcher(settings, url=database_url, embedder=embedder, reranker=None) as searcher:
        answerer = Answerer(settings, searcher=searcher, llm=None)
        server = build_mcp(LocalSearch(searcher), ask=LocalAsk(answerer))
        args = {"question": QUESTION, "user_name": "ada", "team_name": "mail"}
        res = anyio.run(server.call_tool, "ask_documentation", args)
        answerer.close()
    out = res.structured_content
    text = out["answer"].splitlines()
    assert text[0] == render.UNSURE_HEAD and text[-1] == render.UNSURE_NEXT
    heads = [ln for ln in text if re.match(r"\d+\. .+ \[E\d+\]$", ln)]
    assert [h.rsplit("[", 1)[1] for h in heads] == [f"{c['citation']}]" for c in out["candidates"]]
    assert all(w in ASK_DESCRIPTION for w in ("Not sure this answers it", "candidates", "not an answer"))


def test_a_restricted_caller_gets_the_candidates_without_the_line_models_scores(relay, database_url, embedder):
    """Each candidate's confidence is the line model's, which reads retrieval scores: left out for a caller
    without full access, as its trace leaves them out (docs/security.md); the candidates stay."""
    from pipeline.access import FULL_ACCESS, Principal
    from pipeline.answers import Answerer
    from pipeline.query import Searcher

    settings = load_settings(relay)
    searcher = Searcher(settings, url=database_url, embedder=embedder, reranker=None)
    with searcher, Answerer(settings, searcher=searcher, llm=None) as answerer:
        bob = answerer.ask(QUESTION, use_cache=False, reader=Principal("bob@example.com", frozenset({"eng"})))
        admin = answerer.ask(QUESTION, use_cache=False, reader=FULL_ACCESS)
    assert bob.candidates and [c.confidence for c in bob.candidates] == [None] * len(bob.candidates)
    assert [c.citation for c in bob.candidates] == [c.citation for c in admin.candidates]
    assert all(isinstance(c.confidence, float) for c in admin.candidates)


@pytest.mark.parametrize(
    "question",
    ["what if I don't give it a timeout?", "plain words", "it's $HOME", 'a "quoted" word', "wait! don't"],
)
def test_the_search_hint_is_one_shell_word_that_reads_back_as_asked(question):
    """The unsure reply's `docforge search …` hint: pasted into a shell it searches the question as asked;
    an apostrophe alone is written in double quotes, not as 'don'"'"'t'."""
    from docforge.cli.ask import shell_word

    word = shell_word(question)
    assert subprocess.run(["bash", "-c", f"printf %s {word}"], capture_output=True, text=True).stdout == question
    if question == "what if I don't give it a timeout?":
        assert word == '"what if I don\'t give it a timeout?"'


# Three short sections, each its own chunk (a small chunk budget): search joins the best one's neighbours.
MANUAL = {
    "docs/manual.md": (
        "# Relay manual\n\n## Limits\n\nThe relay refuses a message larger than its size cap; the size cap "
        "defaults to forty megabytes for every listener.\n\n## Lines\n\nThe longest line the relay accepts in "
        "a message body is 998 bytes, as the mail standard says.\n\n## Queue\n\nA message that cannot be "
        "delivered waits in the queue and is retried every 15 minutes.\n"
    )
}


def test_a_hit_joining_sections_is_cited_section_by_section(database_url, embedder, make_repo, write_config):
    """Search joins a document's neighbouring chunks into one hit under its best chunk's section; the
    answer layer splits it at the sections' edges, so a neighbour's line is cited under its own heading."""
    from pipeline.answers import retrieve
    from pipeline.query import Searcher

    repo = make_repo(MANUAL, name="manual")
    source = [{"name": "manual", "type": "git", "repo": str(repo), "globs": ["docs/*.md"]}]
    settings = load_settings(write_config(source, chunking={"max_tokens": 32}))
    ingest_source(IngestContext(settings, url=database_url, embedder=embedder), "manual")
    with Searcher(settings, url=database_url, embedder=embedder, reranker=None) as searcher:
        hits = retrieve.search(searcher, QUESTION, retrieve.Scope(), 5, per_doc=0)
        whole = next(h for h in hits if len(h.chunk_ids) > 1)  # a hit joining neighbours
        with searcher.connection() as conn:
            split = retrieve.by_section(conn, hits, retrieve.Scope().reader)
    parts = [h for h in split if set(h.chunk_ids) <= set(whole.chunk_ids)]
    assert parts[0].chunk_id == whole.chunk_id and parts[0].section == whole.section  # the best chunk's first
    assert sorted(i for h in parts for i in h.chunk_ids) == sorted(whole.chunk_ids)
    assert len({h.section for h in parts}) == len(parts) > 1 and all(h.score == whole.score for h in parts)
    lines = next(h for h in parts if "longest line" in h.text)
    assert lines.section.endswith("Lines") and "size cap" not in lines.text and lines.text in whole.text
    assert all(0 <= b.start < b.end <= len(h.text) for h in parts for b in h.blocks)  # its own blocks
    assert [h for h in split if h.chunk_id not in whole.chunk_ids] == [h for h in hits if h is not whole]


def test_each_candidate_of_a_manual_with_short_sections_is_under_its_own_heading(
    database_url, embedder, make_repo, write_config, tmp_path
):
    repo = make_repo(MANUAL, name="manual")
    source = [{"name": "manual", "type": "git", "repo": str(repo), "globs": ["docs/*.md"]}]
    config = write_config(source, chunking={"max_tokens": 32}, answers={"params": str(unsure_params(tmp_path))})
    ingest_source(IngestContext(load_settings(config), url=database_url, embedder=embedder), "manual")
    res = CliRunner().invoke(main, ["ask", "how long may a line of a message be?", "-c", str(config), "--json"])
    cands = json.loads(res.stdout)["candidates"]
    assert len(cands) >= 2
    heads = {"size cap": "Limits", "longest line": "Lines", "retried": "Queue"}
    for c in cands:  # each passage's words sit under the heading it is cited under
        assert [h for w, h in heads.items() if w in c["text"]] == [c["section"].rsplit(" > ", 1)[-1]], c

"""What a person reads at 80 columns: the ingest summary's chunk figures, a progress stage's end, the
gaps report's wrapped lines and an unsure answer's note (each made here, not read from a corpus)."""

from __future__ import annotations

import io
from types import SimpleNamespace

from rich.console import Console

from docforge.cli import gaps
from docforge.cli.ask import _print
from docforge.cli.ingest import CHUNK_COUNTS, print_report
from docforge.cli.progress import LineDisplay
from pipeline.answers import render
from pipeline.answers.model import Answer, Claim


def _summary(**counts: int) -> str:
    checks = [{"name": "c", "passed": True, "severity": "ERROR", "description": ""}]
    report = {"handbook": {**counts, "checks": checks, "failures": [], "wall_seconds": 1.0}}
    console = Console(width=80, record=True)
    print_report(console, report)
    return console.export_text()


def test_a_one_line_edits_chunk_figures_say_what_each_counts():
    """One edited file of 6 chunks: 1 unchanged (kept), 5 written, 4 old ones removed; 4 new texts
    embedded, 2 vectors reused. The note under the table says which figures add up to what."""
    text = _summary(files_updated=1, chunks_indexed=5, chunks_deleted=4, chunks_embedded=4, chunks_reused=2)
    assert max(len(line) for line in text.splitlines()) <= 80
    for cell in ("5 written", "4 removed", "4 embedded", "2 reused"):
        assert cell in text, cell
    flat = " ".join(text.split())
    assert "written − removed is the index's change" in flat
    assert "embedded + reused are the changed files' chunks" in flat
    assert [label for label, _ in CHUNK_COUNTS] == ["written", "removed", "embedded", "reused"]


def test_a_run_that_touched_no_chunk_has_no_chunk_note():
    assert "written −" not in _summary(files_unchanged=3)


def test_a_progress_line_that_says_nothing_new_is_not_printed():
    """The first block's report comes while the writer still commits it (0 done again, an interval later),
    and the end is reported again once the last block settled: each line shows once."""
    out = io.StringIO()
    times = iter(range(0, 1000, 10))  # every call an interval after the last
    show = LineDisplay(out, interval_s=5, clock=lambda: float(next(times)))
    show.begin_source("handbook")
    for done in (0, 0, 4, 4):
        show("embeddings", done, 4)
    lines = out.getvalue().splitlines()
    assert [ln.split(", ")[1].split(" (")[0] for ln in lines] == ["embeddings 0/4 chunks", "embeddings 4/4 chunks"]
    show("embeddings", 7, 7)  # a stage run again (another generation): its new end shows too
    assert out.getvalue().splitlines()[-1].split(", ")[1].startswith("embeddings 7/7 chunks")


def test_gaps_continuation_lines_hang_under_their_text():
    long = "how do I " + " ".join(f"configure the frobnicator number {i}" for i in range(8)) + "?"
    key = "handbook:" + "/".join(f"section-{i}" for i in range(12)) + ".md"
    group = SimpleNamespace(
        representative=long,
        count=3,
        abstained=1,
        unsure=1,
        rephrased=0,
        questions=2,
        askers=1,
        first_asked="2026-01-01T00:00:00+00:00",
        last_asked="2026-01-02T00:00:00+00:00",
        id="g1",
        wordings=[long, "also " + long],
        closest=[SimpleNamespace(doc_key=key)],
    )
    report = SimpleNamespace(
        days=90,
        asks=3,
        gap_asks=3,
        searches=0,
        groups=[group],
        weak_searches=[SimpleNamespace(count=12, query=long, best=None)],
        most_cited=[SimpleNamespace(citations=7, doc_key=key)],
        never_retrieved=[],
        never_retrieved_total=0,
        stale=[],
    )
    lines = gaps.lines(report)
    assert max(len(line) for line in lines) <= 80
    heading = lines.index(next(ln for ln in lines if ln.startswith(" 1. how do I")))
    assert lines[heading + 1].startswith("    ") and lines[heading + 1][4] != " "  # under the question
    body = [ln for ln in lines[1:] if ln and not ln.startswith(("Unanswered", "Searches", "Most", "Never", "Cited"))]
    assert all(ln.startswith(" ") for ln in body if not ln.startswith(" 1. ")), body
    cited = lines.index("Most cited documents")
    assert lines[cited + 1].startswith("      7  handbook:") and lines[cited + 2].startswith("         ")


def _unsure_answer(why: str, reason: str) -> Answer:
    claims = [
        Claim("Rotate the logs weekly. [E1]", ("E1",), True, "quote"),
        Claim("Keep four. [E2]", ("E2",), True, "quote"),
    ]
    return Answer(
        question="how often are logs rotated?",
        answer=render.render(claims, "STRICT", False, why),
        claims=[c.as_dict() for c in claims],
        citations=[],
        sources=[],
        audit_mode="STRICT",
        addresses_question=False,
        addresses_reason=reason,
        candidates=render.candidates(claims, [], {}) if why else [],
        confidence=0.3,
        intent="factual",
        iterations=1,
        model="extractive",
    )


def test_an_unsure_answer_says_why_once(capsys):
    """An answer below the fitted `sure` opens with one plain line, its candidates numbered; the line that
    says whether it answers the question gives the reason, once, with no internal threshold."""
    why = "not sure: confidence 0.30 that one of these 2 passages holds the answer"
    _print(_unsure_answer(why, why), trace=False)
    text = capsys.readouterr().out
    assert max(len(line) for line in text.splitlines()) <= 80
    assert text.splitlines()[0] == render.UNSURE_HEAD
    flat = " ".join(text.split())
    assert flat.count("0.30 that one of these 2 passages") == 1, text
    assert "Answers the question: not sure (confidence 0.30 that one of these 2 passages holds the answer)." in flat


def test_a_reason_the_answer_does_not_hold_is_said_beside_perhaps_not(capsys):
    _print(_unsure_answer("", "the evidence names no port"), trace=False)
    assert "Answers the question: perhaps not (the evidence names no port)." in " ".join(
        capsys.readouterr().out.split()
    )

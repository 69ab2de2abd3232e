"""`docforge ask`: a grounded answer, its claims verified against the evidence they cite."""

from __future__ import annotations

import json
import re

import click

from docforge.cli.options import config_option, filter_option, json_option, mode_option


@click.command("ask")
@click.argument("question")
@config_option
@filter_option('Only evidence matching this filter expression, e.g. \'{"source": "handbook"}\' (docs/query.md).')
@click.option("--filter-repo", metavar="TEXT", help="Only repositories whose path or URL contains TEXT.")
@mode_option("How evidence is searched.")
@click.option(
    "--max-iterations",
    type=click.IntRange(1, 10),
    default=None,
    help="Retrieve/reason rounds at most (default: answers.max_iterations, 3).",
)
@click.option("--no-cache", is_flag=True, help="Do not answer from the cache (the fresh answer is still recorded).")
@click.option("--trace", is_flag=True, help="Show every step of the loop with its query, decision and counts.")
@json_option
def command(
    question: str,
    config: str,
    filters: dict | None,
    filter_repo: str | None,
    mode: str,
    max_iterations: int | None,
    no_cache: bool,
    trace: bool,
    as_json: bool,
) -> None:
    """Answer a question from the indexed documentation, every claim cited and checked.

    With an LLM configured (llm: in sources.yml, key in DOCFORGE_LLM_API_KEY or
    OPENAI_API_KEY) the answer is written by the model; without one it is
    extractive: the best-supported sentences of the evidence, verbatim.
    Each claim is marked: ✓ quoted word for word from the cited evidence,
    ≈ reworded and supported (with the probability that the evidence
    supports it), ✗ not supported (never shown as fact); the legend is
    printed under them. The answer is STRICT (all quoted), HYBRID (all
    supported, some reworded) or UNGROUNDED; whether it answers the
    question is said apart. Check a recorded answer's provenance with
    `docforge answers verify ID`.

    \b
    Examples:
      docforge ask "How do I rotate the database password?"
      docforge ask "what changed in the deploy process?" --filter-repo handbook --trace
      docforge ask "..." --json | jq .audit_mode
    """
    import threading

    from pipeline.config import load_settings
    from pipeline.query import Searcher

    settings = load_settings(config)
    searcher = Searcher(settings, keep_queries=True)  # a question asked before loads no model for it
    # The question's vector (a new question: the model loading) in the background, while the answer
    # layer imports: the search it runs first then finds it ready.
    warm = threading.Thread(target=_warm, args=(searcher, question), daemon=True, name="docforge-warm")
    warm.start()
    try:
        answer = _ask(settings, searcher, question, filters, filter_repo, mode, max_iterations, no_cache, trace)
    finally:
        # Exiting while the model loads in native code aborts the process ("terminate called ...",
        # SIGABRT): it would hide an error, and end a cached answer (which needs no model) with exit
        # 134. Let the load finish first.
        warm.join(timeout=60)
    if as_json:
        click.echo(json.dumps(answer.model_dump(mode="json", exclude_none=False), indent=2, ensure_ascii=False))
        return
    _print(answer, trace)


def _ask(settings, searcher, question, filters, filter_repo, mode, max_iterations, no_cache, trace):
    """The answer, asked in this process (the usage record written); an empty store says what to run."""
    from pipeline.answers import Answerer
    from pipeline.query.filters import with_repo

    with searcher, Answerer(settings, searcher=searcher) as answerer:
        answer = answerer.ask(
            question,
            filters=with_repo(filters, filter_repo),
            mode=mode,
            max_iterations=max_iterations,
            use_cache=False if no_cache else None,
            trace=trace,
        )
        if not answer.citations:
            from docforge.cli.search import require_indexed

            require_indexed(answerer.searcher)  # an empty store: say what to run
        from pipeline.usage import for_ask, record_once

        ms = answer.latency_ms
        record_once(
            answerer.searcher.url, settings.usage, lambda c: for_ask(c, "cli", "local", question, mode, answer, ms)
        )
    return answer


def _warm(searcher, question: str) -> None:
    try:
        searcher.query_vector(question)
    except Exception:  # noqa: BLE001 (the ask itself meets the same error and says it)
        return


_MODE_STYLE = {"STRICT": "bold green", "HYBRID": "bold yellow", "UNGROUNDED": "bold red"}
_MARK_STYLE = {"✓": "green", "≈": "yellow", "✗": "red"}  # pipeline.answers.render.MARKS


def answer_block(text: str) -> list:
    """The rendered answer as a terminal shows it: each marked line with its mark in a column of its own
    (a hanging indent however the line wraps), a qualifier in the mark's colour, the legend last; an
    unsure answer's candidates each a numbered block, its lines indented under its heading. Marks and
    words tell the three kinds apart without colour (a pipe, NO_COLOR)."""
    from rich.padding import Padding
    from rich.text import Text

    from pipeline.answers.render import CANDIDATE_INDENT, LEGEND_PREFIX
    from pipeline.printable import printable

    out: list = []
    for line in map(printable, text.splitlines()):  # quoted text is data: its controls shown, not obeyed
        if line.startswith(LEGEND_PREFIX):
            out.append(_legend(line))
        elif line.startswith(CANDIDATE_INDENT) and (marked := _marked(line[len(CANDIDATE_INDENT) :])):
            out.append(Padding(marked, (0, 0, 0, len(CANDIDATE_INDENT))))  # a candidate's line, under its heading
        elif marked := _marked(line):
            out.append(marked)
        elif number := _CANDIDATE.match(line):  # "2. where it is [E2]": the number in a column of its own
            grid = hanging()
            grid.add_row(Text(number[1]), Text(number[2], style="bold"))
            out.append(grid)
        else:
            out.append(Text(line, style="bold red" if line.startswith("UNGROUNDED") else ""))
    return out


_CANDIDATE = re.compile(r"(\d+\.) (.+)")


def _marked(line: str):
    """A marked line as a hanging grid (its mark, then its text), or None for any other line."""
    from rich.text import Text

    mark, rest = line[:1], line[2:]
    if mark not in _MARK_STYLE or line[1:2] != " ":
        return None
    body = Text(rest)
    if mark != "✓" and rest.startswith("(") and (end := rest.find(") ")) > 0:  # (reworded, p=…) / (not supported: …)
        body.stylize(_MARK_STYLE[mark], 0, end + 1)
    grid = hanging()
    grid.add_row(Text(mark, style=f"bold {_MARK_STYLE[mark]}"), body)
    return grid


def _legend(line: str):
    """`Marks: …` one mark a row, under the label."""
    from rich.text import Text

    from pipeline.answers.render import LEGEND_PREFIX, LEGEND_SEP

    grid = hanging()
    for i, said in enumerate(line[len(LEGEND_PREFIX) :].removesuffix(".").split(LEGEND_SEP)):
        sign, _, meaning = said.partition(" ")
        row = Text.assemble((sign, f"bold {_MARK_STYLE.get(sign, '')}".strip()), " ", meaning)
        grid.add_row(Text(LEGEND_PREFIX.strip() if i == 0 else "", style="dim"), row)
    return grid


def hanging(fixed: int = 1):
    """Columns that never wrap (a mark, a label), then one whose text wraps under itself, never under them."""
    from rich.table import Table

    grid = Table.grid(padding=(0, 1))
    for _ in range(fixed):
        grid.add_column(no_wrap=True)
    grid.add_column(overflow="fold", ratio=1)  # the rest of the width: the fixed columns keep theirs
    return grid


def statements(answer) -> list[str]:
    """What the answer is, said apart: how the evidence backs it (the audit mode), then whether it answers
    the question; rich markup, document text escaped."""
    from rich.markup import escape

    from pipeline.answers.render import meaning, support_of

    out = []
    if not answer.abstained and (said := meaning([support_of(c) for c in answer.claims])):
        mode = answer.audit_mode
        out.append(f"[{_MODE_STYLE[mode]}]{mode}[/]: {said}.")
    if answer.addresses_question is True:
        out.append("Answers the question: yes.")
    elif answer.addresses_question is False and answer.candidates:  # the passages offered instead
        why = answer.addresses_reason.removeprefix("not sure: ")
        out.append(f"Answers the question: [yellow]not sure[/]{f' ({escape(why)})' if why else ''}.")
    elif answer.addresses_question is False:
        why = answer.addresses_reason.removeprefix("deflection: ")
        out.append(f"Answers the question: [yellow]perhaps not[/]{f' ({escape(why)})' if why else ''}.")
    return out


def _print(answer, trace: bool) -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table
    from rich.text import Text

    import docforge.cli.render as render
    from pipeline.printable import printable

    console = Console()
    for part in answer_block(answer.answer):
        render.emit(console, part)
    if answer.abstained and answer.addresses_reason:
        console.print(f"Why: {escape(printable(answer.addresses_reason))}.")
        console.print("Try other words, or see what is indexed: docforge sources")
    console.print()
    for line in statements(answer):
        render.emit(console, Text.from_markup(line))
    if answer.candidates:  # not sure: where else to look, as a command to run
        render.emit(console, Text(f"More passages: docforge search {printable(shell_word(answer.question))}"))
    console.print(
        f"confidence {answer.confidence:.2f} · intent {answer.intent} · model {escape(answer.model)} · "
        f"cache {answer.cache} · {answer.latency_ms:.0f} ms"
    )
    if answer.answer_id:
        console.print(f"answer {answer.answer_id} · check it: docforge answers verify {answer.answer_id}")
    if answer.citations:
        from pipeline.query.hits import where

        console.print()
        console.print("Citations", style="bold")
        for c in answer.citations:
            cite = render.citation(c.doc_key, c.source, c.url, c.page)
            head = render.heading(where(c.title, c.section))
            render.emit(console, render.block(f"[{c.pointer}]", f"{c.score:.3f}", head, cite, width=console.width))
    if trace and answer.trace:
        table = Table("step", "ms", "detail", title="Trace")
        for s in answer.trace:
            detail = ", ".join(f"{k}={v}" for k, v in s.items() if k not in ("step", "ms") and v is not None)
            table.add_row(s["step"], f"{s['ms']:.1f}", escape(printable(detail)))
        console.print(table)


def shell_word(text: str) -> str:
    """`text` as one shell word a person can read: single quotes, or double quotes when it holds an
    apostrophe and nothing a double-quoted word expands ("don't" reads better than 'don'"'"'t')."""
    import shlex

    if "'" in text and not any(c in text for c in '"$`\\!'):
        return f'"{text}"'
    return shlex.quote(text)

"""`docforge ask`: a grounded answer, its claims verified against the evidence they cite."""

from __future__ import annotations

import json

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
    Claims are verified lexically: STRICT (all quoted), HYBRID (some
    paraphrased) or UNGROUNDED (not shown as fact).

    \b
    Examples:
      docforge ask "How do I rotate the database password?"
      docforge ask "what changed in the deploy process?" --filter-repo handbook --trace
      docforge ask "..." --json | jq .audit_mode
    """
    from pipeline.answers import Answerer
    from pipeline.config import load_settings
    from pipeline.query.filters import with_repo

    settings = load_settings(config)
    with Answerer(settings) as answerer:
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
    if as_json:
        click.echo(json.dumps(answer.model_dump(mode="json", exclude_none=False), indent=2, ensure_ascii=False))
        return
    _print(answer, trace)


_MODE_STYLE = {"STRICT": "bold green", "HYBRID": "bold yellow", "UNGROUNDED": "bold red"}


def _addresses(answer) -> str:
    """STRICT means quoted; whether it answers the question is said apart (the deflection check)."""
    if answer.addresses_question is False:
        return " [yellow](quoted, but may not answer the question)[/]"
    return " (answers the question)" if answer.addresses_question else ""


def _print(answer, trace: bool) -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    from pipeline.printable import printable

    console = Console()
    for line in answer.answer.splitlines():
        style = "green" if line.startswith("✓") else "red" if line.startswith(("✗", "UNGROUNDED")) else ""
        console.print(escape(printable(line)), style=style or None)
    if answer.abstained and answer.addresses_reason:
        console.print(f"Why: {escape(printable(answer.addresses_reason))}.")
        console.print("Try other words, or see what is indexed: docforge sources")
    console.print()
    console.print(
        f"[{_MODE_STYLE[answer.audit_mode]}]{answer.audit_mode}[/]{_addresses(answer)} · "
        f"confidence {answer.confidence:.2f} · "
        f"intent {answer.intent} · model {escape(answer.model)} · cache {answer.cache} · "
        f"{answer.latency_ms:.0f} ms · answer {answer.answer_id or '-'}"
    )
    if answer.citations:
        import docforge.cli.render as render
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

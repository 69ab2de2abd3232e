"""`docforge gaps`: what the documentation does not answer, from the usage records (docs/gaps.md)."""

from __future__ import annotations

import json
import textwrap

import click

from docforge.cli.options import config_option, json_option
from pipeline.printable import printable

WIDTH = 80


@click.command("gaps")
@config_option
@click.option(
    "--days",
    type=click.IntRange(1, 3650),
    default=None,
    help="The window, in days [default: usage.retention_days, 90].",
)
@json_option
def command(config: str, days: int | None, as_json: bool) -> None:
    """Questions the documentation fails, and pages nobody reaches.

    From what every ask and search recorded (usage: in sources.yml, off with
    DOCFORGE_USAGE__ENABLED=false): questions that abstained or were answered
    with low confidence, grouped by meaning, each with its count, when first
    and last asked, a representative wording and the documents closest to it;
    searches with no good hit; the documents cited most; documents never
    retrieved; documents cited often but unchanged for long.

    \b
    Examples:
      docforge gaps
      docforge gaps --days 7 --json | jq '.groups[0]'
    """
    from pipeline.config import load_settings
    from pipeline.query import Searcher
    from pipeline.usage import report

    with Searcher(load_settings(config)) as searcher:
        found = report(searcher, days)
    if as_json:
        click.echo(json.dumps(found.as_dict(), indent=2, ensure_ascii=False))
        return
    click.echo("\n".join(lines(found)))


def _wrap(text: str, indent: str = "   ", hang: int = 0) -> list[str]:
    """`text` within WIDTH, every line at `indent`; continuation lines `hang` further in, under the text
    after a number or a label (never at column 0); what a document or a caller wrote printable first."""
    rest = indent + " " * hang
    return textwrap.wrap(printable(text), WIDTH, initial_indent=indent, subsequent_indent=rest, break_on_hyphens=False)


def _how(grp) -> str:
    """How the group's asks went unanswered: "2 abstained, 1 unsure, 1 rephrased" (the rest: low confidence)."""
    parts = [f"{grp.abstained} abstained"]
    parts += [f"{n} {what}" for n, what in ((grp.unsure, "unsure"), (grp.rephrased, "rephrased")) if n]
    return ", ".join(parts)


def lines(g) -> list[str]:
    """The report as text, every line within 80 columns."""
    from docforge.cli.when import ago

    out = [
        f"Gaps over the last {g.days} days: {_n(g.asks, 'ask')} ({g.gap_asks} unanswered or unsure), "
        f"{_n(g.searches, 'search', 'searches')}"
    ]
    out = _wrap(out[0], "", hang=2)
    out += ["", f"Unanswered questions, by meaning ({_n(len(g.groups), 'group')})"]
    if not g.groups:
        out.append("   none: every question found a confident answer")
    for i, grp in enumerate(g.groups, 1):
        out += _wrap(f"{i:>2}. {grp.representative}", "", hang=4)  # under the question, not its number
        out += _wrap(
            f"{_n(grp.count, 'ask')} ({_how(grp)}), {_n(grp.questions, 'wording')}, "
            f"{_n(grp.askers, 'caller')}; "
            f"first {ago(grp.first_asked, exact=False)}, last {ago(grp.last_asked, exact=False)}; id {grp.id}"
        )
        for w in [w for w in grp.wordings if w != grp.representative][:2]:
            out += _wrap(f"also: {w}", "     ", hang=6)
        if grp.closest:
            out += _wrap("closest: " + ", ".join(d.doc_key for d in grp.closest), hang=9)
    out += ["", f"Searches with no good hit ({len(g.weak_searches)})"]
    out += [
        ln
        for w in g.weak_searches
        for ln in _wrap(f"{w.count}x {w.query} (best {_score(w.best)})", hang=len(f"{w.count}x "))
    ] or ["   none"]
    out += ["", "Most cited documents"]
    out += [ln for c in g.most_cited for ln in _wrap(f"{c.citations:>4}  {c.doc_key}", hang=6)] or ["   none yet"]
    out += ["", f"Never retrieved in the window ({g.never_retrieved_total} documents)"]
    out += [ln for k in g.never_retrieved for ln in _wrap(k)]
    if g.never_retrieved_total > len(g.never_retrieved):
        out.append(f"   … and {g.never_retrieved_total - len(g.never_retrieved)} more (--json lists the first 20)")
    out += ["", "Cited often, unchanged for long (check they are still true)"]
    out += [
        ln
        for c in g.stale
        for ln in _wrap(f"{c.citations:>4}  {c.doc_key} (changed {ago(c.last_changed, exact=False)})", hang=6)
    ] or ["   none"]
    return out


def _score(s: float | None) -> str:
    return "no hit" if s is None else f"{s:.2f}"


def _n(count: int, one: str, many: str | None = None) -> str:
    """ "1 ask", "2 asks": a count with its noun as a reader says it."""
    return f"{count} {one if count == 1 else many or one + 's'}"

"""`docforge ingest`: materialise the ingest assets for some or all sources."""

from __future__ import annotations

import json
import logging
import sys

import click

from docforge.cli import config_option, json_option
from pipeline.config import load_settings


@click.command("ingest")
@config_option
@click.option("--source", "-s", "names", multiple=True, metavar="NAME",
              help="Only this source (repeatable). Default: every source in the config.")
@json_option
def command(config: str, names: tuple[str, ...], as_json: bool) -> None:
    """Crawl, chunk, embed and index sources through Dagster, in-process.

    Only what changed since the last run is re-read and re-embedded. Exits 1
    if any source failed, even partially (the others are still indexed).

    \b
    Examples:
      docforge ingest
      docforge ingest -s handbook --json
    """
    settings = load_settings(config)
    wanted = list(names) or [s.name for s in settings.sources]
    for n in wanted:
        settings.source(n)  # unknown name: ConfigError before any work
    from orchestration.definitions import materialize_sources

    level = logging.getLevelName(logging.getLogger().getEffectiveLevel())
    from pipeline.progress import showing

    with showing():  # bars on a terminal, plain lines otherwise; stderr, so --json stays clean
        results = materialize_sources(str(settings.config_path), wanted, "CRITICAL" if level == "WARNING" else level)
    report = {n: (r.as_dict() if not isinstance(r, str) else {"error": r}) for n, r in results.items()}
    failed = [n for n, r in report.items() if "error" in r or r["failures"]]
    if as_json:
        click.echo(json.dumps({"sources": report, "totals": _totals(report), "failed": failed}, indent=2))
    else:
        _print(report)
    if failed:
        sys.exit(1)


def _totals(report: dict) -> dict:
    keys = [k for r in report.values() for k, v in r.items() if isinstance(v, int)]
    return {k: sum(r.get(k, 0) for r in report.values() if "error" not in r) for k in dict.fromkeys(keys)}


def _print(report: dict) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(stderr=False)
    table = Table("source", "added", "updated", "unchanged", "deleted", "failed", "embedded", "reused",
                  "chunks +/-", "seconds", title="docforge ingest")
    for name, r in report.items():
        if "error" in r:
            table.add_row(name, *[""] * 8, "[red]error[/red]")
            continue
        table.add_row(name, *(str(r[k]) for k in ("files_added", "files_updated", "files_unchanged",
                                                 "files_deleted", "files_failed", "chunks_embedded",
                                                 "chunks_reused")),
                      f"+{r['chunks_indexed']}/-{r['chunks_deleted']}", f"{sum(r['seconds'].values()):.1f}")
    console.print(table)
    for name, r in report.items():
        if "error" in r:
            console.print(f"[red]✗ {name}: {r['error']}[/red]")
        for f in r.get("failures", []):
            console.print(f"[yellow]! {f['key']} ({f['stage']}): {f['error']}[/yellow]")

"""`docforge ingest`: materialise the ingest assets, and run their asset checks, for some or all sources."""

from __future__ import annotations

import json
import logging
import sys
from typing import TYPE_CHECKING

import click

from docforge.cli.options import config_option, json_option
from pipeline.config import ADHOC_FILE, load_settings
from pipeline.errors import ConfigError, DocforgeError

if TYPE_CHECKING:  # the Dagster wiring costs seconds to import: only when a command runs it
    from orchestration.runs import SourceRun

# (label, IngestStats field): one line per non-zero count in the summary's cells.
FILE_COUNTS = (
    ("added", "files_added"),
    ("updated", "files_updated"),
    ("unchanged", "files_unchanged"),
    ("access updated", "files_access_updated"),  # who may read them changed: updated in place, not re-embedded
    ("deleted", "files_deleted"),
    ("skipped", "files_skipped"),
    ("failed", "files_failed"),
)
SKIPS_SHOWN = 10  # skipped files listed per source under the table (--json lists them all)
# Two sums, each stated under the table (CHUNKS_NOTE): the index's rows (written - removed = its change;
# an edited file's unchanged chunks are kept, neither written nor removed) and the changed files' chunks
# (each one's vector embedded, or reused from a chunk of the same text).
CHUNK_COUNTS = (
    ("written", "chunks_indexed"),  # chunk rows added or changed in the index
    ("removed", "chunks_deleted"),  # chunk rows gone from it (changed, or their file deleted)
    ("embedded", "chunks_embedded"),  # texts the model encoded (a text several chunks share, once)
    ("reused", "chunks_reused"),  # chunks whose text had a vector already
)
CHUNKS_NOTE = (
    "chunks: written − removed is the index's change (an edited file's unchanged chunks stay as they "
    "are); embedded + reused are the changed files' chunks (a text several share is embedded once)."
)


@click.command("ingest")
@config_option
@click.option(
    "--source",
    "-s",
    "names",
    multiple=True,
    metavar="NAME",
    help="Only this source (repeatable). Default: every source in the config.",
)
@json_option
@click.argument("paths", nargs=-1, type=click.Path(exists=True, file_okay=True, dir_okay=True))
def command(config: str | None, names: tuple[str, ...], as_json: bool, paths: tuple[str, ...]) -> None:
    """Crawl, chunk, embed, index and check sources through Dagster, in-process.

    Only what changed since the last run is re-read and re-embedded. Exits 1
    if any source failed, even partially (the others are still indexed), or
    if an ERROR-severity check failed.

    PATHS (directories or files) are indexed as sources of their own, named
    after them, without editing sources.yml: they are recorded in
    adhoc-sources.yml under $DOCFORGE_HOME, and ingesting a path again updates
    its source. Without a sources.yml, only they are known, and search, ask,
    status, sources and serve find them from any directory (no DOCFORGE_HOME:
    the nearest .docforge above holding them, else ~/.local/share/docforge).

    A directory source that nothing changed in is proven unchanged from its
    listing and the ledger and checked, without starting Dagster (unless
    DAGSTER_HOME is set: then every run is recorded in the UI).

    \b
    Examples:
      docforge ingest
      docforge ingest -s handbook --json
      docforge ingest ~/notes ./design.pdf
    """
    settings = _settings(config, paths)
    if paths:
        from pipeline.adhoc import register

        names = (*names, *register(settings, paths))
        settings = _settings(config, paths)
    wanted = list(dict.fromkeys(names)) or [s.name for s in settings.sources]
    if not wanted:  # exit 1: an empty run that "succeeds" hides a config that indexes nothing
        raise ConfigError(
            f"{settings.config_path}: no sources configured, nothing to ingest "
            "(add a `sources:` list, see README's 'Configure sources')"
        )
    for n in wanted:
        settings.source(n)  # unknown name: ConfigError before any work
    _say_waits(settings, wanted)  # before Dagster loads (seconds): a wait is named at once
    from orchestration.runs import settled_runs

    runs = settled_runs(str(settings.config_path), wanted)  # unchanged sources: proven and checked, no Dagster
    if rest := [n for n in wanted if n not in runs]:
        from docforge.cli.progress import showing
        from orchestration.cli_runs import materialize_sources

        level = logging.getLevelName(logging.getLogger().getEffectiveLevel())
        try:
            with showing():  # bars on a terminal, plain lines otherwise; stderr, so --json stays clean
                runs |= materialize_sources(
                    str(settings.config_path), rest, "CRITICAL" if level == "WARNING" else level
                )
        except KeyboardInterrupt:  # Ctrl-C/SIGTERM: a wait said it stopped (pool, lock); 128 + SIGINT
            sys.exit(130)
    report = {name: _source_report(runs[name]) for name in wanted}
    failed = [n for n, r in report.items() if "error" in r or r["failures"] or _failed_checks(r)]
    if as_json:
        click.echo(
            json.dumps({"sources": report, "totals": _totals(report), "failed": failed}, indent=2, ensure_ascii=False)
        )
    else:
        from rich.console import Console

        console = Console()
        print_report(console, report)
        if paths and settings.config_path is not None and settings.config_path.name == ADHOC_FILE:
            from rich.text import Text

            console.print(
                Text(
                    f"No sources.yml here: indexed into {settings.home}. `docforge search …`, `ask`, `status` "
                    "and `sources` find it from any directory.",
                    style="dim",
                )
            )
    if failed:
        sys.exit(1)


def _say_waits(settings, names: list[str]) -> None:
    """On stderr, each source of `names` another ingest runs now, and who (pid, since when): this run
    will wait for it (pipeline.store.locks says so again, every 10 s, while it does)."""
    from docforge.cli.running import holders
    from pipeline.printable import printable
    from pipeline.store.db import connect, store_url

    try:
        with connect(store_url(settings), vector=False) as conn:
            held = holders(conn, names)
    except DocforgeError:  # no store yet, or down: the run itself says so
        return
    for name, who in held.items():
        click.echo(printable(f"docforge: waiting for source {name!r}: another ingest runs it (Ctrl-C stops)"), err=True)
        click.echo(printable(f"  {who}"), err=True)


def _settings(config: str | None, paths: tuple[str, ...]):
    """sources.yml's settings (with the ad-hoc sources); with PATHS and no sources.yml, the ad-hoc file's
    (under `adhoc_home()`: found again from any directory by search, status, sources …)."""
    from pathlib import Path

    from pipeline.config import DEFAULT_CONFIG, adhoc_file, adhoc_home, env_settings

    if paths and not Path(config or DEFAULT_CONFIG).exists():
        f = adhoc_file(adhoc_home()).resolve()
        if f.exists():
            return load_settings(f)
        return env_settings().model_copy(update={"config_path": f, "home": f.parent})
    return load_settings(config)


def _source_report(run: SourceRun) -> dict:
    """One source's JSON: its IngestStats (or `error`), plus `checks`."""
    out = run.stats.as_dict() if run.stats is not None else {"error": run.error}
    out["checks"] = [c.as_dict() for c in run.checks]
    out["wall_seconds"] = round(run.wall_s, 3)
    return out


def _failed_checks(r: dict) -> list[dict]:
    return [c for c in r["checks"] if not c["passed"] and c["severity"] == "ERROR"]


def _totals(report: dict) -> dict:
    keys = [k for r in report.values() for k, v in r.items() if isinstance(v, int)]
    return {k: sum(r.get(k, 0) for r in report.values() if "error" not in r) for k in dict.fromkeys(keys)}


def _counts(r: dict, counts: tuple[tuple[str, str], ...]):
    """A cell: `N label` per non-zero count, one per line (`none` if all are zero); failures in red."""
    from rich.text import Text

    lines = [Text(f"{r[key]} {label}", style="red" if label == "failed" else "") for label, key in counts if r.get(key)]
    return Text("\n").join(lines) if lines else Text("none", style="dim")


def _checks_cell(r: dict):
    from rich.text import Text

    checks = r["checks"]
    if not checks:
        return Text("not run", style="dim")
    passed = sum(c["passed"] for c in checks)
    return Text(f"{passed}/{len(checks)} passed", style="green" if passed == len(checks) else "red")


def print_report(console, report: dict) -> None:
    """The summary: a row per source with the counts stacked in cells (fits 80 columns), then what went wrong.

    Every name, path and message is a rich `Text`, never markup: `[/x]` in a file name prints as is,
    and printable (pipeline.printable): a control character in one shows as `\\x1b`.
    """
    from rich.table import Table
    from rich.text import Text

    from pipeline.printable import printable

    wall = sum(r["wall_seconds"] for r in report.values())
    table = Table(title="docforge ingest", caption=f"{len(report)} source(s) in {wall:.1f} s", show_lines=True)
    table.add_column("source", overflow="fold")  # a long name wraps rather than losing its end
    for header in ("files", "chunks", "checks"):
        table.add_column(header, no_wrap=True)  # "2 access updated" on one line; the source's name folds
    table.add_column("seconds", justify="right")  # the run's wall time; --json has each stage's
    for name, r in report.items():
        if "error" in r:
            table.add_row(Text(name), Text("error", style="red"), "", _checks_cell(r), f"{r['wall_seconds']:.1f}")
            continue
        table.add_row(
            Text(name),
            _counts(r, FILE_COUNTS),
            _counts(r, CHUNK_COUNTS),
            _checks_cell(r),
            Text(f"{r['wall_seconds']:.1f}", justify="right"),
        )
    console.print(table)
    if any(r.get(key) for r in report.values() for _, key in CHUNK_COUNTS):
        console.print(Text(CHUNKS_NOTE, style="dim"))
    for name, r in report.items():
        if "error" in r:
            console.print(Text.assemble(("✗ ", "red"), (name, "red bold"), (f": {printable(r['error'])}", "red")))
        if langs := r.get("languages"):
            console.print(
                Text(f"source {name!r}: " + ", ".join(f"{n} {lang}" for lang, n in langs.items()), style="dim")
            )
        skipped = r.get("skipped_files", [])
        for s in skipped[:SKIPS_SHOWN]:
            console.print(Text(printable(f"- {name}:{s['path']} skipped: {s['reason']}"), style="dim"))
        if (more := r.get("files_skipped", len(skipped)) - min(len(skipped), SKIPS_SHOWN)) > 0:
            console.print(Text(f"- … {more} more skipped in {name} (--json lists them)", style="dim"))
        for f in r.get("failures", []):
            console.print(Text(printable(f"! {f['key']} ({f['stage']}): {f['error']}"), style="yellow"))
        for c in r["checks"]:
            if not c["passed"]:
                style = "red" if c["severity"] == "ERROR" else "yellow"
                line = f"✗ check {c['name']} ({c['severity']}) on {name}: {c['description']}"
                console.print(Text(printable(line), style=style))

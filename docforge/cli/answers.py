"""`docforge answers`: recorded answers — show one with its provenance, re-verify it, purge them all."""

from __future__ import annotations

import json
import sys

import click

from docforge.cli.options import config_option, json_option
from pipeline.printable import printable


def _conn(config: str):
    from pipeline.config import load_settings
    from pipeline.store.db import connect, store_url

    return connect(store_url(load_settings(config)), vector=False)


def _load(conn, answer_id: str):
    from pipeline.store import answers

    if not answers.recorded(conn):
        raise click.ClickException("no answers are recorded in this store yet")
    stored = answers.get(conn, answer_id)
    if stored is None:
        raise click.ClickException(f"no answer with id {answer_id!r}")
    return stored


@click.group("answers")
def command() -> None:
    """Recorded answers: each `docforge ask` keeps its answer and its hash chain."""


@command.command("show")
@click.argument("answer_id")
@config_option
@json_option
def show(answer_id: str, config: str, as_json: bool) -> None:
    """Print a recorded answer and the hash chain of its stages."""
    with _conn(config) as conn:
        s = _load(conn, answer_id)
    if as_json:
        click.echo(
            json.dumps(
                {
                    "id": s.id,
                    "created_at": s.created_at.isoformat(),
                    "hits": s.hits,
                    "dag_root": s.dag_root,
                    "answer": s.answer,
                    "stages": s.stages,
                },
                indent=2,
                ensure_ascii=False,
            )
        )
        return
    _print(s)


def _print(s) -> None:
    """The record at any width (80 columns too): the answer with its marks and legend, then each stage's
    hash (its first 16 digits; --json has them whole) beside what it holds, and the root in full."""
    from rich.console import Console
    from rich.markup import escape
    from rich.text import Text

    from docforge.cli.ask import answer_block, hanging
    from docforge.cli.render import emit

    console = Console()
    console.print(
        f"answer {s.id} · {s.audit_mode} · model {escape(s.model)} · {s.created_at:%Y-%m-%d %H:%M:%S} · "
        f"served from cache {s.hits} time(s)"
    )
    emit(console, Text(f"question: {printable(s.question)}\n"))
    for part in answer_block(s.answer.get("answer", "")):
        emit(console, part)
    console.print("\nprovenance (each hash = sha256(stage, previous hash, payload)):")
    grid = hanging(2)
    for st in s.stages:
        grid.add_row(f"  {st.get('stage', '?')}", f"{str(st.get('hash', ''))[:16]}…", Text(printable(_summary(st))))
    emit(console, grid)
    emit(console, Text(f"  {'root':<12} {s.dag_root}"))


def _summary(stage: dict) -> str:
    p = stage.get("payload")
    name = stage.get("stage")
    if name == "retrieval" and isinstance(p, list):
        return f"{len(p)} search(es): " + "; ".join(f"{r.get('query')!r} → {len(r.get('hits', []))}" for r in p)
    if name == "evidence" and isinstance(p, list):
        return f"{len(p)} block(s): " + ", ".join(_block(e) for e in p[:8] if isinstance(e, dict))
    if name in ("claims",) and isinstance(p, list):
        return f"{len(p)} claim(s)"
    if name == "verification" and isinstance(p, dict):
        from pipeline.answers.render import MARKS, support_of

        kinds = [support_of(c) for c in p.get("claims", []) if isinstance(c, dict)]
        return f"{p.get('audit_mode')}, " + " ".join(f"{MARKS[k]}{kinds.count(k)}" for k in MARKS)
    if name == "label" and isinstance(p, dict):
        said = {k: v for k, v in p.items() if k != "verifier"}
        return json.dumps(said) + (f", verifier {str(p['verifier'])[:12]}…" if p.get("verifier") else "")
    return ""


def _block(e: dict) -> str:
    """`E1→0123456789` for a block of one chunk; `E2→0123456789+1` for one that joins its neighbour."""
    more = len(e.get("chunk_ids") or []) - 1
    return f"{e.get('pointer')}→{str(e.get('chunk_id'))[:10]}{f'+{more}' if more > 0 else ''}"


@command.command("verify")
@click.argument("answer_id")
@config_option
def verify(answer_id: str, config: str) -> None:
    """Recompute every stage of a recorded answer; exit 1 naming the first that does not match."""
    from pipeline.answers import provenance

    with _conn(config) as conn:
        s = _load(conn, answer_id)
        ids = provenance.cited_chunks(s.stages)  # every chunk each evidence block joins
        rows = conn.execute("SELECT id, text FROM chunks WHERE id = ANY(%s)", (ids,)).fetchall()
    result = provenance.check(s.dag_root, s.answer, s.stages, dict(rows))
    if not result.ok:
        click.echo(printable(f"answer {answer_id}: stage '{result.stage}' does not match: {result.reason}"), err=True)
        sys.exit(1)
    click.echo(f"answer {answer_id}: all {len(provenance.STAGES)} stages match, root {s.dag_root}")


@command.command("purge")
@config_option
def purge(config: str) -> None:
    """Delete every recorded answer (the cache starts empty)."""
    from pipeline.store import answers

    with _conn(config) as conn:
        n = answers.purge(conn)
    click.echo(f"purged {n} answer(s)")

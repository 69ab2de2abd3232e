"""`docforge verify`: the answer verifier on its own, over JSON lines, for answers produced anywhere."""

from __future__ import annotations

import json
import os
import re
import sys
import time
from itertools import chain, islice
from pathlib import Path
from typing import Any

import click


@click.command("verify")
@click.argument("input_file", metavar="[FILE]", type=click.File("rb"), default="-")
@click.option(
    "--output", "-o", type=click.File("w", encoding="utf-8"), default="-", help="Where verdicts go (default: stdout)."
)
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    default=None,
    help="Processes that verify a long input (default: one per CPU, at most 8).",
)
def command(input_file, output, workers: int | None) -> None:
    """Verify answers against their evidence: one verdict line per input line.

    \b
    Input, one JSON object per line (a file, or stdin):
      {"answer": "Claim one [E1]\\nClaim two [E1,E2]", "evidence": {"E1": "text", "E2": "text"}}
    "evidence" may also be a list (E1, E2, ... in order) or one string (E1);
    an "id" is copied to the verdict. When the answer cites nothing at all and
    there is exactly one evidence block, its lines are checked against that
    block ("implicit_pointers": true in the verdict).
    Output, one JSON object per line:
      {"audit_mode": "STRICT|HYBRID|UNGROUNDED", "verified": bool,
       "claims": [{"text", "pointers", "verified", "strategy", "violations",
                   "support": "quoted|supported|unsupported", "probability"}]}
    The time taken, and from 20 answers the throughput (answers/s, the process
    start included, and after it), is reported on stderr at the end.
    A line that is not such an object (not UTF-8, not JSON, NaN, nested too
    deeply, text with a lone surrogate) gets {"line": N, "error": "..."} and
    the exit status is 1; every other line is still verified.
    """
    bad = n = 0
    begun, before = time.perf_counter(), _process_age()
    import pipeline.answers.verify as verifier  # timed: part of starting

    started = before + time.perf_counter() - begun
    for error, line in _verdicts(enumerate(input_file, 1), workers or _cpus()):
        bad += error
        n += 1
        output.write(line)
    output.flush()
    model = verifier.model_loading_seconds()  # 0 where no claim needed it, or workers loaded it
    for said in throughput(n, before + time.perf_counter() - begun, started + model, model > 0):
        click.echo(said, err=True)
    if bad:
        click.echo(f"{bad} input line(s) could not be verified (see their error lines)", err=True)
        sys.exit(1)


def throughput(n: int, took: float, starting: float, model: bool = True) -> list[str]:
    """What `docforge verify` says of its speed (each line under 80 columns): the answers per second over
    the whole run, and after `starting` (the process, the verifier and, with `model`, the model loading
    in this process: a short input is mostly that)."""
    said = [f"verified {n:,} answer{'s' if n != 1 else ''} in {took:.2f} s"]
    rate = n >= RATE_FROM
    if rate:
        said[0] += f": {n / max(took, 1e-9):,.0f} answers/s"
    if n and 0 < starting < took:
        said.append(f"  of which {starting:.2f} s starting (process, verifier{', model' if model else ''})")
        if rate:
            said[-1] += f": {n / (took - starting):,.0f} answers/s after"
    return said


# Fewer answers than this get no rate: over a handful, "2 answers/s" is the start-up's speed, not the
# verifier's (one answer: 0.5 s, nearly all of it starting).
RATE_FROM = 20


def _process_age() -> float:
    """Seconds since this process started, when it is the `docforge` command (Linux: /proc), else 0 (the
    command's own time is what is measured)."""
    if not os.path.basename(sys.argv[0]).startswith("docforge"):
        return 0.0
    try:
        ticks = int(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[19])  # starttime, field 22
        return max(0.0, time.clock_gettime(time.CLOCK_BOOTTIME) - ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError, AttributeError):
        return 0.0


PARALLEL_FROM = 500  # lines; fewer are verified in this process (starting workers costs more than it saves)
CHUNK = 64  # lines a worker verifies per hand-over
BATCH = 8192  # lines read ahead of the verdicts written


def _cpus() -> int:
    """Workers by default: one per CPU (2 on 2 CPUs: 1.75x one worker when they are free, 0.92x when
    other work keeps them busy; bench/answers.py)."""
    n = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return max(1, min(n, 8))


def _verdicts(lines, workers: int):
    """Each non-blank line's verdict as a JSON line, in input order; a long input is shared among `workers`
    processes, a short one stays in this process. Lines are verified CHUNK at a time: the embedding work
    of a chunk's claims is one batch."""
    head = list(islice(lines, PARALLEL_FROM))
    todo = chain(head, lines)
    if len(head) < PARALLEL_FROM or workers < 2:
        while batch := list(islice(todo, CHUNK)):
            yield from _verdict_lines(batch)
        return
    import multiprocessing

    _verdict(0, b"{}")  # imports the verifier once, before the workers fork
    with multiprocessing.get_context("fork").Pool(workers) as pool:
        while batch := list(islice(todo, BATCH)):  # a bounded part of the input in memory, not all of it
            chunks = [batch[i : i + CHUNK] for i in range(0, len(batch), CHUNK)]
            for part in pool.imap(_verdict_lines, chunks):
                yield from part


def _verdict_lines(batch: list[tuple[int, bytes]]) -> list[tuple[bool, str]]:
    """(whether it is an error line, the verdict as a JSON line) of each non-blank line of a chunk."""
    from pipeline.answers.verify import verify_requests

    items = [(n, _request(n, raw)) for n, raw in batch if raw.strip()]
    reqs = [r for _, (ok, r) in items if ok]
    try:
        verdicts = iter(verify_requests(reqs))
    except (RecursionError, MemoryError) as e:  # one line's fault: each line alone says which
        if len(batch) > 1:
            return [v for item in batch for v in _verdict_lines([item])]
        verdicts = iter([{"error": f"could not verify: {type(e).__name__}"}])
    out = []
    for n, (ok, r) in items:
        v: Any = next(verdicts) if ok else r
        if isinstance(v, ValueError):
            v = {"line": n, "error": str(v)}
        elif "error" in v and "line" not in v:
            v = {"line": n, **v}
        out.append(("error" in v, json.dumps(v, ensure_ascii=False, allow_nan=False) + "\n"))
    return out


# A lone surrogate can only come from a \uD800–\uDFFF escape (strict UTF-8 decoding rejects the bytes);
# a line without one skips the exact (slower) check.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _request(n: int, raw: bytes) -> tuple[bool, object]:
    """(True, the request object) of line `n`, or (False, its error verdict {"line": n, "error": ...})."""
    from pipeline.json_strict import loads
    from pipeline.parse.text import first_surrogate

    try:
        line = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        return False, {"line": n, "error": f"not UTF-8: byte {e.start + 1} of the line"}
    try:
        req = loads(line)
    except json.JSONDecodeError as e:
        where = f" at column {e.colno}" if e.doc == line else ""
        return False, {"line": n, "error": f"not JSON: {e.msg}{where}"}
    except (RecursionError, MemoryError) as e:
        return False, {"line": n, "error": f"could not verify: {type(e).__name__}"}
    text = json.dumps(req, ensure_ascii=False) if _SURROGATE_ESCAPE.search(line) else ""
    if (i := first_surrogate(text)) is not None:
        return False, {"line": n, "error": f"text that is not valid Unicode: a lone surrogate U+{ord(text[i]):04X}"}
    return True, req


def _verdict(n: int, raw: bytes) -> dict:
    """Line `n`'s verdict, or {"line": n, "error": ...}: whatever the line holds, never an exception."""
    return json.loads(_verdict_lines([(n, raw)])[0][1])

"""`docforge verify`: the answer verifier on its own, over JSON lines, for answers produced anywhere."""

from __future__ import annotations

import json
import sys

import click


@click.command("verify")
@click.argument("input_file", metavar="[FILE]", type=click.File("rb"), default="-")
@click.option(
    "--output", "-o", type=click.File("w", encoding="utf-8"), default="-", help="Where verdicts go (default: stdout)."
)
def command(input_file, output) -> None:
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
       "claims": [{"text", "pointers", "verified", "strategy", "violations"}]}
    A line that is not such an object (not UTF-8, not JSON, NaN, nested too
    deeply, text with a lone surrogate) gets {"line": N, "error": "..."} and
    the exit status is 1; every other line is still verified.
    """
    bad = 0
    for n, raw in enumerate(input_file, 1):
        if not raw.strip():
            continue
        verdict = _verdict(n, raw)
        bad += "error" in verdict
        output.write(json.dumps(verdict, ensure_ascii=False, allow_nan=False) + "\n")
    output.flush()
    if bad:
        click.echo(f"{bad} input line(s) could not be verified (see their error lines)", err=True)
        sys.exit(1)


def _verdict(n: int, raw: bytes) -> dict:
    """Line `n`'s verdict, or {"line": n, "error": ...}: whatever the line holds, never an exception."""
    from pipeline.answers.verify import verify_request
    from pipeline.json_strict import loads
    from pipeline.parse.text import first_surrogate

    try:
        line = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        return {"line": n, "error": f"not UTF-8: byte {e.start + 1} of the line"}
    try:
        req = loads(line)
    except json.JSONDecodeError as e:
        where = f" at column {e.colno}" if e.doc == line else ""
        return {"line": n, "error": f"not JSON: {e.msg}{where}"}
    if (i := first_surrogate(text := json.dumps(req, ensure_ascii=False))) is not None:
        return {"line": n, "error": f"text that is not valid Unicode: a lone surrogate U+{ord(text[i]):04X}"}
    try:
        return verify_request(req)
    except ValueError as e:
        return {"line": n, "error": str(e)}
    except (RecursionError, MemoryError) as e:
        return {"line": n, "error": f"could not verify: {type(e).__name__}"}

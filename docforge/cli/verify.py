"""`docforge verify`: the answer verifier on its own, over JSON lines, for answers produced anywhere."""

from __future__ import annotations

import json
import sys

import click


@click.command("verify")
@click.argument("input_file", metavar="[FILE]", type=click.File("r", encoding="utf-8"), default="-")
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
    A line that is not such an object gets {"line": N, "error": "..."} and
    the exit status is 1; every other line is still verified.
    """
    from pipeline.answers.verify import verify_request

    bad = 0
    for n, line in enumerate(input_file, 1):
        if not line.strip():
            continue
        try:
            verdict = verify_request(json.loads(line))
        except json.JSONDecodeError as e:
            verdict, bad = {"line": n, "error": f"not JSON: {e.msg} at column {e.colno}"}, bad + 1
        except ValueError as e:
            verdict, bad = {"line": n, "error": str(e)}, bad + 1
        output.write(json.dumps(verdict, ensure_ascii=False) + "\n")
    output.flush()
    if bad:
        click.echo(f"{bad} input line(s) could not be verified (see their error lines)", err=True)
        sys.exit(1)

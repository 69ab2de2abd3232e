"""docs/cli.md is what `--help` says (regenerate with `make docs`)."""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_cli_reference_is_current():
    sys.path.insert(0, str(ROOT / "docs"))
    from cli_help import render

    assert (ROOT / "docs" / "cli.md").read_text() == render(), "docs/cli.md is stale: run `make docs`"

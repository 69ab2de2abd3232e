"""docs/cli.md is what `--help` says (regenerate with `make docs`)."""

import runpy
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_cli_reference_is_current():
    render = runpy.run_path(str(ROOT / "docs" / "cli_help.py"))["render"]  # a script, as `make docs` runs it
    assert (ROOT / "docs" / "cli.md").read_text() == render(), "docs/cli.md is stale: run `make docs`"

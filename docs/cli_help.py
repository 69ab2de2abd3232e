"""Render `docforge --help` and every subcommand's help as markdown (docs/cli.md).

    python docs/cli_help.py > docs/cli.md      # or: make docs
tests/test_cli_docs.py fails when docs/cli.md is stale.
"""

from __future__ import annotations

import click
from click.testing import CliRunner

from docforge.cli import main


def commands(group: click.Group, prefix: list[str]):
    ctx = click.Context(group)
    for name in group.list_commands(ctx):  # the top group loads its commands on use
        cmd = group.get_command(ctx, name)
        yield [*prefix, name]
        if isinstance(cmd, click.Group):
            yield from commands(cmd, [*prefix, name])


def render() -> str:
    runner = CliRunner()
    out = ["# docforge CLI", "", "Generated from `--help` by `docs/cli_help.py`; do not edit by hand.", ""]
    for path in [[], *commands(main, [])]:
        res = runner.invoke(main, [*path, "--help"], prog_name="docforge", terminal_width=100)
        out += [f"## docforge {' '.join(path)}".rstrip(), "", "```", res.output.rstrip(), "```", ""]
    return "\n".join(out)


if __name__ == "__main__":
    print(render(), end="")

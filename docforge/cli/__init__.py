"""The `docforge` command group (docforge.cli.group); one module per command."""

from __future__ import annotations

from docforge.cli.group import main

__all__ = ["main"]

"""The import graph's rules are import-linter contracts (pyproject.toml, run by `make lint`): layers run one
way, the core knows no orchestrator, and no import cycle anywhere, package `__init__`s included.

These tests run the contracts, and check that they keep covering the whole project as it grows: every
top-level package is searched for sibling cycles, and every package whose `__init__` imports its own
modules has the contract that forbids those modules to import it back (the one cycle sibling
contracts cannot see). Imports under `if TYPE_CHECKING:` count too.
"""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("pipeline", "assets", "resources", "orchestration", "docforge")


def contracts(kind: str) -> list[dict]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    return [c for c in config["contracts"] if c["type"] == kind]


def test_the_import_contracts_are_kept():
    res = subprocess.run(
        [str(Path(sys.executable).parent / "lint-imports"), "--no-cache"], cwd=ROOT, capture_output=True, text=True
    )
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]
    assert "0 broken" in res.stdout


def test_every_package_is_searched_for_cycles():
    (acyclic,) = contracts("acyclic_siblings")
    assert set(acyclic["ancestors"]) == set(PACKAGES) and "depth" not in acyclic  # the default: every level


def test_every_package_whose_init_imports_its_modules_forbids_them_to_import_it():
    graph = grimp.build_graph(*PACKAGES, cache_dir=None)
    facades = {
        p
        for p in graph.modules
        if graph.find_children(p) and any(m.startswith(p + ".") for m in graph.find_modules_directly_imported_by(p))
    }
    guarded = {
        c["forbidden_modules"][0]
        for c in contracts("forbidden")
        if c.get("as_packages") is False and c["source_modules"] == [c["forbidden_modules"][0] + ".**"]
    }
    assert "docforge.cli" in facades and facades <= guarded, (
        f"add a 'No cycle through' contract for {facades - guarded}"
    )

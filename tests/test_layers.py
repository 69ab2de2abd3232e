"""The import graph, drawn from the code by grimp (import-linter's engine): layers run one way.

`make lint` enforces the same rules through the import-linter contracts in pyproject.toml; these
tests say them in Python, and also catch a cycle through a package's `__init__`, which sibling
contracts do not see. Imports under `if TYPE_CHECKING:` are left out of the cycle check: they
never run.
"""

from __future__ import annotations

from itertools import pairwise

import grimp
import pytest

CORE = "pipeline"
SHELL_AND_SURFACES = ("assets", "resources", "orchestration", "docforge")
LAYERS = ("docforge", "orchestration", "assets", "resources", CORE)  # top to bottom


def graph(exclude_type_checking: bool) -> grimp.ImportGraph:
    return grimp.build_graph(
        *LAYERS, include_external_packages=True, exclude_type_checking_imports=exclude_type_checking, cache_dir=None
    )


@pytest.fixture(scope="module")
def runtime_graph() -> grimp.ImportGraph:
    return graph(exclude_type_checking=True)


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan): each holds a cycle."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while (w := stack.pop()) != v:
                component.append(w)
            if component:
                found.append(sorted([v, *component]))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def module_edges(g: grimp.ImportGraph, package: str) -> dict[str, set[str]]:
    mods = {m for m in g.modules if m == package or m.startswith(package + ".")}
    return {m: g.find_modules_directly_imported_by(m) & mods for m in mods}


def test_cycles_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycles_between_the_core_modules(runtime_graph):
    found = cycles(module_edges(runtime_graph, CORE))
    assert not found, f"import cycles in the core: {found}"


def test_no_import_cycles_between_the_top_level_packages(runtime_graph):
    edges = {
        p: {
            q for q in LAYERS if q != p and runtime_graph.direct_import_exists(importer=p, imported=q, as_packages=True)
        }
        for p in LAYERS
    }
    assert cycles(edges) == []
    for upper, lower in pairwise(LAYERS):
        assert not runtime_graph.chain_exists(importer=lower, imported=upper, as_packages=True), (lower, upper)


def test_the_core_imports_neither_dagster_nor_the_shell():
    g = graph(exclude_type_checking=False)  # not even for type hints
    core = [m for m in g.modules if m == CORE or m.startswith(CORE + ".")]
    reached = {(m, i) for m in core for i in g.find_modules_directly_imported_by(m)}
    crossing = sorted(
        (m, i)
        for m, i in reached
        if (top := i.split(".")[0]) == "dagster" or top.startswith("dagster_") or top in SHELL_AND_SURFACES
    )
    assert crossing == []

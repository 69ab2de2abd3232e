"""Every bench/ script runs: its documented smoke command, the whole path on a tiny input.

The figures in the docs come from bench/, so a bench that no longer runs is a stub. A script is a
bench/*.py with a `__main__` block; each must have its smoke command in SMOKE (a new bench without one
fails here) and in bench/README.md. Each runs as a user runs it: a fresh process, this interpreter, from
the repository root, its own temporary store. The figures a smoke run prints are not checked (they mean
nothing on a tiny input, and the suite asserts no wall-clock time); that it finishes, says something and
exits 0 is. Benches also import only public names, so a refactor that removes one breaks this test.
"""

from __future__ import annotations

import ast
import importlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "bench"
PROJECT = ("pipeline", "assets", "resources", "orchestration", "docforge")

# script -> (its smoke arguments, a line its output must hold)
SMOKE: dict[str, tuple[list[str], str]] = {
    "answers.py": (["--smoke"], "claims"),
    "ask_cold.py": (["--smoke"], "cold ask p50"),
    "blocks.py": (["--smoke"], "blocks; median"),
    "churn.py": (["--smoke"], "re-wrote "),
    "cli_query.py": (["--smoke"], "ratio bar"),
    "confluence_permissions.py": (["--smoke"], "sync / off"),
    "fit_answers.py": (["--smoke"], "all report: phrase"),
    "freshness.py": (["--smoke"], "webhook"),
    "gaps.py": (["--smoke"], "purity"),
    "gpu.py": (["--smoke"], "GPU"),
    "hosted.py": (["--smoke"], "first /search"),
    "edit_locality.py": (["--smoke"], "embedded per edit"),
    "html_manuals.py": (["--smoke"], "menu %"),
    "incremental.py": (["--smoke"], "no-op re-run"),
    "index_pages.py": (["--smoke"], "index slots"),
    "ingest.py": (["--smoke"], "chunks/s"),
    "ceiling.py": (["--smoke"], "ceiling (peak ÷ torch)"),
    "load.py": (["--smoke"], "clients"),
    "man_pages.py": (["--smoke"], "broken words"),
    "manual_check.py": (["--smoke"], "asks: phrase"),
    "noop.py": (["--smoke"], "ratio"),
    "partitions.py": (["--smoke"], "recall"),
    "phrase_losses.py": (["--smoke"], "shown"),
    "phrase_ranks.py": (["--smoke"], "as configured"),
    "peer.py": (["--smoke"], "docforge ÷ peer chunks/s"),
    "query.py": (["--smoke"], "recall@10"),
    "retrieval.py": (["--smoke"], "nDCG@10"),
    "verify_docs.py": (["--smoke"], "accuracy"),
}


def scripts() -> list[str]:
    return sorted(p.name for p in BENCH.glob("*.py") if "__main__" in p.read_text(encoding="utf-8"))


def test_every_bench_script_has_a_smoke_command_and_is_documented():
    readme = (BENCH / "README.md").read_text(encoding="utf-8")
    assert scripts() == sorted(SMOKE), "a bench script without a smoke command here (or one gone)"
    for name, (args, _) in SMOKE.items():
        assert f"python bench/{name} {' '.join(args)}" in readme, f"bench/README.md lacks {name}'s smoke command"


@pytest.mark.bench
@pytest.mark.parametrize("name", sorted(SMOKE))
def test_bench_smoke_run_exits_0(name, tmp_path):
    args, expect = SMOKE[name]
    if name == "peer.py":
        _skip_without_peer_packages()
    env = {**os.environ, "DOCFORGE_HOME": str(tmp_path / "home"), "COLUMNS": "100"}
    env.pop("DATABASE_URL", None)  # each bench makes its own store, as on a user's machine
    res = subprocess.run(
        [sys.executable, str(BENCH / name), *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=540
    )
    out = res.stdout + res.stderr
    assert res.returncode == 0, f"bench/{name} {' '.join(args)} exited {res.returncode}:\n{out[-4000:]}"
    assert expect in out, f"bench/{name}'s smoke output lacks {expect!r}:\n{out[-4000:]}"


def _skip_without_peer_packages() -> None:
    """bench/peer.py installs LlamaIndex on first use; the suite never downloads, so it runs only once there."""
    from bench.peer import PEER_DIR, peer_missing

    if missing := peer_missing():
        pytest.skip(
            f"bench/peer.py's peer packages are not installed in {PEER_DIR} ({len(missing)} missing, e.g. "
            f"{missing[0]}); the suite installs nothing: run `python bench/peer.py --smoke` once to install them"
        )


def _project_imports(path: Path) -> list[tuple[int, str, str | None]]:
    """(line, module, name) for each import of the project in a file; name None for `import a.b`."""
    found: list[tuple[int, str, str | None]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in PROJECT:
            found += [(node.lineno, node.module, a.name) for a in node.names]
        elif isinstance(node, ast.Import):
            found += [(node.lineno, a.name, None) for a in node.names if a.name.split(".")[0] in PROJECT]
    return found


@pytest.mark.parametrize("path", sorted(BENCH.glob("*.py")), ids=lambda p: p.name)
def test_benches_import_only_public_names(path):
    """Every name a bench takes from the project exists, is public (no leading underscore) and, where its
    module lists its exports (`__all__`), is one of them."""
    bad = []
    for line, module, name in _project_imports(path):
        where = f"{path.name}:{line}: {module}" + (f".{name}" if name else "")
        if any(part.startswith("_") for part in module.split(".")) or (name or "").startswith("_"):
            bad.append(f"{where} is private")
            continue
        mod = importlib.import_module(module)
        if name is None:
            continue
        exported = getattr(mod, "__all__", None)
        if not hasattr(mod, name) and not _is_submodule(module, name):
            bad.append(f"{where} does not exist")
        elif exported is not None and name not in exported and not _is_submodule(module, name):
            bad.append(f"{where} is not in {module}.__all__")
    assert not bad, "\n".join(bad)


def _is_submodule(module: str, name: str) -> bool:
    try:
        importlib.import_module(f"{module}.{name}")
    except ImportError:
        return False
    return True

"""An API-only install (`pip install 'docforge[api]'`) in a venv made here: no torch, no Dagster, no
tree-sitter, and `docforge serve --api` answers /search through an embedder service (EMBEDDER_URL).

The venv installs this checkout with its `api` extra from the package index (pip's cache makes a
second run quick); the embedder service runs in this process with the session's model, the store is
the query tests' corpus. The probe is tests/test_hosted.py's: the real CLI path in the venv's
python, a thread that searches through it and lists which of the heavy packages were imported.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline.query import Searcher
from tests.test_hosted import QUERY, TOKEN, run_api, service  # noqa: F401 (service: the fixture)

ROOT = Path(__file__).resolve().parents[1]
# What an API replica must never install or import: the model stack, the orchestrator, code parsing.
HEAVY = ("torch", "transformers", "sentence_transformers", "onnxruntime", "dagster", "tree_sitter")


@pytest.fixture(scope="module")
def api_venv(tmp_path_factory) -> Path:
    where = tmp_path_factory.mktemp("api-install")
    # A copy of the package's sources: pip builds in the source tree, and must leave the checkout as it was.
    src = where / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, src / name)
    for name in ("pipeline", "assets", "resources", "orchestration", "docforge"):
        shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__"))
    venv = where / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    pip = subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
        + ["-c", str(ROOT / "deploy" / "constraints.txt"), f"{src}[api]"],  # the versions `make install` uses
        capture_output=True,
        text=True,
        timeout=1500,
    )
    assert pip.returncode == 0, pip.stdout[-2000:] + pip.stderr[-4000:]
    return python


@pytest.mark.slow  # ~1-3 min: a venv and its install (longer on a cold pip cache)
def test_an_api_only_install_has_no_model_or_orchestrator(api_venv):
    probe = "import importlib.util, sys; print(','.join(m for m in sys.argv[1:] if importlib.util.find_spec(m)))"
    found = subprocess.run([str(api_venv), "-c", probe, *HEAVY], capture_output=True, text=True, check=True)
    assert found.stdout.strip() == ""


@pytest.mark.slow
def test_an_api_only_install_serves_search_with_an_embedder_service(
    api_venv,
    service,  # noqa: F811 (the fixture)
    corpus,
    embedder,
    tmp_path,
):
    env = {"EMBEDDER_URL": service.url, "EMBEDDER_TOKEN": TOKEN, "PYTHONPATH": ""}
    got = run_api(corpus, env, python=str(api_venv), heavy=HEAVY, cwd=tmp_path)  # the installed docforge
    assert got["status"] == 200 and got["heavy"] == []
    with Searcher(corpus.settings, url=corpus.url, embedder=embedder, reranker=None) as s:
        want = [f"{h.doc_key}#{h.chunk_index}" for h in s.search(QUERY, limit=5, mode="dense")]
    assert got["hits"] == want


@pytest.mark.slow
def test_a_command_whose_extra_is_missing_says_what_to_install(api_venv, tmp_path):
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "a.md").write_text("# A\n\nText.\n")
    docforge = str(api_venv.parent / "docforge")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "DOCFORGE_HOME": str(tmp_path / "home")}
    res = subprocess.run([docforge, "ingest", "notes"], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert res.returncode == 1 and "is not installed: this command needs the" in res.stderr, res.stderr[-2000:]
    assert "pip install 'docforge[" in res.stderr and "Traceback" not in res.stderr

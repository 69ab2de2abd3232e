"""ONNX Runtime as the CPU default (`embedding.backend: auto`): the same vectors as torch on real chunks,
one export per model shared by concurrent processes, and queries that never import torch."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from pipeline.config import EmbeddingConfig, load_settings
from pipeline.embed import Embedder
from pipeline.ingest import IngestContext
from pipeline.parse import parse_document
from pipeline.sources import open_source
from tests.helpers import git, shared

pytest.importorskip("onnxruntime")
ROOT = Path(__file__).resolve().parents[1]


def _rfcs_chunks(tmp_path: Path, write_config) -> list[str]:
    """The embedded texts of 12 real RFCs, chunked by the pipeline's own chunker."""
    repo = tmp_path / "rfcs"
    subprocess.run(["git", "clone", "-q", str(shared("corpus", "rust-rfcs-md.bundle")), str(repo)], check=True)
    git(repo, "checkout", "-q", "snapshot-1")
    source = {"name": "rfcs", "type": "git", "repo": str(repo), "globs": ["text/0*.md"]}
    settings = load_settings(write_config([source]))
    source = open_source(settings, settings.source("rfcs"))
    docs = [d for d in source.fetch(source.list_refs()) if hasattr(d, "content")][:12]
    chunker = IngestContext(settings, embedder=Embedder(settings.embedding)).chunker
    return [c.embed_text for d in docs for p in [parse_document(d)] for c in chunker.chunk(p.title, p.sections)]


def test_the_default_backend_on_a_cpu_is_onnx_with_torchs_vectors(tmp_path, write_config):
    texts = _rfcs_chunks(tmp_path, write_config)
    assert len(texts) > 30 and max(map(len, texts)) > 1000  # long chunks too: the window is exercised
    onnx = Embedder(EmbeddingConfig(device="cpu"), cache_dir=tmp_path / "models").load()
    torch = Embedder(EmbeddingConfig(device="cpu", backend="torch")).load()
    assert (onnx.backend, torch.backend) == ("onnx", "torch")
    assert onnx.model_id == torch.model_id and onnx.dimension == torch.dimension  # a store needs no re-embedding
    got, want = onnx.encode(texts), torch.encode(texts)
    assert np.sum(got * want, axis=1).min() >= 0.9999
    assert np.abs(got - want).max() <= 1e-4
    q = ["how are lifetimes elided?"]
    assert np.abs(onnx.encode(q, kind="query") - torch.encode(q, kind="query")).max() <= 1e-4


EXPORT = """
import json, logging, sys
from pathlib import Path
from pipeline.config import EmbeddingConfig
from pipeline.embed import Embedder
exports = []
class Count(logging.Handler):
    def emit(self, record):
        if record.getMessage().startswith("exporting "):
            exports.append(record.getMessage())
logging.getLogger("pipeline.embed.onnx").addHandler(Count())
logging.getLogger("pipeline.embed.onnx").setLevel(logging.INFO)
emb = Embedder(EmbeddingConfig(device="cpu"), cache_dir=Path(sys.argv[1])).load()
vec = emb.encode(["one export, shared"])[0]
print(json.dumps({"backend": emb.backend, "exports": len(exports), "vector": vec.tolist()}))
"""


def test_two_processes_exporting_at_once_share_one_export(tmp_path):
    cache = tmp_path / "models"
    env = {"PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PATH": "/usr/bin:/bin"}
    procs = [
        subprocess.Popen([sys.executable, "-c", EXPORT, str(cache)], stdout=subprocess.PIPE, text=True, env=env)
        for _ in range(2)
    ]
    outs = [json.loads(p.communicate(timeout=600)[0].splitlines()[-1]) for p in procs]
    assert [p.returncode for p in procs] == [0, 0]
    assert [o["backend"] for o in outs] == ["onnx", "onnx"]
    assert sorted(o["exports"] for o in outs) == [0, 1]  # one exported; the other waited and loaded its file
    np.testing.assert_array_equal(outs[0]["vector"], outs[1]["vector"])
    assert [p.name for p in cache.rglob("*.onnx")] == ["model.onnx"]
    assert not [p for p in cache.iterdir() if ".part-" in p.name]  # no temporary folder left behind


def test_a_failed_export_falls_back_to_torch_with_one_log_line(tmp_path, monkeypatch, caplog):
    from pipeline.embed import onnx

    def broken(*_):
        raise RuntimeError("export failed")

    monkeypatch.setattr(onnx, "model_file", broken)
    with caplog.at_level("WARNING", logger="pipeline.embed.model"):
        emb = Embedder(EmbeddingConfig(device="cpu"), cache_dir=tmp_path).load()
    assert emb.backend == "torch"
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 1 and "with torch" in lines[0] and "export failed" in lines[0]


SEARCH = """
import json, sys
from pipeline.config import load_settings
from pipeline.query import Searcher
with Searcher(load_settings(sys.argv[1]), url=sys.argv[2], reranker=None) as s:
    hits = s.search("how do I undo a bad release?", limit=3, mode="hybrid")
    print(json.dumps({"hits": len(hits), "backend": s.embedder.backend,
                      "torch": sorted(m for m in sys.modules if m.split(".")[0] in
                                      ("torch", "transformers", "sentence_transformers"))}))
"""


def test_a_search_on_the_onnx_path_never_imports_torch(corpus, embedder):
    embedder.load()  # the session's model: its ONNX export is in the user's cache from here on
    assert embedder.backend == "onnx"
    env = {"PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PATH": "/usr/bin:/bin"}
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(SEARCH), str(corpus.config), corpus.url],
        capture_output=True,
        text=True,
        env={**env, "HOME": str(Path.home())},
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout.splitlines()[-1])
    assert got == {"hits": 3, "backend": "onnx", "torch": []}

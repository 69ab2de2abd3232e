"""Query vectors kept on disk (pipeline.embed.saved): a process that meets a query this machine embedded
before reads its vector back and loads no model (`docforge search`, `docforge ask`)."""

from __future__ import annotations

import numpy as np
import pytest

from pipeline.config import load_settings
from pipeline.embed import SavedQueries, saved_queries
from pipeline.embed import saved as saved_module
from pipeline.ingest import IngestContext, ingest_source
from pipeline.query import Searcher
from pipeline.store import generations
from pipeline.store.db import connect
from tests.helpers import write_files


def test_a_vector_is_read_back_only_for_its_model_width_and_backend(tmp_path):
    v = np.arange(4, dtype=np.float32)
    a = SavedQueries(tmp_path, "m", 4, "onnx", "auto")
    a.put("how do I vacuum?", v)
    np.testing.assert_array_equal(a.get("how do I vacuum?"), v)
    assert a.get("how do I vacuum") is None  # another text
    assert SavedQueries(tmp_path, "m", 4, "onnx-int8", "auto").get("how do I vacuum?") is None  # another precision
    assert SavedQueries(tmp_path, "other", 4, "onnx", "auto").get("how do I vacuum?") is None  # another model
    assert "vacuum" not in " ".join(p.name for p in tmp_path.iterdir())  # names do not tell the query


def test_past_the_bound_the_oldest_half_goes(tmp_path, monkeypatch):
    monkeypatch.setattr(saved_module, "MAX_FILES", 4)
    kept = SavedQueries(tmp_path, "m", 2, "onnx", "auto")
    for i in range(5):
        kept.put(f"q{i}", np.ones(2, dtype=np.float32))
    assert len(list(tmp_path.glob("*.f32"))) == 3
    assert kept.get("q4") is not None


def test_a_search_asked_before_loads_no_model(tmp_path, write_config, database_url, embedder, monkeypatch):
    write_files(tmp_path / "docs", {"vacuum.md": "# Vacuum\n\nRoutine vacuuming freezes old row versions.\n"})
    config = write_config([{"name": "d", "type": "directory", "path": str(tmp_path / "docs")}])
    settings = load_settings(config)
    ingest_source(IngestContext(settings, url=database_url, embedder=embedder), "d")
    query = f"what does routine vacuuming freeze? {tmp_path.name}"  # new to this machine's cache
    with connect(database_url) as conn:
        kept = saved_queries(settings.embedding, generations.live(conn))
    assert kept is not None
    try:
        with Searcher(settings, url=database_url, reranker=None, keep_queries=True) as s:
            first = s.search(query, 3, "dense")
        assert kept.get(query) is not None

        def no_model(*_):
            raise AssertionError("a kept query loaded the model")

        monkeypatch.setattr(Searcher, "_embedder_for", no_model)
        with Searcher(settings, url=database_url, reranker=None, keep_queries=True) as s:
            again = s.search(query, 3, "dense")
        assert [h.chunk_id for h in again] == [h.chunk_id for h in first]
        assert again[0].score == pytest.approx(first[0].score)
    finally:
        kept._file(query).unlink(missing_ok=True)  # the user's model cache: leave it as found

"""Which model embeds: the first of `model` + `fallbacks` that loads (each failure logged with its
reason), and the embedder for search queries (ONNX on a CPU when it can be)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator

from pipeline.config import EmbeddingConfig
from pipeline.embed.model import Embedder
from pipeline.errors import EmbedError

log = logging.getLogger(__name__)


def candidates(cfg: EmbeddingConfig) -> list[str]:
    """The models `load_embedder` tries, in order."""
    return list(dict.fromkeys([cfg.model, *cfg.fallbacks]))


def load_embedder(cfg: EmbeddingConfig, first: Embedder | None = None) -> Embedder:
    """The first of `model` + `fallbacks` that loads, loaded; `first` (an Embedder already made, such as
    a process's shared one) is tried in place of its own name. Each failure is logged with its reason,
    and an EmbedError names them all when none loads."""

    def tries() -> Iterator[Embedder]:
        if first is not None:
            yield first
        for name in candidates(cfg):
            if first is None or name != first.name:
                yield Embedder(cfg.model_copy(update={"model": name}))

    reasons = []
    for emb in tries():
        try:
            emb.load()
        except Exception as e:  # noqa: BLE001 (any load failure: missing files, corrupt weights, OOM)
            reasons.append(f"{emb.name!r}: {e}")
            log.warning("embedding model %r failed to load, trying the next fallback: %s", emb.name, e)
            continue
        if reasons:
            log.warning("embedding with fallback %r (%s)", emb.name, emb.model_id)
        return emb
    raise EmbedError("no embedding model could be loaded: " + "; ".join(reasons or ["none configured"]))


def query_config(cfg: EmbeddingConfig) -> EmbeddingConfig:
    """`cfg` with the backend queries run on: `query_backend`, or for `auto` the ingest backend, except
    that torch becomes `auto` (ONNX Runtime on a CPU: one short text is where torch's per-call overhead
    weighs most, and the vectors are the same)."""
    backend = cfg.query_backend
    if backend == "auto":
        backend = "auto" if cfg.backend == "torch" else cfg.backend
    return cfg.model_copy(update={"backend": backend})


def query_embedder(cfg: EmbeddingConfig) -> Embedder:
    """The embedder for search queries (see `query_config`), loaded: an automatic ONNX choice that cannot
    be made (export fails, say for a very large model) falls back to torch with a warning; an explicit one
    raises."""
    return Embedder(query_config(cfg)).load()


def query_embedder_loading(cfg: EmbeddingConfig) -> Embedder:
    """`query_embedder`, returned at once when its ONNX export is already cached: the model loads in a
    background thread (the first encode waits for it), so a run lists and chunks meanwhile. Otherwise
    `query_embedder` itself (it exports, or falls back to torch)."""
    emb = Embedder(query_config(cfg))
    if emb.cfg.backend != "auto" or emb.onnx_obstacle() is not None:
        return emb.load()
    from pipeline.embed.onnx import cache_dir

    if not (cache_dir(emb.onnx_model()) / "model.onnx").exists():
        return emb.load()
    threading.Thread(target=_load_runner, args=(emb,), daemon=True, name="docforge-model-load").start()
    return emb


def _load_runner(emb: Embedder) -> None:
    try:
        _ = emb.runner
    except Exception as e:  # noqa: BLE001 (the first encode tries again and raises it)
        log.warning("loading %s in the background failed: %s", emb.model_id, e)

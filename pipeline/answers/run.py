"""What one ask accumulates on its way (Run), what a way of answering drafts (Draft) and what the
verifier makes of it (Checked): the answer loop's intermediate values, each built once; and what a way
of answering uses of the loop (Tools), passed to it explicitly."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from pipeline.answers import retrieve
from pipeline.answers.model import Evidence, Step, Verdict

if TYPE_CHECKING:
    import psycopg

    from pipeline.answers.params import Params
    from pipeline.config import AnswersConfig
    from pipeline.query import Hit


@dataclass
class Run:
    """What one ask accumulates on its way."""

    question: str
    scope: retrieve.Scope
    history: list[dict[str, str]] | None
    max_iterations: int
    trace: list[Step] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    retrieval: list[dict[str, Any]] = field(default_factory=list)
    input_tokens: int = 0
    output_tokens: int = 0
    llm_ms: float = 0.0

    def time(self, stage: str, ms: float) -> None:
        self.timings[stage] = round(self.timings.get(stage, 0.0) + ms, 3)


@dataclass(frozen=True)
class Draft:
    """An answer before verification: the evidence, the raw claims, and how it was reached."""

    evidence: list[Evidence]
    raw: str
    intent: str
    iterations: int
    confidence: float
    abstained: bool
    prompt: Any = None  # what the answer was asked with (the provenance chain's "prompt" stage)
    reason: str = ""  # why it abstained, when it did
    # The extractive answer's calibrated label: True when its confidence reaches the fitted `sure`, False
    # when it offers candidates instead; None where no fitted confidence judged it (the LLM path).
    sure: bool | None = None
    sure_reason: str = ""  # what the label rests on, said to the reader
    # Not sure: each candidate's confidence by its evidence pointer (pipeline.answers.shown.held)
    held: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Checked:
    """A draft through the verifier: its verdict, the audit mode shown, and the confidence it backs."""

    verdict: Verdict
    audit: str
    abstained: bool
    confidence: float
    reason: str = ""  # why it abstained, when it did


class Tools(Protocol):
    """What the ways of answering (pipeline.answers.drafts) and the fit (pipeline.answers.fit) use of the
    answer loop; pipeline.answers.loop.Answerer is one. Each call is timed and traced on the run."""

    cfg: AnswersConfig

    @property
    def model_name(self) -> str: ...

    def retrieve(self, run: Run, query: str, iteration: int, limit: int) -> list[Hit]:
        """Hits for `query` within the run's scope, recorded on the run."""
        ...

    def embed(self, texts: Sequence[str]) -> Sequence[Sequence[float]]:
        """The first text's query vector, then each other's document vector (extractive.Embed)."""
        ...

    def chat(self, run: Run, stage: str, messages: list[dict[str, str]], max_tokens: int | None = None) -> str:
        """The LLM's reply, its tokens and time counted on the run."""
        ...

    def connection(self) -> AbstractContextManager[psycopg.Connection]:
        """A pooled store connection."""
        ...

    def params(self) -> Params:
        """The extractive answerer's fitted parameters."""
        ...

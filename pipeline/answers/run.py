"""What one ask accumulates on its way (Run), what a way of answering drafts (Draft) and what the
verifier makes of it (Checked): the answer loop's intermediate values, each built once."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pipeline.answers import retrieve
from pipeline.answers.model import Evidence, Step, Verdict


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


@dataclass(frozen=True)
class Checked:
    """A draft through the verifier: its verdict, the audit mode shown, and the confidence it backs."""

    verdict: Verdict
    audit: str
    abstained: bool
    confidence: float
    reason: str = ""  # why it abstained, when it did

"""The answer layer's records: evidence in, claims and answers out."""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, Field

AuditMode = Literal["STRICT", "HYBRID", "UNGROUNDED"]
Intent = Literal["factual", "conceptual", "debugging", "comparison", "exploratory"]
INTENTS: tuple[str, ...] = ("factual", "conceptual", "debugging", "comparison", "exploratory")
# Strategies from strongest to weakest: quoted from the evidence (quote, span: lexical proof), or reworded
# and judged supported by the verifier's calibrated model. STRICT means every claim quoted.
STRATEGIES = ("quote", "span", "reworded")
STRICT_STRATEGIES = frozenset({"quote", "span"})
# What a claim's evidence does for it: quotes it (lexical proof), supports it reworded (with a probability),
# or does not support it.
Support = Literal["quoted", "supported", "unsupported"]
NOT_FOUND = "Not found in the indexed documentation."


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Evidence:
    """One numbered evidence block: a retrieved chunk, content-addressed by `evidence_id`."""

    pointer: str  # "E1"
    evidence_id: str  # sha256 of the text: the same text never gets two pointers
    chunk_id: str
    text: str
    title: str
    section: str
    url: str
    doc_key: str
    source: str
    chunk_index: int
    score: float
    page: int | None = None
    rerank_score: float | None = None
    blocks: tuple[Any, ...] = ()  # its typed blocks (pipeline.records.Block), () for a chunk stored without
    # Every chunk its text joins, in document order (a search passage joins neighbours); () for the one
    # chunk `chunk_id`. The provenance chain records each with its text hash (pipeline.answers.provenance).
    chunk_ids: tuple[str, ...] = ()

    @property
    def chunks(self) -> tuple[str, ...]:
        return self.chunk_ids or (self.chunk_id,)

    def citation(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("text")
        d.pop("blocks")
        d["chunk_ids"] = list(self.chunks)
        return d


@dataclass(frozen=True)
class Claim:
    """One line of an answer and what the verifier found."""

    text: str
    pointers: tuple[str, ...]
    verified: bool  # support != "unsupported"
    strategy: str | None  # the strategy that passed, None when none did
    violations: tuple[str, ...] = ()
    addresses_question: bool | None = None  # None: verified without the question
    reason: str = ""  # why it does (not) address the question
    support: Support | None = None  # None: read from verified and strategy (a record written before it)
    # The calibrated P(the evidence supports the claim) (pipeline.answers.verify.judge); None where not
    # computed: a quoted claim (lexical proof), one refused by an exact check or citing nothing.
    probability: float | None = None

    def __post_init__(self) -> None:
        if self.support is None:
            quoted = self.verified and self.strategy in STRICT_STRATEGIES
            object.__setattr__(self, "support", "quoted" if quoted else "supported" if self.verified else "unsupported")

    def as_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "text": self.text,
            "pointers": list(self.pointers),
            "verified": self.verified,
            "strategy": self.strategy,
            "violations": list(self.violations),
            "support": self.support,
            "probability": self.probability,
        }
        if self.addresses_question is not None:
            d.update(addresses_question=self.addresses_question, reason=self.reason)
        return d


@dataclass(frozen=True)
class Verdict:
    """The verifier's result for a whole answer."""

    claims: tuple[Claim, ...]
    audit_mode: AuditMode
    addresses_question: bool | None = None  # None: verified without the question
    reason: str = ""  # why the answer does (not) address the question

    @property
    def verified(self) -> bool:
        return bool(self.claims) and all(c.verified for c in self.claims)

    def as_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "audit_mode": self.audit_mode,
            "verified": self.verified,
            "claims": [c.as_dict() for c in self.claims],
        }
        if self.addresses_question is not None:
            d.update(addresses_question=self.addresses_question, reason=self.reason)
        return d


@dataclass
class Step:
    """One step of the loop, for `--trace`."""

    step: str  # classify | retrieve | reason | respond | verify | cache
    ms: float
    detail: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"step": self.step, "ms": round(self.ms, 2), **self.detail}


class Citation(BaseModel):
    pointer: str
    title: str
    section: str
    url: str
    source: str
    doc_key: str
    chunk_index: int
    page: int | None = None
    score: float
    rerank_score: float | None = None
    evidence_id: str
    chunk_id: str
    # Every chunk the evidence block joins, in document order (a search passage joins neighbours; the
    # block's text is their texts joined by a blank line); [chunk_id] for one. Older records: empty.
    chunk_ids: list[str] = Field(default_factory=list)


class Offered(BaseModel):
    """One passage an answer offers when it is not sure it answers the question (best first): where it is,
    its evidence pointer, the lines it quotes and the line model's probability for it."""

    citation: str  # its evidence pointer ("E1"): the entry of `citations` that cites it
    title: str  # its document's title
    section: str  # its heading path ("A > B"), "" for a document's opening
    url: str
    text: str  # its quoted lines, one a line, in the order shown
    # P(its best line holds the answer), by the line model: how the candidates rank. The answer's
    # `confidence` is the calibrated one. None for a restricted caller (the line model reads retrieval
    # scores, left out of its trace too: docs/security.md).
    confidence: float | None = None


class Answer(BaseModel):
    """What `ask` returns (CLI --json, HTTP /ask, MCP, Python API)."""

    question: str
    answer: str  # the rendered answer: verified claims marked, never an unverified one shown as fact
    claims: list[dict[str, Any]]
    citations: list[Citation]
    sources: list[str]  # document URLs the verified claims cite, in order
    audit_mode: AuditMode
    abstained: bool = False
    # Whether the answer addresses the question (its subject carried by the cited evidence, the value it
    # asks for present), with the reason; an answer quoted right that does not is HYBRID, not STRICT.
    addresses_question: bool | None = None
    addresses_reason: str = ""
    # When the answer is not sure it answers (an extractive answer below its fitted `sure`): the passages
    # it offers instead, best first, each from its own section; [] for an answer (or an abstention).
    candidates: list[Offered] = Field(default_factory=list)
    confidence: float
    intent: str
    iterations: int
    model: str
    input_tokens: int = 0
    output_tokens: int = 0
    latency_ms: float = 0.0
    llm_ms: float = 0.0  # of latency_ms, time spent waiting for the LLM
    cache: Literal["hit", "miss"] = "miss"
    answer_id: str | None = None
    dag_root: str | None = None
    timings: dict[str, float] = Field(default_factory=dict)  # ms per stage
    trace: list[dict[str, Any]] | None = None

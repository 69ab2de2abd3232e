"""One usage record (a row of `usage_events`, migration 0016) and how an ask or a search becomes one.

What is kept is what the caller already saw: its own question, the documents its answer cited or its
search returned (so only what it may read), the scores, its name. Never a token, a filter or a text.
With `store_question` / `store_principal` off, only SHA-256 digests of those are kept. A configured
secret in a question (pipeline.redact) is masked before either is taken.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any, Literal

from pipeline.config import UsageConfig
from pipeline.redact import redact

UsageKind = Literal["ask", "search"]
TOP_HITS = 5  # a search's top hits kept: enough to tell a weak page of results from a good one


def digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True)
class UsageRecord:
    kind: UsageKind
    surface: str  # api | mcp | cli | python
    question: str | None
    question_sha: str
    principal: str
    mode: str
    latency_ms: float
    abstained: bool | None = None
    confidence: float | None = None
    label: str | None = None
    doc_keys: tuple[str, ...] = field(default_factory=tuple)
    scores: tuple[float, ...] = field(default_factory=tuple)

    def row(self) -> tuple[Any, ...]:
        return (
            self.kind,
            self.surface,
            self.question,
            self.question_sha,
            self.principal,
            self.mode,
            self.abstained,
            self.confidence,
            self.label,
            list(self.doc_keys),
            list(self.scores),
            self.latency_ms,
        )


COLUMNS = (
    "kind, surface, question, question_sha, principal, mode, abstained, confidence, label, doc_keys, scores, latency_ms"
)


def _event(
    cfg: UsageConfig, kind: UsageKind, surface: str, who: str, text: str, mode: str, ms: float, **rest
) -> UsageRecord:
    """What every record holds, kept as `cfg` says (the text and the name, or only their digests)."""
    name = who if cfg.store_principal else "sha256:" + digest(who)
    text = redact(text)  # a configured secret pasted into a question is never kept (issue 48)
    return UsageRecord(
        kind, surface, text if cfg.store_question else None, digest(text), name, mode, round(ms, 3), **rest
    )


def for_ask(cfg: UsageConfig, surface: str, who: str, question: str, mode: str, answer: Any, ms: float) -> UsageRecord:
    """An answer (pipeline.answers.Answer, read by its fields) as a record."""
    return _event(
        cfg,
        "ask",
        surface,
        who,
        question,
        mode,
        ms,
        abstained=bool(answer.abstained),
        confidence=float(answer.confidence),
        label=label_of(answer),
        doc_keys=tuple(dict.fromkeys(c.doc_key for c in answer.citations)),
    )


UNSURE = "UNSURE"  # the label of an answer shown but not labelled as answering (its lines are candidates)


def label_of(answer: Any) -> str:
    """The audit mode (STRICT / HYBRID / UNGROUNDED), or UNSURE for an answer that did not abstain but is
    not labelled as answering the question: a reader who got candidates, not an answer."""
    if not answer.abstained and getattr(answer, "addresses_question", None) is False:
        return UNSURE
    return str(answer.audit_mode)


def for_search(cfg: UsageConfig, surface: str, who: str, query: str, mode: str, hits: list, ms: float) -> UsageRecord:
    """A search's hits (dicts or Hits, best first) as a record: the top TOP_HITS documents and scores."""
    top = [h if isinstance(h, dict) else h.as_dict() for h in hits[:TOP_HITS]]
    return _event(
        cfg,
        "search",
        surface,
        who,
        query,
        mode,
        ms,
        doc_keys=tuple(h["doc_key"] for h in top),
        scores=tuple(round(float(h["score"]), 4) for h in top),
    )

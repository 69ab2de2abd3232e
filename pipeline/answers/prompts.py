"""The loop's three prompts and the tolerant parsing of their replies.

Bump PROMPTS_VERSION when a prompt's wording changes: it is part of the cache key.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pipeline.answers.model import INTENTS, Evidence
from pipeline.query.hits import where

PROMPTS_VERSION = "2"  # 2: evidence headers by pipeline.query.hits.where (a nested section as A › B)
DEFAULT_CONFIDENCE = 0.7  # SUFFICIENT without a share we can read: taken at its word, short of certain
NOT_FOUND_TOKEN = "NOT_FOUND"

CLASSIFY_SYSTEM = (
    "You classify questions about technical documentation. Reply with exactly one word, one of: "
    "factual, conceptual, debugging, comparison, exploratory."
)

REASON_SYSTEM = (
    "You decide whether the evidence below is enough to answer the question.\n"
    "Reply with exactly one line, either\n"
    "SUFFICIENT: <your confidence from 0 to 1>\n"
    "or\n"
    "INSUFFICIENT: <a better search query to find what is missing>"
)

RESPOND_SYSTEM = (
    "Answer the question using only the numbered evidence blocks.\n"
    "Rules:\n"
    "- Write one claim per line.\n"
    "- End every line with the pointers of the blocks it rests on, like [E1] or [E1,E3].\n"
    "- Prefer the evidence's own words; quote exact phrases in double quotes.\n"
    "- Do not add anything the evidence does not say.\n"
    f"- If the evidence does not answer the question, reply with exactly {NOT_FOUND_TOKEN}."
)


def evidence_blocks(evidence: list[Evidence]) -> str:
    """`[E1] title › section`, the chunk's text below it, a blank line, then the next block."""
    return "\n\n".join(f"[{e.pointer}] {where(e.title, e.section)}\n{e.text.strip()}" for e in evidence)


def _history(history: list[dict[str, str]] | None) -> str:
    if not history:
        return ""
    turns = "\n".join(f"{t.get('role', 'user')}: {t.get('content', '')}" for t in history)
    return f"Conversation so far:\n{turns}\n\n"


def classify_messages(question: str) -> list[dict[str, str]]:
    return [{"role": "system", "content": CLASSIFY_SYSTEM}, {"role": "user", "content": question}]


def reason_messages(question: str, evidence: list[Evidence], history=None) -> list[dict[str, str]]:
    user = f"{_history(history)}Question: {question}\n\nEvidence:\n\n{evidence_blocks(evidence) or '(none)'}"
    return [{"role": "system", "content": REASON_SYSTEM}, {"role": "user", "content": user}]


def respond_messages(question: str, evidence: list[Evidence], history=None) -> list[dict[str, str]]:
    user = f"{_history(history)}Evidence:\n\n{evidence_blocks(evidence)}\n\nQuestion: {question}"
    return [{"role": "system", "content": RESPOND_SYSTEM}, {"role": "user", "content": user}]


# --- parsing replies ---------------------------------------------------------------------------------------


def _clean(reply: str) -> str:
    """Strip bullets, quotes, brackets and markdown emphasis around a one-line reply."""
    s = reply.strip()
    s = re.sub(r"^<think>.*?</think>", "", s, flags=re.S).strip()  # reasoning models' preamble
    s = re.sub(r"[*_`#>\"'“”‘’\[\]()]", " ", s)
    s = re.sub(r"^\s*(?:[-+•]|\d+[.)])\s+", "", s)
    return " ".join(s.split())


def parse_intent(reply: str) -> str | None:
    """The first of the five intent words in the reply, or None."""
    found = [(m.start(), m.group(0).lower()) for m in re.finditer("|".join(INTENTS), _clean(reply), re.I)]
    return min(found)[1] if found else None


@dataclass(frozen=True)
class SufficiencyVerdict:
    sufficient: bool
    confidence: float | None  # when sufficient
    query: str | None  # when insufficient: the refined query
    parsed: bool  # False: neither word was found (treated as sufficient)


def parse_decision(reply: str) -> SufficiencyVerdict:
    s = _clean(reply)
    m = re.search(r"\b(INSUFFICIENT|SUFFICIENT)\b\s*[:=\-–—]?\s*(.*)", s, re.I)
    if not m:
        return SufficiencyVerdict(True, None, None, False)
    rest = m.group(2).strip()
    if m.group(1).upper() == "INSUFFICIENT":
        query = re.split(r"\n", rest)[0].strip(" .:;-") or None
        return SufficiencyVerdict(False, None, query, True)
    return SufficiencyVerdict(True, _confidence(rest), None, True)


def _confidence(text: str) -> float:
    m = re.search(r"(\d+(?:\.\d+)?|\.\d+)\s*(%)?", text)
    if not m:
        return DEFAULT_CONFIDENCE
    v = float(m.group(1))
    if m.group(2) or 1 < v <= 100:  # above 1: a percentage said without its sign ("85" is 0.85)
        v /= 100
    return min(1.0, max(0.0, v)) if v <= 1 else DEFAULT_CONFIDENCE


_DECLINE = re.compile(
    r"\bNOT[_ ]FOUND\b|not (?:found|covered|mentioned|answered) in the (?:indexed )?(?:evidence|"
    r"documentation|docs|blocks)|\b(?:i (?:do not|don't) know|cannot answer|can't answer|"
    r"no (?:relevant )?(?:evidence|information))\b",
    re.I,
)


def is_decline(reply: str) -> bool:
    """The model says the evidence does not answer (and cites nothing)."""
    return bool(_DECLINE.search(reply)) and not re.search(r"\[\s*E\s*\d", reply, re.I)

"""Whole answers: the audit mode, the question-aware warrant and deflection layer, and `docforge verify`'s input."""

from __future__ import annotations

import re
from dataclasses import replace

from pipeline.answers import subject as sj
from pipeline.answers.model import STRICT_STRATEGIES, Claim, Verdict
from pipeline.answers.verify.blocks import Block, LazyBlocks
from pipeline.answers.verify.claims import POINTER_GROUP, parse_claims
from pipeline.answers.verify.strategies import check_claim


def audit_mode(claims: list[Claim]) -> str:
    """STRICT: every claim quoted (and, when the question was given, the answer addresses it); HYBRID:
    every claim verified, some only paraphrased — or quoted right but deflecting; UNGROUNDED otherwise."""
    if not claims or not all(c.verified for c in claims):
        return "UNGROUNDED"
    return "STRICT" if all(c.strategy in STRICT_STRATEGIES for c in claims) else "HYBRID"


def verify(
    answer: str, evidence: dict[str, str], *, blocks: dict[str, Block] | None = None, question: str | None = None
) -> Verdict:
    """Parse `answer` into claims and check each against the evidence it cites ({"E1": text, ...}); with
    the question, also whether each claim and the answer address it (the warrant and deflection layers)."""
    blocks = blocks if blocks is not None else LazyBlocks(evidence)
    claims = [check_claim(c.text, c.pointers, blocks) for c in parse_claims(answer)]
    if question is None or not claims:
        return Verdict(tuple(claims), audit_mode(claims))  # type: ignore[arg-type]
    return _addressed(question, claims, blocks)


def _addressed(question: str, claims: list[Claim], blocks: dict[str, Block]) -> Verdict:
    """Warrant: a claim addresses the question when it and the evidence it cites carry the question's
    subject (hard anchors: names, identifiers, quoted strings; and enough of its words). Deflection: the
    answer addresses it when one verified claim does and, for a question that asks for a kind of value
    (an environment variable, an attribute, a flag, a file, a number, a date), one claim holds such a value."""
    subj = sj.subject(question)
    shape = sj.shape(question)
    out = []
    for c in claims:
        carried = sj.carried(subj, [_cited(c, blocks)])
        reason = "carries the question's subject" if carried.ok else carried.reason
        out.append(replace(c, addresses_question=carried.ok, reason=reason))
    good = [c for c in out if c.verified and c.addresses_question]
    mode = audit_mode(out)
    why = ""
    if not good:
        why = next((c.reason for c in out if c.verified and not c.addresses_question), "no claim verified")
    elif shape in sj.VALUE_SHAPES and not any(sj.has_shape(c.text, shape) for c in good):
        why = f"the question asks for {sj.VALUE_SHAPES[shape]}; no claim holds one"
    elif name := sj.unframed(subj, [_cited(c, blocks) for c in good]):
        why = f"no claim speaks of {name} and the question together"
    if why:  # quoted right, perhaps, but not an answer: never STRICT
        return Verdict(tuple(out), "HYBRID" if mode == "STRICT" else mode, False, f"deflection: {why}")  # type: ignore[arg-type]
    return Verdict(tuple(out), mode, True, f"{len(good)} of {len(out)} claims carry the question's subject")  # type: ignore[arg-type]


def _cited(c: Claim, blocks: dict[str, Block]) -> str:
    """A claim with the evidence it cites."""
    return "\n".join([c.text] + [blocks[p].text for p in c.pointers if p in blocks])


def verify_request(req: dict) -> dict:
    """One `docforge verify` input object → its verdict (raises ValueError on a malformed object)."""
    if not isinstance(req, dict):
        raise ValueError("expected a JSON object with 'answer' and 'evidence'")
    answer, evidence = req.get("answer"), req.get("evidence")
    if not isinstance(answer, str):
        raise ValueError("'answer' must be a string")
    if isinstance(evidence, str):
        evidence = {"E1": evidence}
    elif isinstance(evidence, list):
        evidence = {f"E{i}": t for i, t in enumerate(evidence, 1)}
    if not isinstance(evidence, dict) or not all(isinstance(t, str) for t in evidence.values()):
        raise ValueError('\'evidence\' must map pointers to texts, e.g. {"E1": "..."}')
    evidence = {_pointer_name(k): t for k, t in evidence.items()}
    implicit = len(evidence) == 1 and not POINTER_GROUP.search(answer)
    if implicit:  # nothing cited, one block: that block is what every line rests on
        (only,) = evidence
        answer = "\n".join(f"{line} [{only}]" for line in answer.splitlines() if line.strip())
    question = req.get("question")
    if question is not None and not isinstance(question, str):
        raise ValueError("'question' must be a string")
    out = verify(answer, evidence, question=question or None).as_dict()
    if implicit:
        out["implicit_pointers"] = True
    if "id" in req:
        out = {"id": req["id"], **out}
    return out


def _pointer_name(k: str) -> str:
    m = re.fullmatch(r"\s*\[?\s*[Ee]\s*(\d+)\s*\]?\s*", str(k))
    return f"E{int(m.group(1))}" if m else str(k)

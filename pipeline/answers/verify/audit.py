"""Whole answers: the audit mode, the question-aware warrant and deflection layer, and `docforge verify`'s input."""

from __future__ import annotations

import re
from dataclasses import replace

from pipeline.answers.model import Claim, Verdict
from pipeline.answers.verify.blocks import CitedBlock, LazyBlocks
from pipeline.answers.verify.claims import POINTER_GROUP, parse_claims
from pipeline.answers.verify.strategies import check_claims


def audit_mode(claims: list[Claim]) -> str:
    """STRICT: every claim quoted (lexical proof); HYBRID: every claim supported, some only reworded;
    UNGROUNDED otherwise, or when no claim could be parsed. Whether the answer addresses the question is a
    statement of its own (Verdict.addresses_question), not a mode."""
    if not claims or not all(c.support != "unsupported" for c in claims):
        return "UNGROUNDED"
    return "STRICT" if all(c.support == "quoted" for c in claims) else "HYBRID"


def verify(
    answer: str, evidence: dict[str, str], *, blocks: dict[str, CitedBlock] | None = None, question: str | None = None
) -> Verdict:
    """Parse `answer` into claims and check each against the evidence it cites ({"E1": text, ...}); with
    the question, also whether each claim and the answer address it (the warrant and deflection layers)."""
    return verify_all([(answer, blocks if blocks is not None else LazyBlocks(evidence), question)])[0]


def verify_all(answers: list[tuple[str, dict[str, CitedBlock], str | None]]) -> list[Verdict]:
    """Verdicts of several answers ((answer, its blocks, the question or None) each), the embedding work
    of all their claims in one batch."""
    parsed = [parse_claims(a) for a, _, _ in answers]
    checked = iter(
        check_claims([(c.text, c.pointers, b) for (_, b, _), ps in zip(answers, parsed, strict=True) for c in ps])
    )
    out = []
    for (_, blocks, question), ps in zip(answers, parsed, strict=True):
        claims = [next(checked) for _ in ps]
        if question is None or not claims:
            out.append(Verdict(tuple(claims), audit_mode(claims)))  # type: ignore[arg-type]
        else:
            out.append(_addressed(question, claims, blocks))
    return out


def _addressed(question: str, claims: list[Claim], blocks: dict[str, CitedBlock]) -> Verdict:
    """Warrant: a claim addresses the question when it and the evidence it cites carry the question's
    subject (hard anchors: names, identifiers, quoted strings; and enough of its words). Deflection: the
    answer addresses it when one verified claim does and, for a question that asks for a kind of value
    (an environment variable, an attribute, a flag, a file, a number, a date), one claim holds such a value."""
    from pipeline.answers import subject as sj  # here: it brings the query package, which answers alone need not

    subj = sj.read(question)
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
    if why:  # supported, perhaps, but not an answer: said apart from the mode
        return Verdict(tuple(out), mode, False, f"deflection: {why}")  # type: ignore[arg-type]
    return Verdict(tuple(out), mode, True, f"{len(good)} of {len(out)} claims carry the question's subject")  # type: ignore[arg-type]


def _cited(c: Claim, blocks: dict[str, CitedBlock]) -> str:
    """A claim with the evidence it cites."""
    return "\n".join([c.text] + [blocks[p].text for p in c.pointers if p in blocks])


def verify_request(req: dict) -> dict:
    """One `docforge verify` input object → its verdict (raises ValueError on a malformed object)."""
    (out,) = verify_requests([req])
    if isinstance(out, ValueError):
        raise out
    return out


def verify_requests(reqs: list) -> list[dict | ValueError]:
    """`docforge verify` input objects → their verdicts, or the ValueError that says what is wrong with
    one; the embedding work of all of them in one batch."""
    prepared: list[tuple[str, dict[str, str], str | None, bool, dict] | ValueError] = []
    for req in reqs:
        try:
            prepared.append(_prepared(req))
        except ValueError as e:
            prepared.append(e)
    good = [p for p in prepared if not isinstance(p, ValueError)]
    made: dict[str, CitedBlock] = {}  # evidence several answers carry is read once (blocks are read-only)
    verdicts = iter(verify_all([(a, LazyBlocks(ev, made), q) for a, ev, q, _, _ in good]))
    out: list[dict | ValueError] = []
    for p in prepared:
        if isinstance(p, ValueError):
            out.append(p)
            continue
        d = next(verdicts).as_dict()
        if p[3]:
            d["implicit_pointers"] = True
        out.append({"id": p[4]["id"], **d} if "id" in p[4] else d)
    return out


def _prepared(req: object) -> tuple[str, dict[str, str], str | None, bool, dict]:
    """(answer, evidence by pointer, question, whether the pointers were implicit, the request)."""
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
    return answer, evidence, question or None, implicit, req


def _pointer_name(k: str) -> str:
    m = re.fullmatch(r"\s*\[?\s*[Ee]\s*(\d+)\s*\]?\s*", str(k))
    return f"E{int(m.group(1))}" if m else str(k)

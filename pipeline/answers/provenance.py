"""Provenance: each answer's stages as a hash chain, and its re-check.

    question → retrieval → evidence → prompt → raw_answer → claims → verification → rendered → label

Stage i's hash is sha256(name, hash of stage i-1, canonical JSON of its payload);
the last hash is the root (`dag_root`), stored beside the answer. `check` recomputes
every stage from what is stored — the chain itself, the evidence's text hashes
against the chunks now in the store, the prompt from question and evidence, the
claims from the raw answer, the verdict from claims and evidence, the rendering
and the label — and names the first stage that does not match.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from pipeline.answers import params, prompts, render, verify
from pipeline.answers.cache import canonical_json
from pipeline.answers.model import Claim, Evidence, text_hash

STAGES = ("question", "retrieval", "evidence", "prompt", "raw_answer", "claims", "verification", "rendered", "label")


def stage_hash(name: str, prev: str, payload: Any) -> str:
    return hashlib.sha256(f"{name}\n{prev}\n{canonical_json(payload)}".encode()).hexdigest()


def chain(payloads: dict[str, Any]) -> tuple[list[dict[str, Any]], str]:
    """([{stage, hash, payload}], root) over STAGES, in order."""
    prev, out = "", []
    for name in STAGES:
        prev = stage_hash(name, prev, payloads[name])
        out.append({"stage": name, "hash": prev, "payload": payloads[name]})
    return out, prev


def evidence_payload(evidence: list[Evidence]) -> list[dict[str, Any]]:
    return [
        {
            "pointer": e.pointer,
            "evidence_id": e.evidence_id,
            "chunk_id": e.chunk_id,
            "text_hash": text_hash(e.text),
            "text": e.text,
            "title": e.title,
            "section": e.section,
            "url": e.url,
            "doc_key": e.doc_key,
            "source": e.source,
            "chunk_index": e.chunk_index,
            "score": e.score,
            "page": e.page,
            "rerank_score": e.rerank_score,
        }
        for e in evidence
    ]


def evidence_from(payload: list[dict[str, Any]]) -> list[Evidence]:
    return [Evidence(**{k: v for k, v in d.items() if k != "text_hash"}) for d in payload]


def prompt_payload(model: str, question: str, evidence: list[Evidence], history, max_sentences: int) -> Any:
    if model == "extractive":
        return {"extractive": params.code_digest(), "max_sentences": max_sentences}
    return prompts.respond_messages(question, evidence, history)


def claims_payload(raw: str) -> list[dict[str, Any]]:
    return [{"text": c.text, "pointers": list(c.pointers)} for c in verify.parse_claims(raw)]


def label_payload(audit_mode: str, abstained: bool, confidence: float, unsure: str = "") -> dict[str, Any]:
    """The label; `unsure`: the note an answer offering candidates opens with (kept only when there is one,
    so earlier chains hash as they did)."""
    out: dict[str, Any] = {"audit_mode": audit_mode, "abstained": abstained, "confidence": confidence}
    return out | {"unsure": unsure} if unsure else out


@dataclass(frozen=True)
class Check:
    ok: bool
    stage: str | None = None  # the first stage that does not match
    reason: str = ""


def check(
    dag_root: str, answer: dict[str, Any], stages: list[dict[str, Any]], current_chunks: dict[str, str | None]
) -> Check:
    """Re-derive every stage; `current_chunks` maps each cited chunk id to its text now (None: gone)."""
    by = {s.get("stage"): s for s in stages if isinstance(s, dict)}
    missing = [n for n in STAGES if n not in by]
    if missing:
        return Check(False, missing[0], "stage missing from the stored record")
    p: dict[str, Any] = {n: by[n].get("payload") for n in STAGES}
    prev = ""
    for n in STAGES:
        prev = stage_hash(n, prev, p[n])
        if prev != by[n].get("hash"):
            return Check(False, n, "its stored payload no longer hashes to its stored hash")
    if prev != dag_root or answer.get("dag_root") != dag_root:
        return Check(False, "label", "the chain's root differs from the stored root")
    q = p["question"]
    if answer.get("question") != q.get("question"):
        return Check(False, "question", "the stored answer's question differs from the question stage")
    try:
        evidence = evidence_from(p["evidence"])
    except TypeError as err:
        return Check(False, "evidence", f"malformed evidence: {err}")
    for e, d in zip(evidence, p["evidence"], strict=False):
        if text_hash(e.text) != d.get("text_hash") or e.evidence_id != d.get("text_hash"):
            return Check(False, "evidence", f"{e.pointer}: its text does not match its hash")
        now = current_chunks.get(e.chunk_id)
        if now is None:
            return Check(False, "evidence", f"{e.pointer}: chunk {e.chunk_id[:12]}… is no longer in the index")
        if text_hash(now) != d["text_hash"]:
            return Check(False, "evidence", f"{e.pointer}: chunk {e.chunk_id[:12]}… has changed since")
    model = answer.get("model", "")
    expected_prompt = prompt_payload(
        model,
        q.get("question", ""),
        evidence,
        q.get("history"),
        (p["prompt"] or {}).get("max_sentences", 0) if model == "extractive" else 0,
    )
    if canonical_json(expected_prompt) != canonical_json(p["prompt"]):
        return Check(False, "prompt", "the prompt does not follow from the question and the evidence")
    label = p["label"] if isinstance(p["label"], dict) else {}
    raw = p["raw_answer"] if isinstance(p["raw_answer"], str) and not label.get("abstained") else ""
    if claims_payload(raw) != p["claims"]:
        return Check(False, "claims", "the claims do not parse from the raw answer")
    stored_question = p["question"].get("question") if isinstance(p["question"], dict) else None
    question_aware = isinstance(p["verification"], dict) and "addresses_question" in p["verification"]
    verdict = verify.verify(
        raw, {e.pointer: e.text for e in evidence}, question=stored_question if question_aware else None
    )
    if canonical_json(verdict.as_dict()) != canonical_json(p["verification"]):
        return Check(False, "verification", "re-verifying the claims gives another verdict")
    claims = [
        Claim(c["text"], tuple(c["pointers"]), c["verified"], c["strategy"], tuple(c["violations"]))
        for c in verdict.as_dict()["claims"]
    ]
    if (
        render.render(
            claims, verdict.audit_mode, bool(label.get("abstained")), label.get("unsure") or verdict.deflection
        )
        != p["rendered"]
        or answer.get("answer") != p["rendered"]
    ):
        return Check(False, "rendered", "the rendered answer differs from what the verdict renders to")
    if (
        label.get("audit_mode") != (verdict.audit_mode if not label.get("abstained") else "UNGROUNDED")
        or answer.get("audit_mode") != label.get("audit_mode")
        or answer.get("abstained", False) != label.get("abstained")
        or answer.get("confidence") != label.get("confidence")
        or answer.get("claims") != p["verification"]["claims"]
    ):
        return Check(False, "label", "the stored answer's label or claims differ from the verified ones")
    return Check(True)

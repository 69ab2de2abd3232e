"""Provenance: each answer's stages as a hash chain, and its re-check.

    question → retrieval → evidence → prompt → raw_answer → claims → verification → rendered → label

Stage i's hash is sha256(name, hash of stage i-1, canonical JSON of its payload);
the last hash is the root (`dag_root`), stored beside the answer. `check` recomputes
every stage from what is stored — the chain itself, each evidence block against
every chunk it joins as the store holds them now (a passage of the search joins
neighbouring chunks, so a block may span several), the prompt from question and evidence, the
claims from the raw answer, the verdict from claims and evidence, the rendering
and the label — and names the first stage that does not match.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from pipeline.answers import params, prompts, render, verify
from pipeline.answers.cache import canonical_json, verifier_digest
from pipeline.answers.model import Evidence, text_hash
from pipeline.query.hits import JOIN

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
    """Each block with its text, that text's hash, and every chunk it joins (in order): a block of a
    passage spans several chunks, and `check` proves it from all of them."""
    return [
        {
            "pointer": e.pointer,
            "evidence_id": e.evidence_id,
            "chunk_id": e.chunk_id,
            "chunk_ids": list(e.chunks),
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
    out = []
    for d in payload:
        fields = {k: v for k, v in d.items() if k != "text_hash"}
        fields["chunk_ids"] = tuple(fields.get("chunk_ids") or ())
        out.append(Evidence(**fields))
    return out


def cited_chunks(stages: list[dict[str, Any]]) -> list[str]:
    """Every chunk id a recorded answer's evidence joins (for `check`'s `current_chunks`)."""
    payload = next((s.get("payload") for s in stages if isinstance(s, dict) and s.get("stage") == "evidence"), None)
    ids: list[str] = []
    for d in payload if isinstance(payload, list) else []:
        if isinstance(d, dict):
            ids += [str(i) for i in (d.get("chunk_ids") or [d.get("chunk_id")])]
    return list(dict.fromkeys(ids))


def block_changed(e: Evidence, current: dict[str, str | None]) -> str:
    """Why evidence block `e` no longer is what its chunks hold now, naming the chunk; "" when it still is
    (its chunks' texts now, joined as the search joined them, are its text)."""
    at = 0
    for cid in e.chunks:
        now = current.get(cid)
        if now is None:
            return f"{e.pointer}: chunk {cid[:12]}… is no longer in the index"
        if not e.text.startswith(now, at):
            return f"{e.pointer}: chunk {cid[:12]}… has changed since"
        at += len(now) + len(JOIN)
    if text_hash(JOIN.join(current[c] or "" for c in e.chunks)) == e.evidence_id:
        return ""
    if not e.chunk_ids:  # recorded with its first chunk only, before blocks named every chunk they join
        return f"{e.pointer}: its record names one chunk of several; ask again with --no-cache to record it whole"
    return f"{e.pointer}: its chunks no longer join to its text"


def prompt_payload(model: str, question: str, evidence: list[Evidence], history, max_sentences: int) -> Any:
    if model == "extractive":
        return {"extractive": params.code_digest(), "max_sentences": max_sentences}
    return prompts.respond_messages(question, evidence, history)


def claims_payload(raw: str) -> list[dict[str, Any]]:
    return [{"text": c.text, "pointers": list(c.pointers)} for c in verify.parse_claims(raw)]


def label_payload(audit_mode: str, abstained: bool, confidence: float, unsure: str = "") -> dict[str, Any]:
    """The label, and the digest of the verifier that gave it (so a verdict that differs later can be
    told apart: the verifier changed, or the record did); `unsure`: the note an answer offering candidates
    opens with (kept only when there is one)."""
    out: dict[str, Any] = {
        "audit_mode": audit_mode,
        "abstained": abstained,
        "confidence": confidence,
        "verifier": verifier_digest(),
    }
    return out | {"unsure": unsure} if unsure else out


@dataclass(frozen=True)
class ProvenanceCheck:
    ok: bool
    stage: str | None = None  # the first stage that does not match
    reason: str = ""


def check(
    dag_root: str, answer: dict[str, Any], stages: list[dict[str, Any]], current_chunks: dict[str, str | None]
) -> ProvenanceCheck:
    """Re-derive every stage; `current_chunks` maps each cited chunk id (`cited_chunks`) to its text now
    (None or absent: gone)."""
    by = {s.get("stage"): s for s in stages if isinstance(s, dict)}
    missing = [n for n in STAGES if n not in by]
    if missing:
        return ProvenanceCheck(False, missing[0], "stage missing from the stored record")
    p: dict[str, Any] = {n: by[n].get("payload") for n in STAGES}
    prev = ""
    for n in STAGES:
        prev = stage_hash(n, prev, p[n])
        if prev != by[n].get("hash"):
            return ProvenanceCheck(False, n, "its stored payload no longer hashes to its stored hash")
    if prev != dag_root or answer.get("dag_root") != dag_root:
        return ProvenanceCheck(False, "label", "the chain's root differs from the stored root")
    if not isinstance(p["question"], dict) or answer.get("question") != p["question"].get("question"):
        return ProvenanceCheck(False, "question", "the stored answer's question differs from the question stage")
    try:
        evidence = evidence_from(p["evidence"])
    except (TypeError, AttributeError) as err:
        return ProvenanceCheck(False, "evidence", f"malformed evidence: {err}")
    for e, d in zip(evidence, p["evidence"], strict=True):
        if text_hash(e.text) != d.get("text_hash") or e.evidence_id != d.get("text_hash"):
            return ProvenanceCheck(False, "evidence", f"{e.pointer}: its text does not match its hash")
        if why := block_changed(e, current_chunks):
            return ProvenanceCheck(False, "evidence", why)
    return _derived(answer, p, evidence)


def _derived(answer: dict[str, Any], p: dict[str, Any], evidence: list[Evidence]) -> ProvenanceCheck:
    """The stages after the evidence, each recomputed from the ones before it."""
    q, model = p["question"], answer.get("model", "")
    expected_prompt = prompt_payload(
        model,
        q.get("question", ""),
        evidence,
        q.get("history"),
        (p["prompt"] or {}).get("max_sentences", 0) if model == "extractive" else 0,
    )
    if canonical_json(expected_prompt) != canonical_json(p["prompt"]):
        return ProvenanceCheck(False, "prompt", "the prompt does not follow from the question and the evidence")
    label = p["label"] if isinstance(p["label"], dict) else {}
    abstained = bool(label.get("abstained"))
    raw = p["raw_answer"] if isinstance(p["raw_answer"], str) and not abstained else ""
    if claims_payload(raw) != p["claims"]:
        return ProvenanceCheck(False, "claims", "the claims do not parse from the raw answer")
    question_aware = isinstance(p["verification"], dict) and "addresses_question" in p["verification"]
    verdict = verify.verify(
        raw, {e.pointer: e.text for e in evidence}, question=q.get("question") if question_aware else None
    )
    if canonical_json(verdict.as_dict()) != canonical_json(p["verification"]):
        then = label.get("verifier")
        if then and then != verifier_digest():
            why = f"re-verifying gives another verdict: the verifier changed since (digest {then[:12]}…)"
            return ProvenanceCheck(False, "verification", why + "; ask again with --no-cache for a verdict of this one")
        return ProvenanceCheck(False, "verification", "re-verifying the claims gives another verdict")
    if (
        render.render(
            list(verdict.claims), verdict.audit_mode, abstained, label.get("unsure") or "", render.places(evidence)
        )
        != p["rendered"]
        or answer.get("answer") != p["rendered"]
    ):
        return ProvenanceCheck(False, "rendered", "the rendered answer differs from what the verdict renders to")
    if (
        label.get("audit_mode") != (verdict.audit_mode if not abstained else "UNGROUNDED")
        or answer.get("audit_mode") != label.get("audit_mode")
        or answer.get("abstained", False) != label.get("abstained")
        or answer.get("confidence") != label.get("confidence")
        or answer.get("claims") != p["verification"]["claims"]
    ):
        return ProvenanceCheck(False, "label", "the stored answer's label or claims differ from the verified ones")
    return ProvenanceCheck(True)

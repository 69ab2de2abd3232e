"""The two ways to draft an answer: extractive (no LLM) and the LLM loop (classify, retrieve ⇄ reason,
respond). Each returns a Draft for the loop to verify, render and record (pipeline.answers.loop)."""

from __future__ import annotations

import re
import time
from typing import Any

from pipeline.answers import extractive, lexicon, prompts, provenance, retrieve, subject, verify
from pipeline.answers.model import Step
from pipeline.answers.run import Draft, Run, Tools
from pipeline.query.leads import document_leads

CAPPED_CONFIDENCE = 0.3  # max_iterations reached without SUFFICIENT
CLASSIFY_TOKENS = 10  # one intent word (prompts.CLASSIFY_SYSTEM), room left for a model's stray punctuation
REASON_TOKENS = 80  # one line: "SUFFICIENT: 0.8" or "INSUFFICIENT: <a refined query>" (prompts.REASON_SYSTEM)


# An error code as documentation writes it, in capitals: letters then four or more digits (catalogues
# number that way, "E0502", "ORA-00942"; shorter runs are mostly format names, "X509"), or an ERR-prefixed
# name joined by underscores ("ERR_INVALID_ARG_TYPE"); errno-style "E..." names are `_errno_name`.
_ERROR_CODE = re.compile(r"\b(?:[A-Z]{1,5}-?\d{4,}|ERR[A-Z0-9]*(?:_[A-Z0-9]+)+)\b")
_CAPS_E = re.compile(r"\bE[A-Z]{4,}\b")  # "ENOENT", "EACCES": E and four capitals or more ("EOF" is a name)


def _errno_name(question: str) -> bool:
    """An all-caps E-word that is no English word ("ENOENT", not "EXPOSE" or "ESCAPE"); none without WordNet."""
    return lexicon.available() and any(not lexicon.base_forms(w.lower()) for w in _CAPS_E.findall(question))


def heuristic_intent(question: str) -> str:
    """The intent without an LLM: a few cue words, first match wins."""
    q = question.lower()
    if re.search(r"\b(vs\.?|versus|differen\w*|compar\w*|better than|instead of|trade-?offs?)\b", q):
        return "comparison"
    if (
        re.search(
            r"\b(error|exception|panic\w*|fail\w*|crash\w*|bug|broken|not working|doesn'?t work|warning|"
            r"traceback|stack trace)\b",
            q,
        )
        or _ERROR_CODE.search(question)
        or _errno_name(question)
    ):
        return "debugging"
    if re.match(r"\s*(why|how does|how do\b.*\bwork|explain|what is the (purpose|point|idea|motivation))", q):
        return "conceptual"
    if re.match(r"\s*(what|when|who|which|where|how many|how much|is|are|does|do|did|can|was|were)\b", q):
        return "factual"
    return "exploratory"


def extractive_draft(a: Tools, run: Run) -> Draft:
    """Quoted lines of the retrieved evidence (pipeline.answers.extractive), scored by the fitted model."""
    intent = heuristic_intent(run.question)
    hits = a.retrieve(run, run.question, 1, a.cfg.max_evidence)
    t = time.perf_counter()
    with a.connection() as conn:
        evidence = retrieve.evidence(conn, hits, run.scope.reader)  # each line cited under its own section
        # The rule: a restricted caller's trace and answer hold only fields computed from what it may
        # read. The index's word statistics count every document, so for such a caller none are
        # used (the evidence's own stand in): "the index does not know X" would tell it whether
        # documents it may not read hold X, and coverage and similarity would move with them.
        words = subject.question_words(run.question)
        stats = (
            subject.corpus_stats(conn, words, subject.hard_anchors(run.question))
            if run.scope.reader.full_access
            else None
        )
        leads = document_leads(conn, list(dict.fromkeys(e.doc_key for e in evidence)), run.scope.reader)
    params = a.params()
    ex = extractive.extract(
        run.question, evidence, params, a.cfg.extractive_sentences, embed=a.embed, stats=stats, leads=leads
    )
    # Only what the verifier passes as quoted is shown: STRICT by construction.
    lines = [
        (s, e)
        for s, e in ex.lines
        if verify.check_claim(" ".join(s.split()), (e.pointer,), {e.pointer: verify.CitedBlock(e.text)}).strategy
        in ("quote", "span")
    ]
    ms = (time.perf_counter() - t) * 1000
    run.time("respond", ms)
    detail: dict[str, object] = {"model": "extractive", "sentences": len(lines)}
    detail["sure"] = ex.sure
    if run.scope.reader.full_access:
        # The model's scores read the hits' retrieval scores, whose keyword leg weighs words by the whole
        # index (docs/security.md): a restricted caller's trace leaves them out (the rule above).
        detail |= {"answerable": ex.answerable, "similarity": ex.similarity, "score": ex.score}
    run.trace.append(Step("respond", ms, {**detail, "abstained": ex.reason} if ex.reason else detail))
    raw = extractive.answer_text(lines)
    abstained = not lines
    prompt = provenance.prompt_payload("extractive", run.question, evidence, run.history, a.cfg.extractive_sentences)
    why = (ex.reason or "no line of the evidence could be quoted verbatim") if abstained else ""
    conf = 0.0 if abstained else ex.confidence
    reason = _sure_reason(ex, params, lines)
    held = ex.held if run.scope.reader.full_access else {}  # the line model's scores: as the trace's (the rule)
    return Draft(evidence, raw, intent, 1, conf, abstained, prompt, why, ex.sure, reason, held)


def _sure_reason(ex: extractive.Extract, params: Any, lines: list) -> str:
    """What the calibrated label rests on, as the reader is told it: sure, the confidence and the fitted
    bar it reaches; not sure, what the confidence is a probability of (the bar is the answerer's, not
    the reader's: the trace has it)."""
    if ex.sure:
        return f"confidence {ex.confidence:.2f} ≥ {params.sure:.2f}: likely answers the question"
    n = len({(e.doc_key, e.section) for _, e in lines})
    if params.shown is None:  # the confidence is still the best passage's alone
        return f"not sure: confidence {ex.confidence:.2f} that the first passage holds the answer"
    which = f"one of these {n} passages" if n != 1 else "this passage"
    return f"not sure: confidence {ex.confidence:.2f} that {which} holds the answer"


def llm_draft(a: Tools, run: Run, max_iterations: int) -> Draft:
    t = time.perf_counter()
    reply = a.chat(run, "classify", prompts.classify_messages(run.question), max_tokens=CLASSIFY_TOKENS)
    intent = prompts.parse_intent(reply) or heuristic_intent(run.question)
    run.trace.append(Step("classify", (time.perf_counter() - t) * 1000, {"intent": intent}))
    pool = retrieve.EvidencePool(a.cfg.max_evidence)
    query, seen, confidence, iterations = run.question, set(), prompts.DEFAULT_CONFIDENCE, 0
    for iteration in range(1, max_iterations + 1):
        iterations = iteration
        seen.add(query.casefold())
        new = pool.add(a.retrieve(run, query, iteration, a.cfg.evidence_k))
        if not pool.items:
            break
        t = time.perf_counter()
        decision = prompts.parse_decision(
            a.chat(
                run, "reason", prompts.reason_messages(run.question, pool.items, run.history), max_tokens=REASON_TOKENS
            )
        )
        done = (
            decision.sufficient
            or iteration == max_iterations
            or not decision.query
            or decision.query.casefold() in seen
        )
        run.trace.append(
            Step(
                "reason",
                (time.perf_counter() - t) * 1000,
                {
                    "iteration": iteration,
                    "decision": "SUFFICIENT" if decision.sufficient else "INSUFFICIENT",
                    "confidence": decision.confidence,
                    "refined_query": decision.query,
                    "parsed": decision.parsed,
                    "new_evidence": new,
                    "evidence": len(pool.items),
                },
            )
        )
        if decision.sufficient:
            confidence = decision.confidence if decision.confidence is not None else prompts.DEFAULT_CONFIDENCE
            break
        if done:  # out of iterations (or of new queries): answer anyway, with little confidence
            confidence = CAPPED_CONFIDENCE
            break
        query = decision.query  # type: ignore[assignment]
    if not pool.items:
        return Draft([], "", intent, iterations, 0.0, True, reason="nothing retrieved")
    prompt = prompts.respond_messages(run.question, pool.items, run.history)
    t = time.perf_counter()
    raw = a.chat(run, "respond", prompt)
    abstained = prompts.is_decline(raw) or not raw.strip()
    run.trace.append(
        Step(
            "respond",
            (time.perf_counter() - t) * 1000,
            {"model": a.model_name, "evidence": len(pool.items), "declined": abstained},
        )
    )
    why = "the model found no answer in the evidence" if abstained else ""
    return Draft(pool.items, raw, intent, iterations, min(confidence, 1.0), abstained, prompt, why)

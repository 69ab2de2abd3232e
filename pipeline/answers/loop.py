"""The answer loop: cache → classify → retrieve ⇄ reason → respond → verify → render → record.

With an LLM configured (`llm.base_url` + `llm.model`):
    classify   one of the five intents (prompts.CLASSIFY_SYSTEM);
    retrieve   hybrid search, evidence accumulated across iterations, deduplicated by content;
    reason     SUFFICIENT: <confidence> (stop) or INSUFFICIENT: <refined query> (search again); after
               max_iterations it answers anyway, confidence capped at 0.3;
    respond    claims over the numbered evidence blocks, each line with its pointers.
Without one, the answer is extractive (pipeline.answers.extractive) and `model` is "extractive".
Either way the claims are verified (pipeline.answers.verify), rendered, chained (provenance) and
stored in the `answers` table under the cache key (cache).
"""

from __future__ import annotations

import logging
import time
import uuid
from contextlib import AbstractContextManager
from typing import Any

import numpy as np
import psycopg

from pipeline.access import FULL_ACCESS, Principal
from pipeline.answers import cache, drafts, prompts, provenance, render, retrieve, subject, verify
from pipeline.answers import params as fitted
from pipeline.answers.drafts import heuristic_intent
from pipeline.answers.llm import ChatClient
from pipeline.answers.model import Answer, Citation, Step
from pipeline.answers.run import Checked, Draft, Run
from pipeline.answers.vectors import LineVectors
from pipeline.config import Settings
from pipeline.errors import AnswerError, StoreError
from pipeline.query import Searcher
from pipeline.query.hits import JOIN
from pipeline.redact import redact
from pipeline.store import answers as stored_answers
from pipeline.store.schema import open_built

log = logging.getLogger(__name__)
MAX_QUESTION = 4000  # characters: a question, not a pasted page (the API refuses longer: servers/ask.py)
__all__ = ["Answerer", "heuristic_intent"]
_UNSET: Any = object()


def unsure(draft: Draft, abstained: bool) -> str:
    """The note an extractive answer below the fitted `sure` opens with (its lines are candidates), or ""."""
    return draft.sure_reason if draft.sure is False and not abstained else ""


class Answerer:
    """Answers questions over one store. Thread-safe: searches and cache statements alike run on the
    Searcher's pooled connections; LLM calls of concurrent asks overlap."""

    def __init__(
        self,
        settings: Settings,
        *,
        searcher: Searcher | None = None,
        llm: ChatClient | None = _UNSET,
        url: str | None = None,
        embedder=None,
    ):
        self.settings = settings
        self.cfg = settings.answers
        self._own_searcher = searcher is None
        self.searcher = searcher or Searcher(settings, url=url, embedder=embedder)
        if llm is _UNSET:
            llm = ChatClient(settings.llm) if settings.llm.base_url else None
        self.llm: ChatClient | None = llm
        self._ready = False
        self._vectors: LineVectors | None = None

    @property
    def model_name(self) -> str:
        return (self.llm.cfg.model or "") if self.llm else "extractive"

    def close(self) -> None:
        if self._own_searcher:
            self.searcher.close()
        if self.llm:
            self.llm.close()

    def __enter__(self) -> Answerer:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # --- the store -------------------------------------------------------------------------------------

    def _store_ready(self, conn: psycopg.Connection) -> bool:
        """True once the store holds an index; OutdatedStore for an older one (an ask never migrates:
        `docforge db migrate` and ingest do)."""
        if not self._ready:
            self._ready = open_built(conn) is not None
        return self._ready

    # --- asking ----------------------------------------------------------------------------------------

    def ask(
        self,
        question: str,
        *,
        filters: dict | None = None,
        mode: str = "hybrid",
        rerank: bool | None = None,
        boost_tags: tuple[str, ...] | list[str] = (),
        history: list[dict[str, str]] | None = None,
        max_iterations: int | None = None,
        use_cache: bool | None = None,
        trace: bool = False,
        reader: Principal = FULL_ACCESS,
    ) -> Answer:
        """A verified answer from what `reader` may read (full access by default: the CLI, the Python API)."""
        t0 = time.perf_counter()
        # A secret pasted into a question (a configured token) is masked before anything keeps it: the
        # cache, the provenance chain, the usage record, the log (pipeline.redact; issue 48).
        question = redact(" ".join(question.replace("\x00", " ").split()))
        if not question:
            raise AnswerError("the question is empty")
        if len(question) > MAX_QUESTION:
            raise AnswerError(f"the question is longer than {MAX_QUESTION} characters")
        scope = retrieve.Scope(filters, mode, rerank, tuple(t for t in boost_tags if t), reader)
        max_iterations = max_iterations or self.cfg.max_iterations
        run = Run(question, scope, history or None, max_iterations)
        use_cache = self.cfg.cache if use_cache is None else use_cache

        with self.searcher.connection() as conn:
            t = time.perf_counter()
            ready = self._store_ready(conn)
            key = self._key(conn, run) if ready else None
            hit = stored_answers.lookup(conn, key, JOIN) if key and use_cache else None
            run.time("cache_lookup", (time.perf_counter() - t) * 1000)
        if hit is not None and hit.fresh:
            return self._from_cache(hit, run, t0, trace)
        miss: dict[str, Any] = {"hit": False, "used": bool(use_cache)}
        if hit is not None:  # its evidence changed under it (pipeline.store.answers.lookup): answered afresh
            miss["stale"] = hit.id
        run.trace.append(Step("cache", run.timings["cache_lookup"], miss))

        if not ready:
            draft = Draft([], "", heuristic_intent(question), 0, 0.0, True)
        elif self.llm is None:
            draft = drafts.extractive_draft(self, run)
        else:
            draft = drafts.llm_draft(self, run, max_iterations)
        checked = self._verify(run, draft)
        answer = self._answer(run, draft, checked)
        answer_id = dag_root = None
        if ready:
            t = time.perf_counter()
            answer_id, dag_root = self._record(run, key, answer, draft, checked)
            run.time("cache_write", (time.perf_counter() - t) * 1000)
        done = {
            "answer_id": answer_id,
            "dag_root": dag_root,
            "timings": run.timings,
            "latency_ms": round((time.perf_counter() - t0) * 1000, 3),
            "trace": [s.as_dict() for s in run.trace] if trace else None,
        }
        return answer.model_copy(update=done)  # a new Answer: none is changed once built

    def _verify(self, run: Run, draft: Draft) -> Checked:
        """The draft's claims through the verifier; an LLM answer that does not carry the question's
        subject, when no evidence does either (or none speaks of the name that frames it), becomes an
        abstention."""
        t = time.perf_counter()
        question, abstained, reason = run.question, draft.abstained, draft.reason
        verdict = verify.verify(
            "" if abstained else draft.raw, {e.pointer: e.text for e in draft.evidence}, question=question
        )
        if self.llm is not None and not abstained and verdict.addresses_question is False:
            # The model's answer does not carry the question's subject: when no evidence does either,
            # the documentation does not answer it (the same check as the extractive answer's).
            subj = subject.read(question)
            carried = subject.carried(subj, draft.evidence)
            if not carried.ok or (name := subject.unframed(subj, draft.evidence)):
                abstained = True
                reason = carried.reason or subject.UNFRAMED.format(name)
                verdict = verify.verify("", {}, question=question)
        claims = verdict.claims
        audit = "UNGROUNDED" if abstained else verdict.audit_mode
        confidence = draft.confidence
        if claims and not abstained:  # a confidence the verdict does not back is not reported
            confidence = round(confidence * sum(c.verified for c in claims) / len(claims), 3)
        run.time("verify", (time.perf_counter() - t) * 1000)
        run.trace.append(
            Step(
                "verify",
                run.timings["verify"],
                {"claims": len(claims), "verified": sum(c.verified for c in claims), "audit_mode": audit},
            )
        )
        return Checked(verdict, audit, abstained, confidence, reason)

    @staticmethod
    def _why_not(run: Run, checked: Checked) -> str:
        """Why it abstained. A reader who may not read everything is told less: "the index does not
        know X" is said of the whole index, so it would tell whether hidden documents hold X."""
        return checked.reason if run.scope.reader.full_access else "nothing you may read answers it"

    def _key(self, conn: psycopg.Connection, run: Run) -> str:
        state = stored_answers.state(conn, cache.scope_sources(run.scope.filters))
        return cache.cache_key(
            {
                "state": state,
                "question": cache.canonical_question(run.question, self.cfg.cache_mode),
                "question_mode": self.cfg.cache_mode,
                "model": self._profile(),
                "history": run.history,
                "scope": run.scope.as_dict(),
                "max_iterations": run.max_iterations if self.llm else None,
                "search": self.searcher.config.model_dump(mode="json", exclude=set(self.searcher.config.limits)),
                "answers": self.cfg.model_dump(mode="json", exclude={"cache", "cache_mode"}),
                "verifier": {"policy": verify.POLICY, "digest": cache.verifier_digest()},
            }
        )

    def _profile(self) -> dict[str, Any]:
        if self.llm is None:  # the fitted parameters and the code that reads them, not a hand-kept version
            return {"model": "extractive", "params": self.params().digest, "code": fitted.code_digest()}
        return {**self.llm.profile, "prompts": prompts.PROMPTS_VERSION}

    def params(self) -> fitted.Params:
        """The extractive answerer's fitted parameters: config `answers.params`, else the index model's."""
        return fitted.load(self._model_id(), self.cfg.params)

    def _model_id(self) -> str:
        return self.searcher.model_name  # the name alone: a cached answer loads no model

    def _from_cache(self, hit: stored_answers.Stored, run: Run, t0: float, trace: bool) -> Answer:
        step = Step("cache", run.timings["cache_lookup"], {"hit": True, "answer_id": hit.id})
        return Answer(
            **{
                **hit.answer,
                "cache": "hit",
                "input_tokens": 0,
                "output_tokens": 0,
                "llm_ms": 0.0,
                "timings": run.timings,
                "latency_ms": round((time.perf_counter() - t0) * 1000, 3),
                "trace": [step.as_dict()] if trace else None,
            }
        )

    # --- what the two ways to answer use (pipeline.answers.run.Tools) --------------------------------------

    def connection(self) -> AbstractContextManager[psycopg.Connection]:
        return self.searcher.connection()

    def retrieve(self, run: Run, query: str, iteration: int, limit: int) -> list:
        t = time.perf_counter()
        hits = retrieve.search(self.searcher, query, run.scope, limit, self.cfg.per_doc)
        ms = (time.perf_counter() - t) * 1000
        run.time("retrieve", ms)
        run.retrieval.append(
            {
                "iteration": iteration,
                "query": query,
                "hits": [{"chunk_id": h.chunk_id, "score": h.score, "rerank_score": h.rerank_score} for h in hits],
            }
        )
        run.trace.append(Step("retrieve", ms, {"iteration": iteration, "query": query, "hits": len(hits)}))
        return hits

    def embed(self, texts):
        """The question (as a query) and the candidate lines (as documents, each computed once: vectors)."""
        q = self.searcher.query_vector(texts[0])[None, :]  # kept on disk by the CLI's searcher
        if len(texts) == 1:
            return q
        if self._vectors is None or self._vectors.model != self._model_id():
            self._vectors = LineVectors(self._model_id(), self.searcher.connection)
        # the model loads only when a line was never embedded before (LineVectors: memory, then the store)
        docs = self._vectors.encode(list(texts[1:]), lambda b: self.searcher.embedder.encode(b, kind="document"))
        return np.vstack([np.asarray(q, dtype=np.float32), docs])

    def chat(self, run: Run, stage: str, messages, max_tokens: int | None = None) -> str:
        t = time.perf_counter()
        c = self.llm.chat(messages, max_tokens=max_tokens)  # type: ignore[union-attr]
        run.input_tokens += c.input_tokens
        run.output_tokens += c.output_tokens
        run.llm_ms += c.ms
        run.time(stage, (time.perf_counter() - t) * 1000)
        return c.text

    # --- the result -----------------------------------------------------------------------------------------

    def _answer(self, run: Run, draft: Draft, checked: Checked) -> Answer:
        claims, abstained, verdict = checked.verdict.claims, checked.abstained, checked.verdict
        cited = {p for c in claims for p in c.pointers}
        used = [e for e in draft.evidence if e.pointer in cited]
        addresses, why = verdict.addresses_question, verdict.reason
        if draft.sure is not None:  # the extractive answer's calibrated label replaces the lexical one
            addresses, why = draft.sure, draft.sure_reason
        known = not abstained and addresses is not None
        note = unsure(draft, abstained)
        return Answer(
            question=run.question,
            answer=render.render(list(claims), checked.audit, abstained, note, render.places(draft.evidence)),
            claims=[c.as_dict() for c in claims],
            citations=[Citation(**e.citation()) for e in used],
            sources=list(dict.fromkeys(e.url for e in used)),
            audit_mode=checked.audit,  # type: ignore[arg-type]
            abstained=abstained,
            addresses_question=addresses if known else None,
            addresses_reason=why if known else self._why_not(run, checked) if abstained else "",
            candidates=render.candidates(list(claims), draft.evidence, draft.held) if note else [],
            confidence=0.0 if abstained else checked.confidence,
            intent=draft.intent,
            iterations=draft.iterations,
            model=self.model_name,
            input_tokens=run.input_tokens,
            output_tokens=run.output_tokens,
            llm_ms=round(run.llm_ms, 3),
            cache="miss",
        )

    def _record(
        self, run: Run, key: str | None, answer: Answer, draft: Draft, checked: Checked
    ) -> tuple[str | None, str | None]:
        """Chain the answer's stages and store it; its (answer_id, dag_root), or (None, None) when
        recording fails (an answer is still an answer)."""
        answer_id = uuid.uuid4().hex[:16]
        raw = draft.raw
        payloads = {
            "question": {
                "question": run.question,
                "canonical": cache.canonical_question(run.question, self.cfg.cache_mode),
                "scope": run.scope.as_dict(),
                "history": run.history,
            },
            "retrieval": run.retrieval,
            "evidence": provenance.evidence_payload(draft.evidence),
            "prompt": draft.prompt,
            "raw_answer": raw,
            "claims": provenance.claims_payload("" if answer.abstained else raw),
            "verification": checked.verdict.as_dict(),
            "rendered": answer.answer,
            "label": provenance.label_payload(
                answer.audit_mode, answer.abstained, answer.confidence, unsure(draft, answer.abstained)
            ),
        }
        stages, root = provenance.chain(payloads)
        stored = answer.model_dump(
            mode="json", exclude={"cache", "latency_ms", "timings", "trace", "llm_ms", "input_tokens", "output_tokens"}
        )
        stored.update(
            answer_id=answer_id, dag_root=root, input_tokens=answer.input_tokens, output_tokens=answer.output_tokens
        )
        try:
            with self.searcher.connection() as conn:
                stored_answers.insert(
                    conn,
                    answer_id=answer_id,
                    key=key or "",
                    question=run.question,
                    model=answer.model,
                    audit_mode=answer.audit_mode,
                    dag_root=root,
                    answer=stored,
                    stages=stages,
                )
        except Exception as e:  # noqa: BLE001 — an answer is still an answer when recording it fails
            if isinstance(e, StoreError):
                raise
            log.warning("could not record answer %s: %s", answer_id, e)
            return None, None
        return answer_id, root

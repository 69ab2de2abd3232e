"""Usage records from the serving surfaces, and the gaps report they make (GET /gaps).

A SearchFn or AskFn wrapped so each call is timed and recorded (pipeline.usage), off the request path. A
failed call records nothing and raises as before; recording itself never raises."""

import logging
import time
from collections.abc import Callable
from typing import Annotated

from fastapi import Depends, FastAPI, HTTPException, Query

from docforge.servers.ask import AskFn, AskRequest
from docforge.servers.search import SearchFn, SearchRequest
from pipeline.access import FULL_ACCESS, Principal
from pipeline.answers import Answer
from pipeline.config import UsageConfig
from pipeline.errors import DocforgeError
from pipeline.query import Searcher
from pipeline.redact import redact
from pipeline.usage import Gaps, Recorder, UsageRecord, for_ask, for_search, recorder, report

log = logging.getLogger("docforge.usage")


def _keep(recorder: Recorder, make: Callable[[], UsageRecord]) -> None:
    if not recorder.cfg.enabled:
        return
    try:
        recorder.record(make())
    except Exception as e:  # noqa: BLE001 (a record must never fail the request it describes)
        log.warning("usage record lost: %s", redact(str(e)))


class RecordedSearch:
    """A SearchFn that records each search; everything else (health, warm, searcher) is the inner one's."""

    def __init__(self, inner: SearchFn, recorder: Recorder, surface: str):
        self.inner, self.recorder, self.surface = inner, recorder, surface

    def __getattr__(self, name: str):
        return getattr(self.inner, name)

    def __call__(self, req: SearchRequest, reader: Principal = FULL_ACCESS) -> list[dict]:
        t = time.perf_counter()
        hits = self.inner(req, reader)
        ms = (time.perf_counter() - t) * 1000
        cfg: UsageConfig = self.recorder.cfg
        _keep(self.recorder, lambda: for_search(cfg, self.surface, reader.name, req.query, req.mode, hits, ms))
        return hits


class RecordedAsk:
    """An AskFn that records each answer (with a `recorder`) and tells `answered` (the answer-cache metric)."""

    def __init__(
        self,
        inner: AskFn,
        recorder: Recorder | None,
        surface: str,
        answered: Callable[[Answer], None] | None = None,
    ):
        self.inner, self.recorder, self.surface, self.answered = inner, recorder, surface, answered

    def __getattr__(self, name: str):
        return getattr(self.inner, name)

    def __call__(self, req: AskRequest, reader: Principal = FULL_ACCESS) -> Answer:
        t = time.perf_counter()
        answer = self.inner(req, reader)
        ms = (time.perf_counter() - t) * 1000
        if self.answered:
            self.answered(answer)
        if (rec := self.recorder) is not None:
            _keep(rec, lambda: for_ask(rec.cfg, self.surface, reader.name, req.question, req.mode, answer, ms))
        return answer


class Usage:
    """A store's usage records for a server: the recorder its surfaces share, and the gaps report."""

    def __init__(self, searcher: Searcher):
        self.searcher = searcher
        self.recorder = recorder(searcher.url, searcher.settings.usage)

    def report(self, days: int | None = None) -> Gaps:
        return report(self.searcher, days)


def add_gaps(app: FastAPI, caller: Callable, usage: Usage) -> None:
    """GET /gaps?days=N: the gaps report (pipeline.usage.report), for full-access callers only."""
    Caller = Annotated[Principal, Depends(caller)]

    @app.get("/gaps", tags=["usage"])
    def get_gaps(who: Caller, days: Annotated[int | None, Query(ge=1, le=3650)] = None) -> dict:
        """What the documentation does not answer: questions that abstained or were answered with low
        confidence, grouped by meaning; searches with no good hit; documents cited most, never retrieved,
        cited often but unchanged for long. Needs full access: other callers' questions can name what
        they may read and you may not."""
        if not who.full_access:
            raise HTTPException(
                403,
                "the gaps report is for full-access callers (an admin token, DOCFORGE_API_TOKENS): it shows "
                "every caller's questions",
            )
        try:
            return usage.report(days).as_dict()
        except DocforgeError as e:
            raise HTTPException(503, str(e)) from None

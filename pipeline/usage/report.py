"""The gaps report (`docforge gaps`, `GET /gaps`, the page's Gaps tab) from the usage records.

For a window of days: the questions users did not get an answer to — asks that abstained, were
answered below `usage.low_confidence`, were shown as candidates (label UNSURE: not labelled as
answering), or were followed by the same caller's rephrased ask (within REPHRASE_S, as close in
meaning as `usage.same_meaning`) — grouped by meaning (pipeline.usage.cluster, on the store's query
embedder) with counts, first and last asked, a representative wording and the documents a dense
search for it finds now; the searches with no good hit; the documents cited most; the documents never
retrieved; the documents cited often but unchanged for `usage.stale_days` (a staleness hint). Evidence
is named by document only, never by text: the report is for full-access callers, and says which
documents, not what they hold.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

import numpy as np
import psycopg

import pipeline.usage.cluster as cluster
from pipeline.config import UsageConfig
from pipeline.errors import StoreError
from pipeline.query import Searcher
from pipeline.store.db import connect, scalar
from pipeline.store.schema import open_built
from pipeline.usage.record import digest

MAX_QUESTIONS = 5000  # distinct gap questions clustered at most (the most recent): bounds the report's cost
MAX_SEARCHES = 500  # distinct searches re-checked at most (the most frequent)
TOP = 20  # rows per list
CLOSEST = 3  # documents shown per group
OFTEN = 2  # "cited often": more than once in the window
# A reader who did not get an answer asks again in other words at once: the next ask of the same caller
# within this many seconds, as close in meaning as `usage.same_meaning` (the grouping's threshold) and
# worded otherwise, marks the earlier one as not answered. Ten minutes: a conversation's turn, not a new task.
REPHRASE_S = 600

FullSearch = Callable[[str, int, str], list[Any]]  # (query, limit, mode) -> hits, best first, full access


@dataclass
class Doc:
    doc_key: str
    score: float  # the best dense hit's score in it, (1 + cosine) / 2: comparable across groups


@dataclass
class QuestionGroup:
    id: str
    count: int  # asks in the group
    questions: int  # distinct wordings
    askers: int  # distinct principals (counted, never named)
    abstained: int  # of `count`, asks that abstained
    first_asked: str
    last_asked: str
    representative: str
    wordings: list[str]
    closest: list[Doc] = field(default_factory=list)
    unsure: int = 0  # of `count`, asks shown as candidates, not labelled as answering (UNSURE)
    rephrased: int = 0  # ... followed by the same caller's rephrased ask (the rest: low confidence)


@dataclass
class WeakSearch:
    query: str
    count: int
    last_asked: str
    best: float | None  # the best dense hit's score now ((1 + cosine) / 2); None: no hit at all


@dataclass
class Cited:
    doc_key: str
    citations: int
    last_changed: str | None = None


@dataclass
class Gaps:
    days: int
    since: str
    asks: int
    searches: int
    gap_asks: int
    groups: list[QuestionGroup]
    weak_searches: list[WeakSearch]
    most_cited: list[Cited]
    never_retrieved: list[str]
    never_retrieved_total: int
    stale: list[Cited]

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _iso(t: datetime) -> str:
    return t.isoformat(timespec="seconds")


_WINDOW = "at >= now() - make_interval(days => %(days)s)"
_GAP_QUESTIONS = f"""SELECT question_sha, max(question), count(*), array_agg(DISTINCT principal),
       count(*) FILTER (WHERE abstained), min(at), max(at),
       count(*) FILTER (WHERE label = 'UNSURE' AND NOT abstained),
       count(*) FILTER (WHERE id = ANY(%(rephrased)s))
FROM usage_events WHERE kind = 'ask' AND {_WINDOW}
  AND (abstained OR confidence < %(low)s OR label = 'UNSURE' OR id = ANY(%(rephrased)s))
GROUP BY question_sha ORDER BY max(at) DESC, question_sha LIMIT %(cap)s"""
_ASKS = f"""SELECT id, principal, at, question_sha, question FROM usage_events
WHERE kind = 'ask' AND {_WINDOW} ORDER BY principal, at, id"""
_SEARCHES = f"""SELECT question_sha, max(question), count(*), max(at), bool_or(cardinality(scores) = 0)
FROM usage_events WHERE kind = 'search' AND {_WINDOW}
GROUP BY question_sha ORDER BY count(*) DESC, max(at) DESC, question_sha LIMIT %(cap)s"""
_CITED = f"""SELECT k, count(*) FROM usage_events, unnest(doc_keys) k WHERE kind = 'ask' AND {_WINDOW}
GROUP BY k ORDER BY count(*) DESC, k"""
_NEVER = f"""WITH seen AS (SELECT DISTINCT unnest(doc_keys) k FROM usage_events WHERE {_WINDOW})
SELECT d.key FROM documents d LEFT JOIN seen ON seen.k = d.key WHERE seen.k IS NULL ORDER BY d.key"""
_CHANGED = (
    "SELECT doc_key, indexed_at, indexed_at < now() - make_interval(days => %s) FROM ledger WHERE doc_key = ANY(%s)"
)


def report(searcher: Searcher, days: int | None = None) -> Gaps:
    """The report for a searcher's store, over `days` (default: the retention) with its query embedder.
    On a connection of its own: the searches it runs take pooled ones."""
    cfg = searcher.settings.usage
    with connect(searcher.url, vector=False) as conn:
        if not scalar(conn, "SELECT to_regclass('usage_events')") and open_built(conn) is None:
            raise StoreError("nothing is indexed yet, so nothing is recorded: run `docforge ingest`, then ask")
        return gaps(
            conn,
            cfg,
            lambda texts: searcher.embedder.encode(texts, kind="query"),
            lambda q, k, mode: searcher.search(q, k, mode, per_doc=1, rerank=False),  # type: ignore[arg-type]
            days or cfg.retention_days,
        )


def gaps(
    conn: psycopg.Connection, cfg: UsageConfig, encode: Callable[[list[str]], np.ndarray], search: FullSearch, days: int
) -> Gaps:
    """The report over the last `days` days. `encode`: texts → query vectors; `search`: for the
    documents closest to a group and the re-check of a search's best hit."""
    p: dict[str, object] = {"days": days, "low": cfg.low_confidence, "cap": MAX_QUESTIONS}
    since, asks, searches = conn.execute(
        "SELECT now() - make_interval(days => %(days)s), count(*) FILTER (WHERE kind = 'ask'), "
        f"count(*) FILTER (WHERE kind = 'search') FROM usage_events WHERE {_WINDOW}",
        p,
    ).fetchone() or (None, 0, 0)
    p["rephrased"] = rephrased(conn.execute(_ASKS, p).fetchall(), encode, cfg.same_meaning)
    rows = conn.execute(_GAP_QUESTIONS, p).fetchall()
    groups = _groups(sorted(rows, key=lambda r: (r[5], r[0])), cfg, encode, search)
    cited = conn.execute(_CITED, p).fetchall()
    changed = {k: (t, old) for k, t, old in conn.execute(_CHANGED, (cfg.stale_days, [k for k, _ in cited]))}
    never = [k for (k,) in conn.execute(_NEVER, p)]
    return Gaps(
        days=days,
        since=_iso(since),
        asks=asks,
        searches=searches,
        gap_asks=sum(r[2] for r in rows),
        groups=groups,
        weak_searches=_weak(conn.execute(_SEARCHES, {**p, "cap": MAX_SEARCHES}).fetchall(), cfg, search),
        most_cited=[_cited(k, n, changed) for k, n in cited[:TOP]],
        never_retrieved=never[:TOP],
        never_retrieved_total=len(never),
        stale=[_cited(k, n, changed) for k, n in cited if n >= OFTEN and changed.get(k, (None, False))[1]][:TOP],
    )


def rephrased(asks: list, encode: Callable[[list[str]], np.ndarray], same: float) -> list[int]:
    """Ids of asks (id, principal, at, sha, question; by caller, then time) that the same caller followed
    within REPHRASE_S by another wording of the same meaning (cosine ≥ `same`)."""
    pairs = [
        (a, b)
        for a, b in zip(asks, asks[1:], strict=False)
        if a[1] == b[1] and a[3] != b[3] and a[4] and b[4] and (b[2] - a[2]).total_seconds() <= REPHRASE_S
    ][:MAX_QUESTIONS]
    if not pairs:
        return []
    v = cluster.unit(encode([q for a, b in pairs for q in (a[4], b[4])]))
    sims = (v[0::2] * v[1::2]).sum(axis=1)
    return [a[0] for (a, _), s in zip(pairs, sims, strict=True) if s >= same]


def _cited(key: str, n: int, changed: dict) -> Cited:
    t = changed.get(key, (None, False))[0]
    return Cited(key, n, _iso(t) if t else None)


def _groups(rows: list, cfg: UsageConfig, encode, search: FullSearch) -> list[QuestionGroup]:
    """Rows (sha, question, count, askers, abstained, first, last, unsure, rephrased), oldest first →
    groups, largest first."""
    texts = [r for r in rows if r[1]]
    vectors = encode([r[1] for r in texts]) if texts else np.zeros((0, 1))
    found = cluster.groups(vectors, cfg.same_meaning) if texts else []
    members = [[texts[i] for i in g] for g in found] + [[r] for r in rows if not r[1]]  # digests: exact only
    rep_of = [texts[cluster.medoid(vectors, g)] for g in found] + [r for r in rows if not r[1]]
    out = []
    for group, rep in zip(members, rep_of, strict=True):
        wording = rep[1] or f"(question not kept: sha256 {rep[0][:16]}…)"
        out.append(
            QuestionGroup(
                id=digest(rep[1])[:12] if rep[1] else rep[0][:12],
                count=sum(r[2] for r in group),
                questions=len(group),
                askers=len({p for r in group for p in r[3]}),
                abstained=sum(r[4] for r in group),
                unsure=sum(r[7] for r in group),
                rephrased=sum(r[8] for r in group),
                first_asked=_iso(min(r[5] for r in group)),
                last_asked=_iso(max(r[6] for r in group)),
                representative=wording,
                wordings=[r[1] for r in sorted(group, key=lambda r: -r[2]) if r[1]][:5],
                closest=[Doc(h.doc_key, round(h.score, 4)) for h in search(rep[1], CLOSEST, "dense")] if rep[1] else [],
            )
        )
    out.sort(key=lambda g: (-g.count, g.first_asked, g.id))
    return out


def _weak(rows: list, cfg: UsageConfig, search: FullSearch) -> list[WeakSearch]:
    """Searches whose best dense hit now scores below `usage.weak_hit`, or that found nothing."""
    out = []
    for _sha, query, n, last, empty in rows:
        best = None
        if query:
            hits = search(query, 1, "dense")
            best = round(hits[0].score, 4) if hits else None
        if (best is None and (empty or query)) or (best is not None and best < cfg.weak_hit):
            out.append(WeakSearch(query or f"(query not kept: sha256 {_sha[:16]}…)", n, _iso(last), best))
    out.sort(key=lambda w: (-w.count, w.best if w.best is not None else -1.0, w.query))
    return out[:TOP]

"""Search the index: dense, keyword or hybrid (Reciprocal Rank Fusion of both).

Every surface (CLI, MCP server, HTTP API) calls `Searcher.search`. Scores are in
[0, 1] per mode: dense = 1 - cosine distance / 2; keyword = rank / best rank of
the result set; hybrid = fused RRF score / the best score a document can get.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from functools import cached_property
from typing import Literal

from pipeline.config import Settings
from pipeline.embed import Embedder
from pipeline.errors import QueryError
from pipeline.store.db import connect, database_url
from pipeline.store.schema import store_model

Mode = Literal["dense", "keyword", "hybrid"]
MODES = ("dense", "keyword", "hybrid")


@dataclass(frozen=True)
class Hit:
    """One search result with everything needed to cite it."""

    chunk_id: str
    source: str  # the source document's key
    partition: str  # the sources.yml source name
    type: str
    url: str
    title: str
    section: str
    chunk_index: int
    text: str
    score: float

    def as_dict(self) -> dict:
        return asdict(self)


_COLUMNS = "c.id, s.key, s.partition, s.type, s.url, s.title, c.section, c.ordinal, c.text"
_DENSE = f"""
SELECT {_COLUMNS}, 1 - (c.embedding <=> %(vec)s) / 2 AS score
FROM chunks c JOIN sources s ON s.key = c.source_key
ORDER BY c.embedding <=> %(vec)s LIMIT %(k)s
"""
# OR of the query's lexemes: a natural-language question must not need every word to match.
_TSQUERY = """(SELECT to_tsquery('simple', coalesce(nullif(array_to_string(array(
    SELECT quote_literal(l) FROM unnest(tsvector_to_array(to_tsvector('english', %(q)s))) l), ' | '), ''), '''''')))"""
_KEYWORD = f"""
SELECT {_COLUMNS}, ts_rank_cd(c.tsv, q.q, 1) AS score
FROM chunks c JOIN sources s ON s.key = c.source_key, {_TSQUERY} AS q(q)
WHERE c.tsv @@ q.q
ORDER BY score DESC LIMIT %(k)s
"""


class Searcher:
    """A connection to one store and the model its vectors came from."""

    def __init__(self, settings: Settings, url: str | None = None, embedder: Embedder | None = None):
        self.settings = settings
        db = url or (settings.database_url.get_secret_value() if settings.database_url else None)
        self.conn = connect(database_url(settings.home, db))
        self._embedder = embedder

    @cached_property
    def embedder(self) -> Embedder:
        emb = self._embedder or Embedder(self.settings.embedding)
        built = store_model(self.conn)
        if built and built[0] != emb.model_id:
            raise QueryError(f"the index was built with {built[0]!r} but the configured model is "
                             f"{emb.model_id!r}; queries must use the index's model")
        return emb

    def close(self) -> None:
        self.conn.close()

    def search(self, query: str, limit: int = 10, mode: Mode = "hybrid", fetch_k: int = 50,
               rrf_k: int = 60) -> list[Hit]:
        if mode not in MODES:
            raise QueryError(f"unknown mode {mode!r}: choose one of {', '.join(MODES)}")
        if not query.strip() or store_model(self.conn) is None:
            return []
        if mode == "dense":
            return self._dense(query, limit)
        if mode == "keyword":
            return _normalise(self._keyword(query, limit))
        return _fuse([self._dense(query, fetch_k), self._keyword(query, fetch_k)], limit, rrf_k)

    def _rows(self, sql: str, params: dict) -> list[Hit]:
        return [Hit(*row[:9], score=float(row[9])) for row in self.conn.execute(sql, params).fetchall()]

    def _dense(self, query: str, k: int) -> list[Hit]:
        vec = self.embedder.encode([query])[0]
        return self._rows(_DENSE, {"vec": vec, "k": k})

    def _keyword(self, query: str, k: int) -> list[Hit]:
        return self._rows(_KEYWORD, {"q": query, "k": k})


def _normalise(hits: list[Hit]) -> list[Hit]:
    top = max((h.score for h in hits), default=0.0) or 1.0
    return [_rescore(h, h.score / top) for h in hits]


def _rescore(h: Hit, score: float) -> Hit:
    return Hit(**{**asdict(h), "score": round(float(score), 6)})


def _fuse(rankings: list[list[Hit]], limit: int, rrf_k: int) -> list[Hit]:
    """Reciprocal Rank Fusion: sum of 1 / (rrf_k + rank) over the rankings a hit is in."""
    fused: dict[str, float] = {}
    first: dict[str, Hit] = {}
    for ranking in rankings:
        for rank, h in enumerate(ranking, 1):
            fused[h.chunk_id] = fused.get(h.chunk_id, 0.0) + 1.0 / (rrf_k + rank)
            first.setdefault(h.chunk_id, h)
    best = len(rankings) / (rrf_k + 1)
    order = sorted(fused, key=lambda cid: -fused[cid])[:limit]
    return [_rescore(first[cid], fused[cid] / best) for cid in order]

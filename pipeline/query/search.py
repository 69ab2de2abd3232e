"""Search the index: dense, keyword (BM25) or hybrid (document-aware fusion of both).

Every surface (CLI, MCP server, HTTP API) calls `Searcher.search`. Each mode is
one SQL statement. Scores are in [0, 1] for every mode:

- dense:   (1 + cosine similarity) / 2 of query and chunk vectors;
- keyword: BM25 / the most BM25 the query's terms could score (every term
           saturated), so 1 means "every query term, many times, in a short chunk";
- hybrid:  the document-aware fused score of `pipeline.query.fusion` (convex by
           default), × 1 + tag_boost when a tag matches, capped at 1.

Every mode keeps at most `per_doc` chunks of one document in a result list
(reading deeper when the cap leaves too few); hybrid puts neighbouring chunks of
one document that end up side by side in document order.

Keyword ranking is Okapi BM25 (k1, b) with Lucene's non-negative IDF, computed in
Postgres from posting lists and corpus statistics that triggers keep exact
(`bm25_blocks`, `bm25_docs`, `bm25_terms`, `bm25_stats`; migrations 0002, 0003, 0009). Query
terms are ORed: a question need not share every word with its answer.
Optional reranking (`pipeline.query.rerank`) reorders the fused candidates and sets
`rerank_score`; `score` stays the mode's score.

Dense ranking reads the live model generation's vectors (`vectors_<id>`,
pipeline.store.generations) with a query embedded by that generation's model.
Each statement also returns which generation is live in its snapshot: when a
reindex has switched (or the old table is already dropped), the query is
embedded again by the new model and the statement re-run, so a search never
mixes generations and never fails for a switch.
"""

from __future__ import annotations

import re
import threading
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Literal

import psycopg
from pgvector.psycopg import register_vector
from psycopg import sql
from psycopg.rows import dict_row

from pipeline import embedders
from pipeline.config import SearchConfig, Settings
from pipeline.embed import TextEmbedder
from pipeline.errors import QueryError, StoreError
from pipeline.parse.text import first_surrogate
from pipeline.query.filters import compile_filter
from pipeline.query.fusion import Candidate, diversify, fuse, per_document, reading_order
from pipeline.query.hits import Hit
from pipeline.query.rerank import Reranker, load_reranker, rerank_or_keep
from pipeline.store import generations
from pipeline.store.db import connect, store_url
from pipeline.store.generations import Generation
from pipeline.store.pool import checkout, open_pool
from pipeline.store.schema import is_current, open_built, store_model

Mode = Literal["dense", "keyword", "hybrid"]
MODES = ("dense", "keyword", "hybrid")
_UNSET = object()
_MAX_K = 1000  # the deepest candidate list a search reads


# Every statement returns these columns, by these names: a Hit's fields, then the
# keyword candidates that passed the filter and whether a posting list was cut.
_COLS = (
    "c.id AS chunk_id, doc.key AS doc_key, doc.source, doc.type, doc.url, doc.title, c.section, "
    "c.ordinal AS chunk_index, c.text, c.page"
)
_HIT_FIELDS = ("chunk_id", "doc_key", "source", "type", "url", "title", "section", "chunk_index", "text", "page")
_CHUNK_DOCUMENT = "JOIN documents doc ON doc.key = c.doc_key"  # `doc`: what filters.py compiles against
_JOIN = "JOIN chunks c ON c.id = {alias}.id " + _CHUNK_DOCUMENT
_DENSE = f"""dense AS (
    SELECT c.id, 1 - (v.embedding <=> %(vec)s::{{vtype}}) / 2 AS score,
           row_number() OVER (ORDER BY v.embedding <=> %(vec)s::{{vtype}}) AS rank
    FROM {{vectors}} v JOIN chunks c ON c.seq = v.seq {_CHUNK_DOCUMENT} WHERE {{filter}}
    ORDER BY v.embedding <=> %(vec)s::{{vtype}} LIMIT {{k}})"""
# Which generation is live in the statement's own snapshot (pipeline.store.generations).
_LIVE = "(SELECT id FROM generations WHERE state = 'live') AS live_generation"
_TERMS = """terms AS (
    SELECT t.term, b.id, coalesce(b.df, 0) AS df,
           ln(1 + (st.n - coalesce(b.df, 0) + 0.5) / (coalesce(b.df, 0) + 0.5)) AS idf, st.avgdl
    FROM (SELECT n::float8 AS n, total_len::float8 / greatest(n, 1) AS avgdl FROM bm25_stats LIMIT 1) st
    CROSS JOIN unnest(tsvector_to_array(to_tsvector('english', %(q)s))) t(term)
    LEFT JOIN bm25_terms b ON b.term = t.term)"""
_WEIGHT = "t.idf * p.tf * (%(k1)s + 1) / (p.tf + %(k1)s * (1 - %(b)s + %(b)s * p.dl / t.avgdl))"
# Candidates come from each query term's posting list, best postings first (the
# impact order of migration 0003, read from 0009's blocks by docforge_bm25_top), at
# most `per_term` of them, summed: exact for every term with fewer postings than
# that. A very common term (in more than prune_df chunks, IDF under prune_idf) adds
# no candidates when the query has rarer ones: its chunks could only score its small
# IDF. The best `pool` are then scored exactly, every query term counted, from each
# chunk's own term list (bm25_docs). A filter is tested on the listed chunks best
# first, until `pool` pass: a broad one stops after about `pool` probes, not one per
# posting read (a chunk's postings all pass it or all fail, so the sums are the same).
_LISTED = f"""listed AS (
    SELECT p.seq, sum({_WEIGHT}) AS w
    FROM (SELECT array_agg(id) AS ids, array_agg(idf) AS idfs, max(avgdl) AS avgdl FROM terms
          WHERE df <= %(prune_df)s OR idf >= (SELECT least(max(idf), %(prune_idf)s) FROM terms)) q
    CROSS JOIN LATERAL docforge_bm25_top(q.ids, {{per_term}}) p  -- plain columns: the function is inlined
    CROSS JOIN LATERAL (SELECT q.idfs[p.term_no] AS idf, q.avgdl) t
    GROUP BY p.seq)"""
_LIST_CANDIDATES = f"""{_LISTED},
candidates AS (SELECT seq FROM listed ORDER BY w DESC LIMIT {{pool}})"""
_FILTERED_LIST_CANDIDATES = f"""{_LISTED},
candidates AS (
    SELECT x.seq FROM (SELECT seq, w FROM listed ORDER BY w DESC) x CROSS JOIN LATERAL (
        SELECT FROM chunks c {_CHUNK_DOCUMENT} WHERE c.seq = x.seq AND {{filter}} LIMIT 1) kept
    ORDER BY x.w DESC LIMIT {{pool}})"""
# The last resort of a filter that keeps few chunks: every chunk it keeps that holds
# a query term is scored. The filter runs first (MATERIALIZED: not a GIN scan of
# every chunk holding a common query term); lexemes are quoted for tsquery syntax.
_FILTER_CANDIDATES = rf"""kept AS MATERIALIZED (
    SELECT c.seq, c.tsv FROM chunks c {_CHUNK_DOCUMENT} WHERE {{filter}} LIMIT 20000),
candidates AS (
    SELECT seq FROM kept WHERE tsv @@ (SELECT to_tsquery('simple', string_agg(
        '''' || replace(replace(term, '\', '\\'), '''', '''''') || '''', ' | ')) FROM terms))"""
# Field weights (BM25F's term frequency): with bm25_heading_weight w != 1, an occurrence
# in the chunk's heading path (its 'A'-weighted tsvector positions, migration 0001)
# counts w times in the exact scores: tf' = tf + (w - 1) * tf_heading; lengths stay as
# they are. Read from the candidates' own tsvectors, so no index changes; w = 1 leaves
# this out and is plain BM25.
_HEADINGS = """headings AS (
    SELECT x.seq, u.lexeme AS term, cardinality(u.positions) AS tf
    FROM candidates x JOIN chunks c ON c.seq = x.seq CROSS JOIN LATERAL unnest(ts_filter(c.tsv, '{a}')) u
    WHERE u.lexeme IN (SELECT term FROM terms)),"""
_HEADING_TF = "LEFT JOIN headings h ON h.seq = x.seq AND h.term = t.term"
_KEYWORD = f"""{{candidates}},{{headings}}
scored AS (
    SELECT x.seq, sum({_WEIGHT}) AS bm25
    FROM candidates x JOIN bm25_docs d ON d.seq = x.seq CROSS JOIN terms t {{heading_join}} CROSS JOIN LATERAL (
        SELECT d.tfs[i] {{heading_tf}} AS tf, d.dl FROM (SELECT array_position(d.terms, t.id) AS i) i
        WHERE i IS NOT NULL) p
    GROUP BY x.seq),
keyword AS (
    SELECT id, score, row_number() OVER (ORDER BY score DESC, id) AS rank FROM (
        SELECT c.id, x.bm25 / (SELECT sum(idf) * (%(k1)s + 1) FROM terms) AS score
        FROM scored x JOIN chunks c ON c.seq = x.seq {_CHUNK_DOCUMENT}
        WHERE {{filter}}
        ORDER BY score DESC, c.id LIMIT {{k}}) r)"""
# How many candidates passed the filter, and whether a list was cut short (so that
# deeper lists could find more of the chunks the filter keeps).
_FOUND = """(SELECT count(*) FROM candidates) AS found,
    coalesce((SELECT bool_or(df > {per_term}) FROM terms), false) AS cut"""
# Hybrid returns both legs' candidates, ranks and scores; pipeline.query.fusion fuses them.
_FUSED = """fused AS (
    SELECT coalesce(d.id, k.id) AS id, d.rank AS dense_rank, k.rank AS keyword_rank,
           d.score AS dense_score, k.score AS keyword_score
    FROM dense d FULL JOIN keyword k ON k.id = d.id)"""
_BOOST = """CASE WHEN EXISTS (SELECT 1 FROM unnest(doc.tags) g WHERE lower(g) = ANY(%(tags)s::text[]))
    THEN 1 + %(boost)s ELSE 1 END AS boost"""
_STATEMENTS = {
    "dense": f"WITH {_DENSE} SELECT {_COLS}, d.score, d.rank AS dense_rank, NULL::bigint AS keyword_rank, "
    f"0 AS found, false AS cut, {_LIVE} FROM dense d {_JOIN.format(alias='d')} ORDER BY d.rank "
    "LIMIT {limit}",
    "keyword": f"WITH {_TERMS}, {_KEYWORD} SELECT {_COLS}, k.score, NULL::bigint AS dense_rank, "
    f"k.rank AS keyword_rank, {_FOUND} FROM keyword k {_JOIN.format(alias='k')} "
    "ORDER BY k.rank LIMIT {limit}",
    "hybrid": f"WITH {_DENSE}, {_TERMS}, {_KEYWORD}, {_FUSED} SELECT {_COLS}, {_BOOST}, f.dense_rank, "
    f"f.keyword_rank, f.dense_score, f.keyword_score, {_FOUND}, {_LIVE} FROM fused f {_JOIN.format(alias='f')}",
}


class Searcher:
    """A pool of connections to one store, and the model its vectors came from.

    Thread-safe: concurrent searches run on separate pooled connections (`search.pool_size`);
    a connection the database dropped is replaced on the next search (pipeline.store.pool).
    """

    def __init__(
        self,
        settings: Settings,
        url: str | None = None,
        embedder: TextEmbedder | None = None,
        reranker: Reranker | None | object = _UNSET,
        config: SearchConfig | None = None,
    ):
        self.settings = settings
        self.config = config or settings.search
        self.url = store_url(settings, url)
        connect(self.url).close()  # fails now, clearly, on a wrong URL; installs pgvector in a fresh database
        self._embedder = embedder
        self._reranker = reranker
        self._loaded: dict[str, object] = {}  # embedder, reranker: loaded once, by whichever thread asks first
        self._once = threading.Lock()
        self._checked = False
        self._vectors: dict[tuple[int, str], object] = {}
        self._vectors_lock = threading.Lock()
        self._live: Generation | None = None  # the live generation, as the last statement saw it
        self._embedders: dict[int, TextEmbedder] = {}  # by generation: the query embedder follows the live one
        self._ef_search: weakref.WeakKeyDictionary[psycopg.Connection, int] = weakref.WeakKeyDictionary()
        self.pool = open_pool(
            self.url,
            name="docforge-search",
            max_size=self.config.pool_size,
            timeout_s=self.config.pool_timeout_s,
            configure=self._configure,
        )

    @property
    def embedder(self) -> TextEmbedder:
        """The live generation's query embedder (loaded once per generation); for an empty store, the
        configured model's (the one its first ingest would build with)."""
        gen = self._generation()
        if gen is None:
            return self._load(
                "embedder:configured",  # type: ignore[return-value]
                lambda: self._embedder or embedders.for_config(self.settings.embedding, "query"),
            )
        return self._embedder_for(gen)

    def _embedder_for(self, gen: Generation) -> TextEmbedder:
        def load() -> TextEmbedder:
            return embedders.for_generation(self.settings.embedding, gen, "query", self._embedder)

        return self._load(f"embedder:{gen.id}", load)  # type: ignore[return-value]

    def _generation(self, refresh: bool = False) -> Generation | None:
        """The live generation: as the last statement saw it, else read from the store."""
        if self._live is None or refresh:
            with self.connection() as conn:
                self._live = generations.live(conn)
            if refresh and self._live is not None:  # a switch: the old model's embedder is let go
                live = f"embedder:{self._live.id}"
                for key in [k for k in self._loaded if k.startswith("embedder:") and k != live]:
                    self._loaded.pop(key, None)
        return self._live

    @property
    def reranker(self) -> Reranker | None:
        """The configured reranker: explicit, else the settings' (RERANK_ENABLED + RERANKER_MODEL/URL)."""
        if self._reranker is _UNSET:
            return self._load("reranker", lambda: load_reranker(self.settings.rerank))  # type: ignore[return-value]
        return self._reranker  # type: ignore[return-value]

    def _load(self, name: str, load: Callable[[], object]) -> object:
        if name not in self._loaded:
            with self._once:
                if name not in self._loaded:
                    self._loaded[name] = load()
        return self._loaded[name]

    def close(self) -> None:
        self.pool.close()

    def __enter__(self) -> Searcher:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @contextmanager
    def connection(self, timeout_s: float | None = None) -> Iterator[psycopg.Connection]:
        """A pooled connection (statement time limit and HNSW settings applied); StoreError when the
        store does not answer within `timeout_s` (default `search.pool_timeout_s`)."""
        with checkout(self.pool, timeout_s) as conn:
            yield conn

    def ping(self, timeout_s: float | None = None) -> bool:
        """True when the store answers; raises StoreError (saying why) when it does not."""
        with self.connection(timeout_s) as conn:
            return conn.execute("SELECT 1").fetchone() == (1,)

    def search(
        self,
        query: str,
        limit: int = 10,
        mode: Mode = "hybrid",
        *,
        filters: dict | None = None,
        fetch_k: int | None = None,
        rrf_k: int | None = None,
        weights: tuple[float, float] | None = None,
        boost_tags: tuple[str, ...] | list[str] = (),
        rerank: bool | None = None,
        per_doc: int | None = None,
    ) -> list[Hit]:
        """The best `limit` chunks for `query`. `filters`: see pipeline.query.filters. `weights`:
        (dense, keyword) for hybrid fusion. `rerank`: None follows RERANK_ENABLED. `per_doc`: at
        most this many chunks of one document (0: no limit; None: the configured `search.per_doc`)."""
        if mode not in MODES:
            raise QueryError(f"unknown mode {mode!r}: choose one of {', '.join(MODES)}")
        if limit < 1:
            raise QueryError(f"limit must be at least 1, got {limit}")
        _check_text("the query", query)
        for tag in boost_tags:
            _check_text("a boost tag", tag)
        cfg = self.config
        cap = cfg.per_doc if per_doc is None else per_doc
        if cap < 0:
            raise QueryError(f"per_doc must be at least 0 (0: no limit), got {per_doc}")
        where, fparams = compile_filter(
            filters, max_values=cfg.filter_max_values, max_depth=cfg.filter_max_depth, max_terms=cfg.filter_max_terms
        )
        query = query.replace("\x00", " ")
        reranker = self._pick_reranker(rerank)
        if not query.strip() or not self._ready():
            return []
        n = max(limit, cfg.rerank_candidates) if reranker else limit
        for _ in range(_SWITCHES):  # a reindex switching generations mid-search: embed again, search again
            gen = None if mode == "keyword" else self._generation()
            params = self._params(query, mode, n, fetch_k, rrf_k, weights, boost_tags, gen, cap)  # embeds first
            try:
                hits = self._search(_Plan(mode, where, fparams, bool(filters), gen, cap or None), params)
            except _Switched:
                self._generation(refresh=True)
                continue
            return rerank_or_keep(reranker, query, hits, limit) if reranker else hits
        raise StoreError(f"the live model generation changed {_SWITCHES} times during one search; try again")

    def _search(self, plan: _Plan, params: dict) -> list[Hit]:
        """One search on one connection, at most `plan.cap` hits of one document; _Switched when
        `plan.gen` was not live in the statement's snapshot."""
        with self.connection() as conn:
            while True:
                hits, full = self._candidates(conn, plan, params)
                if len(hits) >= params["n"] or not full or params["k"] >= _MAX_K:
                    return hits
                # the cap left too few hits of a list that may hold more: read deeper
                k = min(_MAX_K, params["k"] * 4)
                params = {
                    **params,
                    "k": k,
                    "limit": k if plan.mode != "hybrid" else params["n"],
                    "pool": max(params["pool"], k),
                }

    def _candidates(self, conn: psycopg.Connection, plan: _Plan, params: dict) -> tuple[list[Hit], bool]:
        """The best hits, at most `plan.cap` of one document, and whether a candidate list was full."""
        mode, gen, cap = plan.mode, plan.gen, plan.cap
        depth: int | None = 1
        while True:
            stmt = _statement(mode, plan.where, params, depth, plan.filtered, gen)
            rows, found, cut, live = self._run(conn, stmt, {**params, **plan.fparams}, mode)
            if gen is not None and (live if rows else _live_id(conn)) != gen.id:
                raise _Switched
            if not plan.filtered or mode == "dense" or depth is None or not cut or found >= params["pool"]:
                break  # one pass, unless a filter dropped most of what the cut lists held:
            # then lists ten times deeper if that should do, else every chunk the filter keeps.
            depth = 10 if depth == 1 and found * 10 >= params["pool"] else None
        n = params["n"]
        if mode != "hybrid":
            hits = [_hit(r, r["score"]) for r in per_document(rows, cap, lambda r: r["doc_key"])[:n]]
            return hits, len(rows) >= params["k"]
        by_id = {r["chunk_id"]: r for r in rows}
        cands = [
            Candidate(
                r["chunk_id"],
                r["doc_key"],
                r["chunk_index"],
                r["dense_rank"],
                _float(r["dense_score"]),
                r["keyword_rank"],
                _float(r["keyword_score"]),
                float(r["boost"]),
            )
            for r in rows
        ]
        fused = fuse(cands, self.config.fusion, rrf_k=params["rrf_k"], weights=(params["wd"], params["wk"]))
        fused = reading_order(diversify(fused, cap, self.config.repeat_discount)[:n])
        hits = [_hit(by_id[f.candidate.id], f.score) for f in fused]
        legs = (sum(c.dense_rank is not None for c in cands), sum(c.keyword_rank is not None for c in cands))
        return hits, max(legs) >= params["k"]

    def _pick_reranker(self, rerank: bool | None) -> Reranker | None:
        if rerank is False:
            return None
        if rerank and self.reranker is None:
            raise QueryError(
                "reranking was requested but no reranker is enabled: set RERANK_ENABLED=true and "
                "RERANKER_MODEL (a local cross-encoder directory) or RERANKER_URL"
            )
        return self.reranker

    def _ready(self) -> bool:
        """False for an empty store; brings an older store's schema up to date once, on a connection of
        its own (a migration is not held to a search's statement time limit)."""
        if self._checked:
            return True
        with self.connection() as conn:
            built, current = store_model(conn), is_current(conn)
        if built is None:
            return False
        if not current:
            with connect(self.url) as conn:
                open_built(conn)
        self._checked = True
        return True

    def _params(
        self,
        query: str,
        mode: str,
        n: int,
        fetch_k: int | None,
        rrf_k: int | None,
        weights: tuple[float, float] | None,
        boost_tags,
        gen: Generation | None = None,
        cap: int = 0,
    ) -> dict:
        """Statement parameters; `k` candidates per ranking: a hybrid fetches `fetch_k` of each, a
        capped dense or keyword search twice what it returns (deeper when the cap leaves too few: each
        row read costs its text, ~0.4 ms per 10 rows at 100k chunks)."""
        cfg = self.config
        k = max(fetch_k or cfg.fetch_k, n) if mode == "hybrid" else (2 * n if cap else n)
        wd, wk = weights or (cfg.dense_weight, cfg.keyword_weight)
        p = {
            "q": query,
            "k": k,
            "n": n,
            "limit": n if mode == "hybrid" else k,
            "k1": cfg.bm25_k1,
            "b": cfg.bm25_b,
            "wh": cfg.bm25_heading_weight - 1.0,
            "prune_df": cfg.bm25_prune_df,
            "prune_idf": cfg.bm25_prune_idf,
            "per_term": cfg.bm25_per_term,
            "pool": max(cfg.bm25_pool, k),
            "wd": float(wd),
            "wk": float(wk),
            "rrf_k": rrf_k or cfg.rrf_k,
            "boost": cfg.tag_boost,
            "tags": sorted(_boost_tags(query, boost_tags)),
        }
        if gen is not None:
            p["vec"] = self._vector(query, gen)
        return p

    def _configure(self, conn: psycopg.Connection) -> None:
        """Each pooled connection's session, set once as it opens: pgvector's types, the statement time
        limit, and the HNSW scan settings (ef_search at its default; `_set_ef_search` raises it per search)."""
        register_vector(conn)
        ef = self.config.ef_search
        conn.execute(
            "SELECT set_config('statement_timeout', %s, false), set_config('hnsw.ef_search', %s, false), "
            "set_config('hnsw.iterative_scan', 'strict_order', false)",
            (str(self.config.statement_timeout_ms), str(ef)),
        )
        self._ef_search[conn] = ef

    def _set_ef_search(self, conn: psycopg.Connection, ef: int) -> None:
        """This connection's ef_search, sent only when it changes (a round trip saved per search)."""
        if self._ef_search.get(conn) != ef:
            conn.execute("SELECT set_config('hnsw.ef_search', %s, false)", (str(ef),))
            self._ef_search[conn] = ef

    def _vector(self, query: str, gen: Generation):
        """The query's embedding by `gen`'s model; the last few are kept, as callers often repeat a query."""
        key = (gen.id, query)
        with self._vectors_lock:
            vec = self._vectors.get(key)
        if vec is None:
            vec = self._embedder_for(gen).encode([query], kind="query")[0]
            with self._vectors_lock:
                if len(self._vectors) >= 64:
                    self._vectors.pop(next(iter(self._vectors)))
                self._vectors[key] = vec
        return vec

    def _run(
        self, conn: psycopg.Connection, stmt: sql.Composed, params: dict, mode: str
    ) -> tuple[list[dict], int, bool, int | None]:
        """The rows, the keyword candidates that passed the filter, whether a list was cut, and the
        generation live in the statement's snapshot (None without rows)."""
        try:
            if mode != "keyword":  # exact enough candidates, even when a filter drops most of them
                self._set_ef_search(conn, min(1000, max(self.config.ef_search, params["k"])))
            with conn.cursor(row_factory=dict_row) as cur:
                rows = cur.execute(stmt, params).fetchall()
        except psycopg.errors.UndefinedTable:
            raise _Switched from None  # the generation's table was dropped after a switch
        except psycopg.errors.DataError as e:
            raise QueryError(f"invalid filter value: {e.diag.message_primary or e}") from None
        except psycopg.errors.QueryCanceled:
            raise StoreError(
                f"the search ran past its time limit (search.statement_timeout_ms = "
                f"{self.config.statement_timeout_ms} ms) and was cancelled: narrow its filters, "
                "or raise DOCFORGE_SEARCH_STATEMENT_TIMEOUT_MS"
            ) from None
        if not rows:
            return rows, 0, True, None
        return rows, rows[0]["found"], rows[0]["cut"], rows[0].get("live_generation")


def _hit(row: dict, score) -> Hit:
    return Hit(
        **{f: row[f] for f in _HIT_FIELDS},
        score=round(min(1.0, float(score or 0.0)), 6),
        dense_rank=row["dense_rank"],
        keyword_rank=row["keyword_rank"],
    )


def _float(value) -> float | None:
    return None if value is None else float(value)


@dataclass(frozen=True)
class _Plan:
    """What one search runs, whatever its depth: the mode, the compiled filter, the generation read, the
    per-document cap (None: no limit)."""

    mode: str
    where: sql.Composable
    fparams: dict
    filtered: bool
    gen: Generation | None
    cap: int | None


_SWITCHES = 5  # generation switches one search follows before it gives up (one is already rare)


class _Switched(Exception):
    """The statement read a generation that is no longer live."""


def _live_id(conn: psycopg.Connection) -> int | None:
    gen = generations.live(conn)
    return gen.id if gen else None


def _statement(
    mode: str,
    where: sql.Composable,
    params: dict,
    depth: int | None = 1,
    filtered: bool = False,
    gen: Generation | None = None,
) -> sql.Composed:
    """The statement for `mode`; `depth` multiplies the posting lists read, None scores the filter's chunks."""
    # Limits are literals, not parameters: a cached generic plan then still knows them.
    per_term, pool = (params["per_term"] * depth, params["pool"]) if depth else (None, None)
    limits = {
        "k": sql.Literal(params["k"]),
        "limit": sql.Literal(params["limit"]),
        "per_term": sql.Literal(per_term),
        "pool": sql.Literal(pool),
    }
    if depth is None:
        candidates = sql.SQL(_FILTER_CANDIDATES).format(filter=where)
    else:  # join chunks and documents only when there is a filter to test
        listed = _FILTERED_LIST_CANDIDATES if filtered else _LIST_CANDIDATES
        candidates = sql.SQL(listed).format(filter=where, **limits)
    vectors = {"vectors": gen.table, "vtype": gen.column_type} if gen is not None else {}
    weighted = params.get("wh", 0.0) != 0.0
    fields = {
        "headings": sql.SQL(_HEADINGS if weighted else ""),
        "heading_tf": sql.SQL("+ %(wh)s * coalesce(h.tf, 0)" if weighted else ""),
        "heading_join": sql.SQL(_HEADING_TF if weighted else ""),
    }
    return sql.SQL(_STATEMENTS[mode]).format(filter=where, candidates=candidates, **limits, **vectors, **fields)


def _boost_tags(query: str, extra) -> set[str]:
    """Tags that earn the hybrid boost: words of the query plus any given (team, area...)."""
    words = {w for w in re.findall(r"[\w.-]+", query.lower()) if len(w) > 1}
    return words | {t.lower() for t in extra if t}


def _check_text(what: str, text: str) -> None:
    """Refuse text with no UTF-8 form (a lone surrogate, e.g. from a JSON "\\ud800" escape)."""
    if (i := first_surrogate(text)) is not None:
        raise QueryError(f"{what} is not valid Unicode: a lone surrogate U+{ord(text[i]):04X} at character {i}")

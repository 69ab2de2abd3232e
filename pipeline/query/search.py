"""Search the index: dense, keyword (BM25) or hybrid (document-aware fusion of both).

Every surface (CLI, MCP server, HTTP API) calls `Searcher.search`. The SQL it
runs is in `sql/*.sql` beside this module (`pipeline.query.statements`): a leg
per ranking (dense.sql, keyword.sql; hybrid runs both and fuses them in
Python), then hits.sql for the text and citation of what it returns. Scores are
in [0, 1] for every mode:

- dense:   (1 + cosine similarity) / 2 of query and chunk vectors;
- keyword: BM25 / the most BM25 the query's terms could score (every term
           saturated), so 1 means "every query term, many times, in a short chunk";
- hybrid:  the document-aware fused score of `pipeline.query.fusion` (convex by
           default), × 1 + tag_boost when a tag matches, capped at 1.

Every mode keeps at most `per_doc` chunks of one document in a result list (reading deeper when the
cap leaves too few: `Searcher._read`), lists a document's best chunk before its others; hybrid joins
neighbouring chunks of one document into one hit led by the better of them (`fusion.passages`).

Keyword ranking is Okapi BM25 (k1, b) with Lucene's non-negative IDF, computed in
Postgres from posting lists and corpus statistics that triggers keep exact
(`bm25_blocks`, `bm25_docs`, `bm25_terms`, `bm25_stats`; migrations 0002, 0003, 0008). Query
terms are ORed: a question need not share every word with its answer.
Optional reranking (`pipeline.query.rerank`) reorders the fused candidates and sets
`rerank_score`; `score` stays the mode's score.

Dense ranking reads the live model generation's vectors (`vectors_<id>`,
pipeline.store.generations) with a query embedded by that generation's model.
The dense statement also returns which generation is live in its snapshot: when a reindex has switched
(or the old table is already dropped), the query is embedded again by the new model and the statement
re-run, so a search never mixes generations and never fails for a switch.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace

import psycopg
from pgvector.psycopg import register_vector
from psycopg import sql
from psycopg.rows import dict_row

from pipeline import access
from pipeline.config import SearchConfig, Settings
from pipeline.embed import TextEmbedder, for_config, for_generation, model_name, saved_queries, uses_service
from pipeline.errors import QueryError, StoreError
from pipeline.query.filters import compile_filter
from pipeline.query.fusion import Passage, distinct
from pipeline.query.hits import Hit, deep_url, joined
from pipeline.query.near import collapse
from pipeline.query.plan import MODES, Mode, Plan, check_text, tags_to_boost
from pipeline.query.ranking import rank
from pipeline.query.rerank import Reranker, load_reranker, rerank_or_keep
from pipeline.query.statements import Leg, Reading, centroids, statement
from pipeline.query.statements import hits as hits_statement
from pipeline.store import generations
from pipeline.store.db import connect, store_url
from pipeline.store.generations import Generation
from pipeline.store.pool import checkout, open_pool
from pipeline.store.schema import open_built

_UNSET = object()
_MAX_K = 1000  # the deepest candidate list a search reads
_SWITCHES = 5  # generation switches one search follows before it gives up (one is already rare)


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
        keep_queries: bool = False,
    ):
        self.settings = settings
        self._keep_queries = keep_queries  # query vectors kept on disk between processes (the CLI's)
        self.config = config or settings.search
        self.url = store_url(settings, url)
        connect(self.url).close()  # fails now, clearly, on a wrong URL; installs pgvector in a fresh database
        self._embedder = embedder
        self._reranker = reranker
        self._loaded: dict[str, object] = {}  # embedder, reranker: loaded once, by whichever thread asks first
        self._once = threading.Lock()
        self._checked = False
        self._live: Generation | None = None  # the live generation, as the last statement saw it
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
                lambda: self._embedder or for_config(self.settings.embedding, "query"),
            )
        return self._embedder_for(gen)

    def _embedder_for(self, gen: Generation) -> TextEmbedder:
        def load() -> TextEmbedder:
            return for_generation(self.settings.embedding, gen, "query", self._embedder)

        return self._load(f"embedder:{gen.id}", load)  # type: ignore[return-value]

    @property
    def model_name(self) -> str:
        """The query model's name (`Embedder.name`), without loading a local model to learn it."""
        gen, cfg = self._generation(), self.settings.embedding
        if gen is None or self._embedder is not None or uses_service(cfg, "query"):
            return str(getattr(self.embedder, "name", None) or cfg.model)
        return model_name(cfg, gen)

    def query_vector(self, query: str, gen: Generation | None = None):
        """`query` embedded for `gen` (default: the live one); with `keep_queries`, read back from disk when
        this machine embedded it before, so that no model loads for it."""
        gen, cfg = gen or self._generation(), self.settings.embedding
        kept = saved_queries(cfg, gen) if gen and self._keep_queries and not self._embedder else None
        if kept is None or (vec := kept.get(query)) is None:
            vec = (self._embedder_for(gen) if gen else self.embedder).encode([query], kind="query")[0]
            if kept:
                kept.put(query, vec)
        return vec

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
        reader: access.Principal | None = None,
    ) -> list[Hit]:
        """The best `limit` chunks for `query` that `reader` may read (None: full access, as the CLI).
        `filters`: see pipeline.query.filters. `weights`: (dense, keyword) for hybrid fusion. `rerank`:
        None follows RERANK_ENABLED. `per_doc`: at most this many chunks of one document (0: no limit;
        None: the configured `search.per_doc`)."""
        if mode not in MODES:
            raise QueryError(f"unknown mode {mode!r}: choose one of {', '.join(MODES)}")
        if limit < 1:
            raise QueryError(f"limit must be at least 1, got {limit}")
        check_text("the query", query)
        for tag in boost_tags:
            check_text("a boost tag", tag)
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
        weights = weights or (cfg.dense_weight, cfg.keyword_weight)
        # Who may read what is part of every statement's WHERE, so ranking, limits, the per-document cap
        # and deeper reads all see only what the reader may read; full access adds nothing.
        may_read, abinds = access.predicate(reader)
        restricted = bool(abinds)
        if restricted:
            where, fparams = sql.SQL("({} AND {})").format(where, may_read), {**fparams, **abinds}
        plan = Plan(
            mode, n, cap or None, where, fparams, rrf_k or cfg.rrf_k, (float(weights[0]), float(weights[1])),
            frozenset(tags_to_boost(query, boost_tags)), may_read, abinds,
        )  # fmt: skip
        k = max(fetch_k or cfg.fetch_k, n) if mode == "hybrid" else (2 * n if cap else n)
        for _ in range(_SWITCHES):  # a reindex switching generations mid-search: embed again, search again
            gen = None if mode == "keyword" else self._generation()
            # Query vectors: the query embedder's recent ones (pipeline.embed.batching), the CLI's on disk.
            vec = self.query_vector(query, gen) if gen is not None else None
            try:
                with self.connection() as conn:
                    hits = self._read(conn, plan, Reading.first(query, k, bool(filters) or restricted, cfg, vec), gen)
            except _Switched:
                self._generation(refresh=True)
                continue
            return rerank_or_keep(reranker, query, hits, limit) if reranker else hits
        raise StoreError(f"the live model generation changed {_SWITCHES} times during one search; try again")

    def _read(self, conn: psycopg.Connection, plan: Plan, r: Reading, gen: Generation | None) -> list[Hit]:
        """The best `plan.n` hits, reading deeper while too few come back. The one place of that policy:

        - a filter that dropped most of what cut posting lists held (keyword leg): lists ten times
          deeper if that should do, else every chunk the filter keeps (`exhaustive`);
        - the per-document cap (or a filter) leaving fewer than `plan.n` hits of a full candidate list:
          four times as many candidates, up to _MAX_K.

        A capped dense or keyword search first reads twice what it returns, a hybrid `fetch_k` of each
        leg: each candidate costs little (ids and scores; the text is read for the hits alone)."""
        first_depth = r.per_term
        dense_at: dict[
            int, list[dict]
        ] = {}  # the dense leg depends on k alone: the keyword leg's deeper reads reuse it
        while True:
            if plan.mode != "keyword" and r.k not in dense_at:
                dense_at[r.k] = self._leg(conn, "dense", plan, r, gen)
            dense = dense_at.get(r.k, [])
            keyword = self._leg(conn, "keyword", plan, r) if plan.mode != "dense" else []
            found, cut = (keyword[0]["found"], keyword[0]["cut"]) if keyword else (0, True)
            if r.filtered and plan.mode != "dense" and not r.exhaustive and cut and found < r.pool:
                deeper = r.per_term == first_depth and found * 10 >= r.pool
                r = replace(r, per_term=r.per_term * 10) if deeper else replace(r, exhaustive=True)
                continue
            whole = self._centroids(conn, plan, dense, r, gen) if plan.mode == "hybrid" else {}
            one_dense, one_keyword = distinct(dense, keyword)  # identical pages: one copy of each text
            ranked = rank(plan, one_dense, one_keyword, whole, self.config)
            full = max(len(dense), len(keyword)) >= r.k
            if len(ranked) >= plan.n or not full or r.k >= _MAX_K:
                return self._cite(conn, plan, ranked)
            k = min(_MAX_K, r.k * 4)
            r = replace(r, k=k, pool=max(r.pool, k))

    def _leg(
        self, conn: psycopg.Connection, leg: Leg, plan: Plan, r: Reading, gen: Generation | None = None
    ) -> list[dict]:
        """One leg's candidates, best first; _Switched when `gen` was not live in the statement's snapshot."""
        if leg == "dense":  # exact enough candidates, even when a filter drops most of them
            self._set_ef_search(conn, min(1000, max(self.config.ef_search, r.k)))
        rows = self._run(conn, statement(leg, r, plan.where, gen, plan.may_read), {**r.binds(), **plan.fparams})
        if gen is not None and (rows[0]["live_generation"] if rows else _live_id(conn)) != gen.id:
            raise _Switched
        return rows

    def _centroids(
        self, conn: psycopg.Connection, plan: Plan, dense: list[dict], r: Reading, gen: Generation | None
    ) -> dict[str, float]:
        """Dense scores of the dense leg's documents as wholes (centroids.sql); none when off."""
        if gen is None or not dense or self.config.centroid_share <= 0 or self.config.fusion != "convex":
            return {}
        docs = sorted({row["doc_key"] for row in dense})
        rows = self._run(conn, centroids(gen, plan.may_read), {"vec": r.vec, "docs": docs, **plan.abinds})
        return {row["doc_key"]: float(row["score"]) for row in rows}

    def _cite(self, conn: psycopg.Connection, plan: Plan, ranked: list[Passage]) -> list[Hit]:
        """The hits: each passage's chunks read once (hits.sql), joined in document order. A chunk
        deleted since the legs read it (a concurrent ingest), or no longer readable, is left out, and so
        is a hit near-identical to a better one of another document (pipeline.query.near)."""
        ids = [f.candidate.id for p in ranked for f in p.chunks]
        rows = {
            row["chunk_id"]: row for row in self._run(conn, hits_statement(plan.may_read), {"ids": ids, **plan.abinds})
        }
        hits = []
        for p in ranked:
            chunks = [rows[f.candidate.id] for f in p.chunks if f.candidate.id in rows]
            lead, c = rows.get(p.lead.candidate.id), p.lead.candidate
            if lead is None:
                continue
            text, blocks = joined([ch["text"] for ch in chunks], [ch["blocks"] for ch in chunks])
            span = (chunks[0]["chunk_index"], chunks[-1]["chunk_index"]) if len(chunks) > 1 else None
            hits.append(
                Hit(
                    **{**lead, "text": text, "blocks": blocks, "url": deep_url(lead["url"], lead["anchor"])},
                    score=round(min(1.0, p.lead.score), 6),
                    dense_rank=c.dense_rank,
                    keyword_rank=c.keyword_rank,
                    span=span,
                    chunk_ids=tuple(ch["chunk_id"] for ch in chunks),
                )
            )
        return collapse(hits)  # a near copy of a better hit (a printable page) adds nothing

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
        """False for an empty store; OutdatedStore for an older one (a reader never migrates: `docforge db
        migrate` and ingest do)."""
        if not self._checked:
            with self.connection() as conn:
                if open_built(conn) is None:
                    return False
            self._checked = True
        return True

    def _configure(self, conn: psycopg.Connection) -> None:
        """Each pooled connection's session, set once as it opens: pgvector's types, the statement time
        limit, and the HNSW scan settings (ef_search at its default; `_set_ef_search` raises it per search).
        The pool's only writes are the answer cache's (pipeline.answers.loop): a crash may lose the last
        recorded answer or hit count, never corrupt one, so a commit does not wait for the WAL flush
        (milliseconds, against a cache hit's 10 ms budget)."""
        register_vector(conn)
        ef = self.config.ef_search
        conn.execute(
            "SELECT set_config('statement_timeout', %s, false), set_config('hnsw.ef_search', %s, false), "
            "set_config('hnsw.iterative_scan', 'strict_order', false), "
            "set_config('synchronous_commit', 'off', false)",
            (str(self.config.statement_timeout_ms), str(ef)),
        )
        self._ef_search[conn] = ef

    def _set_ef_search(self, conn: psycopg.Connection, ef: int) -> None:
        """This connection's ef_search, sent only when it changes (a round trip saved per search)."""
        if self._ef_search.get(conn) != ef:
            conn.execute("SELECT set_config('hnsw.ef_search', %s, false)", (str(ef),))
            self._ef_search[conn] = ef

    def _run(self, conn: psycopg.Connection, stmt: sql.SQL | sql.Composed, binds: dict) -> list[dict]:
        """The statement's rows; a dropped generation table is a switch, a bad value or a statement past
        its time limit a clear error."""
        try:
            with conn.cursor(row_factory=dict_row) as cur:
                return cur.execute(stmt, binds).fetchall()
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


class _Switched(Exception):
    """The statement read a generation that is no longer live."""


def _live_id(conn: psycopg.Connection) -> int | None:
    gen = generations.live(conn)
    return gen.id if gen else None

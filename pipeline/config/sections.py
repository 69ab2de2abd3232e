"""The settings sections: what each part of docforge is configured with, and its environment names.

Each section is a frozen model; one that is an `EnvSection` is also read from its documented environment
names (pipeline.config.base). The tree that holds them is `pipeline.config.settings.Settings`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import Field, SecretStr, field_validator

from pipeline.config.base import EnvSection, Strict

DEFAULT_MODEL = "all-MiniLM-L6-v2"
DEFAULT_CHUNK_TOKENS = 512  # chunking.max_tokens: the cap, below a large model's window
MAX_DIMENSIONS = 4000  # pgvector's HNSW index takes halfvec up to 4,000 dimensions (vector: 2,000)


def _user_model_cache() -> Path:
    # The XDG base-directory convention for a user's caches.
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "docforge" / "models"


# --- ingest -----------------------------------------------------------------------------------------


class EmbeddingConfig(EnvSection):
    """Which model embeds: `model`, else the first of `fallbacks` that loads (tried in order, each
    failure logged with its reason). With `url` set (EMBEDDER_URL), an embedder service embeds instead
    (pipeline.embed.remote): always for search, for ingest too with `remote_ingest`."""

    env_aliases: ClassVar[dict[str, tuple[str, ...]]] = {
        "cache_dir": ("DOCFORGE_MODEL_CACHE",),
        "url": ("EMBEDDER_URL",),
        "token": ("EMBEDDER_TOKEN",),
        "remote_ingest": ("EMBEDDER_INGEST",),
    }

    model: str = DEFAULT_MODEL
    fallbacks: list[str] = Field(default_factory=lambda: [DEFAULT_MODEL])
    # Matryoshka truncation (sentence-transformers `truncate_dim`): the first N dimensions, renormalised;
    # None: the model's own width. Above 2,000 the store keeps half-precision vectors (pgvector's HNSW limit).
    dimensions: int | None = Field(default=None, ge=1, le=MAX_DIMENSIONS)
    device: Literal["auto", "cpu", "cuda", "mps"] = "auto"
    batch_size: int | None = Field(default=None, ge=1)  # None: chosen for the device
    # auto: ONNX Runtime fp32 on a CPU when onnxruntime is installed and the model exports (the same
    # vectors as torch, cosine >= 0.9999, about 3x faster on 2 cores: docs/performance.md), else torch
    # (fp16 on CUDA), with one log line saying why. onnx-int8 is faster still but drifts (~0.01 cosine)
    # and lost 3-4 % dense MRR@10 on labelled questions (docs/performance.md, int8 by retrieval quality):
    # only on request.
    backend: Literal["auto", "torch", "onnx", "onnx-int8"] = "auto"
    # Search queries are one short text each, where torch's per-call overhead dominates
    # (MiniLM on CPU: 10.6 ms torch vs 3.6 ms ONNX fp32, same weights). auto: `backend`,
    # except torch becomes auto (ONNX Runtime on a CPU).
    query_backend: Literal["auto", "torch", "onnx", "onnx-int8"] = "auto"
    # Index pages (link share >= search.index_link_share: sitemaps, keyword indexes, lists of pages) are
    # indexed for keyword search only, without vectors: they point at answers rather than hold them, and
    # were 18 % of a manual's chunks (measured: docs/performance.md#index-pages). true: embed them too.
    index_pages: bool = False
    # Exported ONNX models depend on the model files only: one cache per user, shared by stores.
    cache_dir: Path = Field(default_factory=_user_model_cache)
    # The embedder service (`docforge serve --embedder`): comma-separated URLs, one per model served;
    # the client uses the one whose model the store's live generation was built with.
    url: str | None = None
    token: SecretStr | None = None  # EMBEDDER_TOKEN: the service's bearer token, both sides
    remote_ingest: bool = False  # ingest (and reindex) embed through `url` too, not in process
    timeout_s: float = Field(default=30.0, gt=0)  # one request to the service
    max_retries: int = Field(default=2, ge=0, le=10)  # on connection errors, 429 and 5xx

    @field_validator("url")
    @classmethod
    def _urls(cls, v: str | None) -> str | None:
        for u in (v or "").split(","):
            if u.strip() and not u.strip().startswith(("http://", "https://")):
                raise ValueError(f"{u.strip()!r} is not an http(s) URL")
        return v

    @property
    def urls(self) -> list[str]:
        return [u.strip().rstrip("/") for u in (self.url or "").split(",") if u.strip()]


class ChunkingConfig(Strict):
    """Chunk budget in model tokens, never more than the model's window; None means the whole window
    (a large model's is 8k-32k tokens: chunks that long retrieve poorly and cost quadratic attention)."""

    max_tokens: int | None = Field(default=DEFAULT_CHUNK_TOKENS, ge=16)
    overlap_tokens: int = Field(default=0, ge=0)


class ScheduleConfig(Strict):
    cron: str = "0 2 * * *"
    timezone: str = "UTC"
    # How long an ingest waits for another ingest of the same source (its run or rows lock), saying so
    # every 10 s (pipeline.store.locks), before it gives up; 0: as long as the other runs (a cold ingest
    # of a large source takes hours, so no fixed default fits every store).
    lock_wait_s: float = Field(default=0, ge=0)


# --- query ------------------------------------------------------------------------------------------


class SearchConfig(EnvSection):
    """Retrieval knobs; `DOCFORGE_SEARCH_<KEY>` overrides each."""

    env_prefix: ClassVar[str] = "DOCFORGE_SEARCH_"

    fetch_k: int = Field(default=50, ge=1, le=1000)  # candidates per ranking before fusion
    fusion: Literal["convex", "rrf"] = "convex"  # hybrid: scores relative to each leg's best, or ranks (RRF)
    rrf_k: int = Field(default=60, ge=1)
    dense_weight: float = Field(default=1.0, ge=0)  # fusion weights (convex: as shares of their sum)
    keyword_weight: float = Field(default=1.0, ge=0)
    per_doc: int = Field(default=2, ge=0)  # chunks of one document per result list; 0: no limit
    # hybrid: × each further chunk of a document; 0.8, not 0.5, keeps a long page's close second section in place
    repeat_discount: float = Field(default=0.8, ge=0, le=1)  # measured: docs/query.md, repeat discount on manuals
    # hybrid, bridging vocabulary (pipeline.query.fusion.fuse; docs/query.md#bridging-vocabulary): the share
    # of a document's dense score taken from its centroid (0: off), and the keyword score at which the
    # keyword leg gets its full weight (0: always full)
    centroid_share: float = Field(default=0.3, ge=0, le=1)
    keyword_confidence: float = Field(default=0.5, ge=0, le=1)
    tag_boost: float = Field(default=0.1, ge=0, le=1)  # hybrid: × (1 + boost) when a source tag matches
    # hybrid: a page whose text is at least `index_link_share` link text (a sitemap, keyword index, list of
    # pages: pipeline.parse.Parsed.link_share) is an index page, its score × `index_weight` (1: off).
    # Measured on real HTML manuals in docs/query.md#index-pages.
    index_link_share: float = Field(default=0.5, ge=0, le=1)
    index_weight: float = Field(default=0.5, ge=0, le=1)
    bm25_k1: float = Field(default=1.2, ge=0)
    bm25_b: float = Field(default=0.75, ge=0, le=1)
    bm25_heading_weight: float = Field(default=1.0, ge=0)  # BM25F: a heading-path term counts this many times
    bm25_prune_idf: float = Field(default=2.0, ge=0)  # see pipeline.query.search; 0 disables pruning
    bm25_prune_df: int = Field(default=1000, ge=0)
    bm25_per_term: int = Field(default=300, ge=1)  # postings read per query term (best first)
    bm25_pool: int = Field(default=100, ge=1)  # candidates scored exactly (at least k)
    rerank_candidates: int = Field(default=50, ge=1, le=1000)
    # HNSW candidate list (at least k): recall@10 vs exact at 100k chunks, see docs/performance.md
    ef_search: int = Field(default=100, ge=1, le=1000)
    # Long-lived servers (API, MCP): concurrent searches run on pooled connections, each search waits at
    # most pool_timeout_s for one (then "store unavailable", HTTP 503), and each statement runs at most
    # statement_timeout_ms (then a clear error, HTTP 503; 0: no limit). See pipeline.store.pool.
    pool_size: int = Field(default=8, ge=1, le=100)
    pool_timeout_s: float = Field(default=5.0, gt=0)
    statement_timeout_ms: int = Field(default=10_000, ge=0)
    # The filter complexity budget (pipeline.query.filters): values in all lists and conditions together,
    # nesting depth of $and/$or, and conditions plus $and/$or branches. Over it: a QueryError (HTTP 400).
    filter_max_values: int = Field(default=1000, ge=1)
    filter_max_depth: int = Field(default=8, ge=1)
    filter_max_terms: int = Field(default=64, ge=1)
    # The knobs above that bound a search's cost, never its results (the answer cache's key leaves them out).
    limits: ClassVar[frozenset[str]] = frozenset(
        {
            "pool_size",
            "pool_timeout_s",
            "statement_timeout_ms",
            "filter_max_values",
            "filter_max_depth",
            "filter_max_terms",
        }
    )


def _per_core(n: int) -> int:
    """`n` per CPU this process may run on (at least 2, at most 64): a default that follows the machine."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    return max(2, min(64, n * cores))


class ApiConfig(EnvSection):
    """The HTTP API's request limits, checked before a body is read (docforge.servers.api)."""

    env_prefix: ClassVar[str] = "DOCFORGE_API_"

    max_body_bytes: int = Field(default=2**20, ge=1)  # larger: 413 (by Content-Length, or counted as it streams)
    max_header_bytes: int = Field(default=16 * 2**10, ge=1024)  # request line + headers; larger: 431
    # The Dagster UI the page's Sources tab links each source's partition to (docs/web.md).
    dagster_url: str = "http://127.0.0.1:3000"
    # Admission control (docforge.servers.gate, docs/deploy.md "Sizing the API"): at most max_in_flight
    # searches (and page reads) and max_asks_in_flight asks are worked on at once; others wait, at most
    # max_wait_s and at most max_queued of them, then get 503 with Retry-After at once.
    max_in_flight: int = Field(default_factory=lambda: _per_core(2), ge=1, le=1000)
    max_asks_in_flight: int = Field(default_factory=lambda: _per_core(2), ge=1, le=1000)
    max_queued: int = Field(default=256, ge=0, le=100_000)
    max_wait_s: float = Field(default=1.0, ge=0, le=60)


class WebhookConfig(EnvSection):
    """Webhook deliveries from git hosts and Confluence (docforge.servers.hooks, docs/orchestration.md)."""

    env_prefix: ClassVar[str] = "DOCFORGE_WEBHOOK_"

    secret: SecretStr | None = None  # DOCFORGE_WEBHOOK_SECRET; a source's `webhook_secret_env` overrides it
    max_body_bytes: int = Field(default=2**20, ge=1024)  # larger: 413, before the signature is checked


class RerankConfig(EnvSection):
    """The optional reranker: on only when enabled and a model or URL is set (pipeline.query.rerank)."""

    env_prefix: ClassVar[str] = "RERANKER_"
    env_aliases: ClassVar[dict[str, tuple[str, ...]]] = {"enabled": ("RERANK_ENABLED",)}

    enabled: bool = False
    model: str | None = None  # a local sentence-transformers CrossEncoder directory
    url: str | None = None  # a rerank service: POST {url}/rerank
    api_key: SecretStr | None = None  # sent to `url` as a bearer token
    timeout_s: float = Field(default=10.0, gt=0)


class VerifierConfig(EnvSection):
    """The answer verifier (pipeline.answers.verify): its fitted parameters, and the optional NLI judge."""

    env_prefix: ClassVar[str] = "VERIFIER_"

    # The verifier's parameters (rules' constants, the calibrated model): None: the shipped
    # pipeline/answers/params/verifier.json (refit with `python bench/verify_docs.py --fit`).
    params: Path | None = None
    # A sentence-transformers CrossEncoder trained for NLI (a local directory or a name in the model cache):
    # its entailment score of each claim–evidence pair enters the calibrated model. Never downloaded.
    nli_model: str | None = None
    nli_device: str = "auto"  # auto: cuda where present, else cpu


# --- surfaces ---------------------------------------------------------------------------------------


class ServiceConfig(EnvSection):
    """The model sidecars, `docforge serve --embedder` and `--reranker`: what one request may ask
    (docforge.servers.embedder, docforge.servers.reranker). Over a limit: 413 (body) or 422 (items)."""

    env_prefix: ClassVar[str] = "DOCFORGE_SERVICE_"

    max_body_bytes: int = Field(default=8 * 2**20, ge=1024)
    max_items: int = Field(default=512, ge=1, le=100_000)  # texts per /embed, documents per /rerank
    max_item_chars: int = Field(default=100_000, ge=1)  # one text or document
    # Concurrent requests are merged into one forward pass: the batcher waits this long for company,
    # and passes at most max_batch texts at once (None: the model's batch size).
    batch_wait_ms: float = Field(default=2.0, ge=0, le=1000)
    max_batch: int | None = Field(default=None, ge=1)


class AuthConfig(EnvSection):
    """Who may call the HTTP API (docforge.servers.auth), and the token `serve --remote-api` sends."""

    env_prefix: ClassVar[str] = "DOCFORGE_"
    env_aliases: ClassVar[dict[str, tuple[str, ...]]] = {
        "remote_api_token": ("DOCFORGE_API_TOKEN",),
        "tokens_file": ("DOCFORGE_API_TOKENS_FILE",),
        "mcp_principal": ("DOCFORGE_MCP_PRINCIPAL",),
        "mcp_groups": ("DOCFORGE_MCP_GROUPS",),
    }

    api_tokens: SecretStr | None = None  # comma-separated opaque tokens: admin tokens (full access)
    # Named callers with groups (docs/security.md): YAML or JSON entries of name, sha256 (of the token,
    # never the token), groups, full_access; a relative path is from sources.yml.
    tokens_file: str | None = None
    jwt_jwks_url: str | None = None
    jwt_audience: str | None = None
    jwt_issuer: str | None = None
    jwt_algorithms: str = "RS256"
    jwt_leeway_s: int = Field(default=30, ge=0)
    # Who a JWT names: the first of these claims it holds (email, sub ...), comma-separated.
    jwt_user_claims: str = "email,preferred_username,upn,unique_name,sub"
    # Its groups: every one of these claims it holds, each a list or a space/comma-separated string.
    jwt_group_claims: str = "groups,roles"
    remote_api_token: SecretStr | None = None
    # Who the local MCP server (stdio) reads as: unset, full access (a local tool, as the CLI);
    # set, that user with `mcp_groups` (comma-separated) and no more.
    mcp_principal: str | None = None
    mcp_groups: str = ""


class LLMConfig(EnvSection):
    """An OpenAI-compatible chat server for `docforge ask`; none (no base_url) means extractive answers."""

    env_prefix: ClassVar[str] = "DOCFORGE_LLM_"
    env_aliases: ClassVar[dict[str, tuple[str, ...]]] = {"api_key": ("DOCFORGE_LLM_API_KEY", "OPENAI_API_KEY")}

    base_url: str | None = None  # e.g. http://localhost:11434/v1 (Ollama), https://api.openai.com/v1
    model: str | None = None
    temperature: float = Field(default=0.0, ge=0, le=2)
    max_tokens: int = Field(default=800, ge=1)
    timeout_s: float = Field(default=60.0, gt=0)
    max_retries: int = Field(default=4, ge=0, le=10)  # on 429 / 5xx / connection errors
    max_backoff_s: float = Field(default=8.0, gt=0)  # cap of one wait (Retry-After included)
    api_key: SecretStr | None = None


class AnswersConfig(EnvSection):
    """The answer layer (pipeline.answers): loop, evidence and cache."""

    env_prefix: ClassVar[str] = "DOCFORGE_ANSWERS_"

    cache: bool = True
    cache_mode: Literal["strict", "equivalence"] = "strict"  # how questions are compared (docs/answers.md)
    max_iterations: int = Field(default=3, ge=1, le=10)
    evidence_k: int = Field(default=6, ge=1, le=50)  # chunks retrieved per iteration
    max_evidence: int = Field(default=12, ge=1, le=100)  # evidence blocks shown to the model at most
    per_doc: int = Field(default=0, ge=0, le=20)  # chunks of one document per search (0: no cap, see retrieve.py)
    extractive_sentences: int = Field(default=4, ge=1, le=10)
    # The extractive answerer's fitted parameters (weights, abstention threshold, calibration): a file
    # written by `docforge tune`; None: the one shipped for the index's model (pipeline/answers/params/).
    params: Path | None = None


class UsageConfig(EnvSection):
    """What each ask and search leaves behind for `docforge gaps` (pipeline.usage, docs/gaps.md). Its one
    environment spelling is the generic DOCFORGE_USAGE__<KEY>."""

    enabled: bool = True
    retention_days: int = Field(default=90, ge=1, le=3650)  # older records are pruned by the nightly job
    store_question: bool = True  # False: only the question's SHA-256 is kept (groups then match exact repeats)
    store_principal: bool = True  # False: only the SHA-256 of the caller's name is kept
    queue_size: int = Field(default=1024, ge=1, le=1_000_000)  # records waiting for the writer; past it: dropped
    # An answer below this confidence is a gap: the extractive bands measured in docs/answers.md ("confidence
    # bands") hold the expected phrase 50 % of the time below 0.5 and 80-100 % above it.
    low_confidence: float = Field(default=0.5, ge=0, le=1)
    # Two questions mean the same when their mean cosine to a group reaches this: fitted on the `fit` half of
    # bench/paraphrases.jsonl with all-MiniLM-L6-v2 (bench/gaps.py: purity 0.97, completeness 0.91 there;
    # on the held half 1.00 and 0.97). Higher splits paraphrases, lower merges distinct questions.
    same_meaning: float = Field(default=0.4, gt=0, le=1)
    # A search's best dense hit below this score ((1 + cosine) / 2) found nothing good: bench/gaps.py
    # --weak-hit on this repository's docs (all-MiniLM-L6-v2): 32 questions they cannot answer scored
    # 0.56-0.63, 12 they answer 0.65-0.84; the middle of the gap.
    weak_hit: float = Field(default=0.64, ge=0, le=1)
    stale_days: int = Field(default=365, ge=1)  # a document cited often, unchanged this long: a staleness hint


class MetricsConfig(EnvSection):
    """`GET /metrics` (docforge.servers.metrics, docs/metrics.md); spelled DOCFORGE_METRICS__<KEY>. With
    `token` set, a scrape needs it; without, an API token with full access. `bind` (host:port) serves the
    metrics on a listener of their own as well (no token: bind it where only Prometheus reaches)."""

    enabled: bool = True
    token: SecretStr | None = None
    bind: str | None = None

    @field_validator("bind")
    @classmethod
    def _host_port(cls, v: str | None) -> str | None:
        if v and not v.rpartition(":")[2].isdigit():
            raise ValueError(f"{v!r} is not host:port (e.g. 127.0.0.1:9464)")
        return v


# --- sources' credentials ---------------------------------------------------------------------------


class ConfluenceCredentials(EnvSection):
    """Confluence Cloud auth: email + API token (basic), else a bearer token / PAT."""

    env_prefix: ClassVar[str] = "CONFLUENCE_"
    env_aliases: ClassVar[dict[str, tuple[str, ...]]] = {"bearer_token": ("CONFLUENCE_BEARER_TOKEN", "CONFLUENCE_PAT")}

    email: str | None = None
    api_token: SecretStr | None = None
    bearer_token: SecretStr | None = None


# --- the Dagster shell ------------------------------------------------------------------------------

Executor = Literal["multiprocess", "in_process", "k8s"]


class OrchestrationConfig(EnvSection):
    """How Dagster runs the ingest; read when the code location loads, so from the environment only."""

    env_prefix: ClassVar[str] = "DOCFORGE_"

    # multiprocess: Dagster's default, a process per step; in_process: every step in the run's
    # process (a small machine); k8s: a pod per step (dagster-k8s), so embedding can get a GPU.
    executor: Executor = "multiprocess"
    embed_pool: str = Field(default="gpu", min_length=1)  # the embedding step's concurrency pool
    embed_gpus: int = Field(default=0, ge=0)  # >0 (k8s): the embedding step's pod asks for this many GPUs
    embed_node_selector: dict[str, str] | None = None  # JSON in the environment: pins a GPU node type

    @field_validator("executor", mode="before")
    @classmethod
    def _executor_name(cls, v: Any) -> Any:
        if isinstance(v, str):
            v = v.strip().lower()
            return "multiprocess" if v in ("", "default") else v
        return v

    @field_validator("embed_node_selector", mode="before")
    @classmethod
    def _json_object(cls, v: Any) -> Any:
        if isinstance(v, str):
            try:
                v = json.loads(v)
            except json.JSONDecodeError as e:
                raise ValueError(
                    f"not JSON ({e.msg}): expected an object such as "
                    '{"cloud.google.com/gke-accelerator": "nvidia-l4"}'
                ) from None
        return v

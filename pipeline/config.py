"""Typed configuration: one tree, rooted at `Settings`, from `sources.yml` plus the environment.

    Settings
    ├── sources          the sources to index (sources.yml)
    ├── embedding        model, fallbacks, dimensions, backend, device; `cache_dir` for ONNX exports;
    │                    the embedder service (EMBEDDER_URL, EMBEDDER_TOKEN)
    ├── chunking, schedule
    ├── search           retrieval knobs (DOCFORGE_SEARCH_<KEY>)
    ├── rerank           the optional reranker (RERANK_ENABLED, RERANKER_<KEY>)
    ├── auth             who may call the HTTP API (DOCFORGE_API_TOKENS, DOCFORGE_JWT_<KEY>)
    ├── api              the HTTP API's request limits (DOCFORGE_API_<KEY>)
    ├── service          the embedder / reranker sidecars' request limits (DOCFORGE_SERVICE_<KEY>)
    ├── llm              the chat server of `docforge ask` (DOCFORGE_LLM_<KEY>;
    │                    key: DOCFORGE_LLM_API_KEY or OPENAI_API_KEY)
    ├── answers          the answer layer's loop and cache (DOCFORGE_ANSWERS_<KEY>)
    ├── confluence       Confluence credentials (CONFLUENCE_<KEY>)
    ├── orchestration    how Dagster runs (DOCFORGE_EXECUTOR, DOCFORGE_EMBED_<KEY>); environment only
    ├── home             DOCFORGE_HOME
    └── database_url     DATABASE_URL

Precedence, highest first: the environment, then the YAML file, then defaults.
Every key also has the generic name `DOCFORGE_<SECTION>__<KEY>`; a section's
documented names (the table above, README's environment table) are listed on
the section as `env_prefix` / `env_aliases`. Secrets are `SecretStr`, read from
the environment only: a secret key in sources.yml is refused with a ConfigError,
and no error or repr ever shows a secret's value.

This module is the one place the process environment is read for configuration.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path, PurePosixPath
from typing import Annotated, Any, ClassVar, Literal, TypeVar, get_args

import yaml
from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from pipeline.errors import ConfigError

log = logging.getLogger(__name__)
DEFAULT_CONFIG = "sources.yml"
DEFAULT_GLOBS = ["README.md", "CLAUDE.md", "docs/**/*.md"]
DEFAULT_MODEL = "all-MiniLM-L6-v2"
DEFAULT_CHUNK_TOKENS = 512  # chunking.max_tokens: the cap, below a large model's window
MAX_DIMENSIONS = 4000  # pgvector's HNSW index takes halfvec up to 4,000 dimensions (vector: 2,000)
MAX_FILE_BYTES = 20 * 2**20  # a source file larger than this is not read (a docs page is kilobytes)
# Dagster refuses these in a partition key, and a source's name is its partition key.
_BAD_NAME_PARTS = ("...", "\a", "\b", "\f", "\n", "\r", "\t", "\v", "\0")


def config_file() -> Path:
    """Where sources.yml is: $DOCFORGE_CONFIG, else ./sources.yml."""
    return Path(os.environ.get("DOCFORGE_CONFIG") or DEFAULT_CONFIG)


def _user_model_cache() -> Path:
    # The XDG base-directory convention for a user's caches.
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "docforge" / "models"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class _Section(_Strict):
    """A part of the tree with environment names of its own, besides DOCFORGE_<SECTION>__<KEY>.

    A field's names are `env_aliases[field]` when listed, else `env_prefix + FIELD`
    (none when the prefix is empty); the first one set (non-empty) wins.
    """

    env_prefix: ClassVar[str] = ""
    env_aliases: ClassVar[dict[str, tuple[str, ...]]] = {}

    @classmethod
    def env_names(cls, field: str) -> tuple[str, ...]:
        if field in cls.env_aliases:
            return cls.env_aliases[field]
        return (f"{cls.env_prefix}{field}".upper(),) if cls.env_prefix else ()


# --- sources ----------------------------------------------------------------------------------------


def _check_name(name: str) -> str:
    if not name.strip():
        raise ValueError("a source needs a non-empty name (it names the source's documents and its Dagster partition)")
    if name != name.strip():
        raise ValueError(f"source name {name!r} starts or ends with whitespace")
    if bad := [p for p in _BAD_NAME_PARTS if p in name]:
        raise ValueError(f"source name {name!r} contains {bad[0]!r}, which a Dagster partition key cannot hold")
    return name


class _SourceBase(_Strict):
    name: str
    tags: list[str] = Field(default_factory=list)

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        return _check_name(v)


class GitSourceConfig(_SourceBase):
    """A git repository: a local path (relative to sources.yml) or a URL."""

    type: Literal["git"]
    repo: str
    branch: str | None = None  # None: the checked-out working tree (a URL: the remote's default branch)
    globs: list[str] = Field(default_factory=lambda: list(DEFAULT_GLOBS))
    max_file_bytes: int = Field(default=MAX_FILE_BYTES, ge=1)  # larger files are listed as failures, never read
    # A URL's credentials: the NAME of an environment variable holding "token" or "user:token"
    # (pipeline.sources.remote); the value itself never enters the config, a URL, a log or the store.
    credentials_env: str | None = Field(default=None, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")

    @field_validator("repo")
    @classmethod
    def _repo_given(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("repo is empty: give a path (relative to sources.yml) or a URL")
        if "://" in v:
            from urllib.parse import urlsplit

            if urlsplit(v).password is not None:
                raise ValueError(
                    "the repo URL holds a password: remove it, put it in an environment variable "
                    "and name that variable in `credentials_env`"
                )
        return v

    @field_validator("globs")
    @classmethod
    def _globs_inside(cls, v: list[str]) -> list[str]:
        # Globs match paths inside the repository, from its root: a '..' part would match nothing.
        for g in v:
            if ".." in PurePosixPath(g.lstrip("!").lstrip("/")).parts:
                raise ValueError(
                    f"glob {g!r} points outside the repository (a '..' part): globs match paths "
                    "inside it, from its root (`docs/**/*.md`); index another repository as another "
                    "source"
                )
        return v


# Directories a directory source never enters (fnmatch patterns on the name); `ignore_dirs` replaces
# the list. A directory holding `pyvenv.cfg` (any virtualenv, whatever its name) is skipped too.
DEFAULT_IGNORED_DIRS = [
    ".git",
    ".hg",
    ".svn",
    ".bzr",
    "node_modules",
    "bower_components",
    "__pycache__",
    ".venv",
    "venv",
    ".tox",
    ".nox",
    ".mypy_cache",
    ".pytest_cache",
    ".ruff_cache",
    ".hypothesis",
    ".cache",
    ".eggs",
    "*.egg-info",
    "build",
    "dist",
    "target",
    "out",
    "_build",
    ".next",
    ".nuxt",
    ".svelte-kit",
    ".gradle",
    ".terraform",
    ".idea",
    "coverage",
    "htmlcov",
    "site-packages",
    ".docforge",
]


class DirectorySourceConfig(_SourceBase):
    """A plain directory tree, no git needed (pipeline.sources.directory)."""

    type: Literal["directory"]
    path: str  # relative to sources.yml
    globs: list[str] = Field(default_factory=lambda: ["**"])  # gitignore-style, anchored at `path`
    extensions: list[str] | None = None  # e.g. [".md", ".py"]; None: every format docforge reads
    ignore: list[str] = Field(default_factory=list)  # more gitignore-style patterns to skip
    ignore_dirs: list[str] = Field(default_factory=lambda: list(DEFAULT_IGNORED_DIRS))
    gitignore: bool = True  # honour the root .gitignore
    max_file_bytes: int = Field(default=MAX_FILE_BYTES, ge=1)

    @field_validator("path")
    @classmethod
    def _path_given(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("path is empty: give a directory (relative to sources.yml)")
        return v

    @field_validator("globs")
    @classmethod
    def _globs_inside(cls, v: list[str]) -> list[str]:
        return GitSourceConfig._globs_inside(v)

    @field_validator("extensions")
    @classmethod
    def _dotted(cls, v: list[str] | None) -> list[str] | None:
        return None if v is None else ["." + e.lower().lstrip(".") for e in v if e.strip(". ")]


class ConfluenceSourceConfig(_SourceBase):
    """A Confluence Cloud site: a whole space and/or explicit pages."""

    type: Literal["confluence"]
    base_url: str  # https://example.atlassian.net/wiki
    space: str | None = None
    page_ids: list[str] = Field(default_factory=list)
    include_children: bool = False
    labels_include: list[str] = Field(default_factory=list)
    labels_exclude: list[str] = Field(default_factory=list)
    page_size: int = Field(default=100, ge=1, le=250)
    max_retry_after_s: float = Field(default=60.0, gt=0)
    retry_budget_s: float = Field(default=300.0, gt=0)
    max_attempts: int = Field(default=8, ge=1)
    timeout_s: float = Field(default=30.0, gt=0)
    # PDF and Word attachments of the pages in scope, as documents of their own (one more request per
    # page and listing); larger ones are skipped, never downloaded.
    attachments: bool = False
    max_attachment_bytes: int = Field(default=MAX_FILE_BYTES, ge=1)

    @field_validator("page_ids", mode="before")
    @classmethod
    def _ids_as_strings(cls, v: Any) -> Any:
        return [str(i) for i in v] if isinstance(v, list) else v

    @model_validator(mode="after")
    def _has_scope(self) -> ConfluenceSourceConfig:
        if not self.space and not self.page_ids:
            raise ValueError("set 'space' (a space key) and/or 'page_ids'")
        return self


SourceConfig = Annotated[GitSourceConfig | DirectorySourceConfig | ConfluenceSourceConfig, Field(discriminator="type")]


# --- ingest -----------------------------------------------------------------------------------------


class EmbeddingConfig(_Section):
    """Which model embeds: `model`, else the first of `fallbacks` that loads (tried in order, each
    failure logged with its reason). With `url` set (EMBEDDER_URL), an embedder service embeds instead
    (pipeline.embed_remote): always for search, for ingest too with `remote_ingest`."""

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
    backend: Literal["torch", "onnx", "onnx-int8"] = "torch"
    # Search queries are one short text each, where torch's per-call overhead dominates
    # (MiniLM on CPU: 10.6 ms torch vs 3.6 ms ONNX fp32, same weights). auto: `backend`,
    # except torch on a CPU becomes onnx when onnxruntime is installed.
    query_backend: Literal["auto", "torch", "onnx", "onnx-int8"] = "auto"
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


class ChunkingConfig(_Strict):
    """Chunk budget in model tokens, never more than the model's window; None means the whole window
    (a large model's is 8k-32k tokens: chunks that long retrieve poorly and cost quadratic attention)."""

    max_tokens: int | None = Field(default=DEFAULT_CHUNK_TOKENS, ge=16)
    overlap_tokens: int = Field(default=0, ge=0)


class ScheduleConfig(_Strict):
    cron: str = "0 2 * * *"
    timezone: str = "UTC"


# --- query ------------------------------------------------------------------------------------------


class SearchConfig(_Section):
    """Retrieval knobs; `DOCFORGE_SEARCH_<KEY>` overrides each."""

    env_prefix: ClassVar[str] = "DOCFORGE_SEARCH_"

    fetch_k: int = Field(default=50, ge=1, le=1000)  # candidates per ranking before fusion
    fusion: Literal["convex", "rrf"] = "convex"  # hybrid: scores relative to each leg's best, or ranks (RRF)
    rrf_k: int = Field(default=60, ge=1)
    dense_weight: float = Field(default=1.0, ge=0)  # fusion weights (convex: as shares of their sum)
    keyword_weight: float = Field(default=1.0, ge=0)
    per_doc: int = Field(default=2, ge=0)  # chunks of one document per result list; 0: no limit
    repeat_discount: float = Field(default=0.5, ge=0, le=1)  # hybrid: × on each further chunk of a document
    # hybrid, bridging vocabulary (pipeline.query.fusion.fuse; docs/query.md#bridging-vocabulary): the share
    # of a document's dense score taken from its centroid (0: off), and the keyword score at which the
    # keyword leg gets its full weight (0: always full)
    centroid_share: float = Field(default=0.3, ge=0, le=1)
    keyword_confidence: float = Field(default=0.5, ge=0, le=1)
    tag_boost: float = Field(default=0.1, ge=0, le=1)  # hybrid: × (1 + boost) when a source tag matches
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


class ApiConfig(_Section):
    """The HTTP API's request limits, checked before a body is read (docforge.servers.api)."""

    env_prefix: ClassVar[str] = "DOCFORGE_API_"

    max_body_bytes: int = Field(default=2**20, ge=1)  # larger: 413 (by Content-Length, or counted as it streams)
    max_header_bytes: int = Field(default=16 * 2**10, ge=1024)  # request line + headers; larger: 431
    # The Dagster UI the page's Sources tab links each source's partition to (docs/web.md).
    dagster_url: str = "http://127.0.0.1:3000"


class RerankConfig(_Section):
    """The optional reranker: on only when enabled and a model or URL is set (pipeline.query.rerank)."""

    env_prefix: ClassVar[str] = "RERANKER_"
    env_aliases: ClassVar[dict[str, tuple[str, ...]]] = {"enabled": ("RERANK_ENABLED",)}

    enabled: bool = False
    model: str | None = None  # a local sentence-transformers CrossEncoder directory
    url: str | None = None  # a rerank service: POST {url}/rerank
    api_key: SecretStr | None = None  # sent to `url` as a bearer token
    timeout_s: float = Field(default=10.0, gt=0)


# --- surfaces ---------------------------------------------------------------------------------------


class ServiceConfig(_Section):
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


class AuthConfig(_Section):
    """Who may call the HTTP API (docforge.servers.auth), and the token `serve --remote-api` sends."""

    env_prefix: ClassVar[str] = "DOCFORGE_"
    env_aliases: ClassVar[dict[str, tuple[str, ...]]] = {"remote_api_token": ("DOCFORGE_API_TOKEN",)}

    api_tokens: SecretStr | None = None  # comma-separated opaque tokens
    jwt_jwks_url: str | None = None
    jwt_audience: str | None = None
    jwt_issuer: str | None = None
    jwt_algorithms: str = "RS256"
    jwt_leeway_s: int = Field(default=30, ge=0)
    remote_api_token: SecretStr | None = None


class LLMConfig(_Section):
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


class AnswersConfig(_Section):
    """The answer layer (pipeline.answers): loop, evidence and cache."""

    env_prefix: ClassVar[str] = "DOCFORGE_ANSWERS_"

    cache: bool = True
    cache_mode: Literal["strict", "equivalence"] = "strict"  # how questions are compared (docs/answers.md)
    max_iterations: int = Field(default=3, ge=1, le=10)
    evidence_k: int = Field(default=6, ge=1, le=50)  # chunks retrieved per iteration
    max_evidence: int = Field(default=12, ge=1, le=100)  # evidence blocks shown to the model at most
    per_doc: int = Field(default=3, ge=1, le=20)  # chunks of one document per search: context beyond search's 2
    extractive_sentences: int = Field(default=4, ge=1, le=10)


# --- sources' credentials ---------------------------------------------------------------------------


class ConfluenceCredentials(_Section):
    """Confluence Cloud auth: email + API token (basic), else a bearer token / PAT."""

    env_prefix: ClassVar[str] = "CONFLUENCE_"
    env_aliases: ClassVar[dict[str, tuple[str, ...]]] = {"bearer_token": ("CONFLUENCE_BEARER_TOKEN", "CONFLUENCE_PAT")}

    email: str | None = None
    api_token: SecretStr | None = None
    bearer_token: SecretStr | None = None


# --- the Dagster shell ------------------------------------------------------------------------------

Executor = Literal["multiprocess", "in_process", "k8s"]


class OrchestrationConfig(_Section):
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


# --- the root ---------------------------------------------------------------------------------------

# Keys the file may not hold, and why.
_ORCHESTRATION_NAMES = "DOCFORGE_EXECUTOR, DOCFORGE_EMBED_POOL, DOCFORGE_EMBED_GPUS or DOCFORGE_EMBED_NODE_SELECTOR"
_ENV_ONLY = {
    "orchestration": f"Dagster reads it as it loads its definitions: set {_ORCHESTRATION_NAMES} in the environment",
    "confluence": "credentials come from the environment: set CONFLUENCE_EMAIL and CONFLUENCE_API_TOKEN "
    "(or CONFLUENCE_BEARER_TOKEN)",
    "config_path": "it is where this file was read from",
}


class _SectionEnv(PydanticBaseSettingsSource):
    """The sections' own environment names (`_Section.env_names`), as a nested dict."""

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False  # unused: __call__ reads whole sections

    def __call__(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for section, cls in _sections().items():
            for key in cls.model_fields:
                for name in cls.env_names(key):
                    if value := os.environ.get(name):
                        out.setdefault(section, {})[key] = value
                        break
        return out


class Settings(BaseSettings):
    """Everything docforge needs to run; see README's environment table."""

    model_config = SettingsConfigDict(env_prefix="DOCFORGE_", env_nested_delimiter="__", extra="forbid", frozen=True)

    sources: list[SourceConfig] = Field(default_factory=list)
    embedding: EmbeddingConfig = Field(default_factory=EmbeddingConfig)
    chunking: ChunkingConfig = ChunkingConfig()
    schedule: ScheduleConfig = ScheduleConfig()
    search: SearchConfig = SearchConfig()
    rerank: RerankConfig = RerankConfig()
    auth: AuthConfig = AuthConfig()
    api: ApiConfig = ApiConfig()
    service: ServiceConfig = ServiceConfig()
    confluence: ConfluenceCredentials = ConfluenceCredentials()
    orchestration: OrchestrationConfig = OrchestrationConfig()
    llm: LLMConfig = LLMConfig()
    answers: AnswersConfig = AnswersConfig()
    home: Path = Path(".docforge")
    database_url: SecretStr | None = Field(default=None, validation_alias=AliasChoices("database_url", "DATABASE_URL"))
    config_path: Path | None = None  # where sources.yml was read from

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # Environment beats the file: deployments override without editing YAML.
        return env_settings, _SectionEnv(settings_cls), init_settings

    @field_validator("sources")
    @classmethod
    def _unique_names(cls, v: list[SourceConfig]) -> list[SourceConfig]:
        seen: set[str] = set()
        for s in v:
            if s.name in seen:
                raise ValueError(f"duplicate source name {s.name!r}: names must be unique")
            seen.add(s.name)
        return v

    def source(self, name: str) -> SourceConfig:
        for s in self.sources:
            if s.name == name:
                return s
        known = ", ".join(s.name for s in self.sources) or "none"
        raise ConfigError(f"no source named {name!r} in {self.config_path} (known: {known})")

    def resolve_path(self, p: str) -> Path:
        """A path from the file, relative to the file's folder."""
        base = self.config_path.parent if self.config_path else Path.cwd()
        return (base / os.path.expanduser(p)).resolve()


def _sections() -> dict[str, type[_Section]]:
    """The root's fields that are sections with environment names of their own."""
    out = {}
    for name, f in Settings.model_fields.items():
        if isinstance(f.annotation, type) and issubclass(f.annotation, _Section):
            out[name] = f.annotation
    return out


def _is_secret(f: FieldInfo) -> bool:
    return f.annotation is SecretStr or SecretStr in get_args(f.annotation)


def _secrets() -> dict[tuple[str, ...], tuple[str, ...]]:
    """{path in the tree: its environment names} for every secret."""
    out: dict[tuple[str, ...], tuple[str, ...]] = {("database_url",): ("DATABASE_URL",)}
    for section, cls in _sections().items():
        for key, f in cls.model_fields.items():
            if _is_secret(f):
                out[(section, key)] = cls.env_names(key) + (f"DOCFORGE_{section}__{key}".upper(),)
    return out


def load_settings(path: str | Path | None = None) -> Settings:
    """Read and validate sources.yml, then the environment; raise ConfigError naming the key and source."""
    path = Path(path or config_file()).resolve()
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{path}: file not found (pass --config or set DOCFORGE_CONFIG)") from None
    except IsADirectoryError:
        raise ConfigError(f"{path}: is a directory, not a sources.yml file") from None
    except (yaml.YAMLError, UnicodeDecodeError) as e:
        raise ConfigError(f"{path}: not valid YAML: {e}") from None
    if data is None:
        log.warning("%s is empty: no sources configured", path)
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping with a 'sources' list, got {type(data).__name__}")
    _refuse_file_only_problems(path, data)
    return _with_adhoc(_build(data, path))


def source_secret(env_name: str) -> SecretStr | None:
    """A source's secret from the environment variable its config names (e.g. `credentials_env`)."""
    value = os.environ.get(env_name)
    return SecretStr(value) if value else None


# `docforge ingest PATH…` records the sources it makes here (pipeline.adhoc writes it), under the
# store's home, so the Dagster run, the sensors and later commands see them without sources.yml edits.
ADHOC_FILE = "adhoc-sources.yml"


def adhoc_file(home: Path) -> Path:
    return Path(home) / ADHOC_FILE


def read_adhoc(home: Path) -> list[SourceConfig]:
    """The ad-hoc sources recorded under `home` ([] when none); ConfigError naming the file if it is damaged."""
    from pydantic import TypeAdapter

    f = adhoc_file(home)
    try:
        data = yaml.safe_load(f.read_text(encoding="utf-8")) or {}
    except FileNotFoundError:
        return []
    except (OSError, yaml.YAMLError, UnicodeDecodeError) as e:
        raise ConfigError(f"{f}: cannot read the ad-hoc sources of `docforge ingest PATH`: {e}") from None
    entries = data.get("sources") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        raise ConfigError(f"{f}: expected a mapping with a 'sources' list")
    try:
        return [TypeAdapter(SourceConfig).validate_python(e) for e in entries]
    except ValidationError as e:
        raise ConfigError(f"{f}: an ad-hoc source is invalid: {e}") from None


def _with_adhoc(settings: Settings) -> Settings:
    """The settings with the ad-hoc sources added; a name sources.yml also uses is the file's."""
    if settings.config_path is not None and settings.config_path == adhoc_file(settings.home).resolve():
        return settings  # the ad-hoc file itself is the config (no sources.yml)
    names = {s.name for s in settings.sources}
    extra = [s for s in read_adhoc(settings.home) if s.name not in names]
    return settings.model_copy(update={"sources": [*settings.sources, *extra]}) if extra else settings


def env_settings() -> Settings:
    """The tree from the environment and defaults alone: for what runs without sources.yml."""
    return _build({}, None)


S = TypeVar("S", bound=_Section)


def env_section(cls: type[S]) -> S:
    """One section from the environment and defaults alone, as the tree would read it; a problem
    elsewhere in the tree does not stop it (the Dagster code location loads with a typo elsewhere)."""
    (name,) = [n for n, c in _sections().items() if c is cls]
    values: dict[str, Any] = {}
    for key in cls.model_fields:
        for env in (f"DOCFORGE_{name}__{key}".upper(), *cls.env_names(key)):
            if value := os.environ.get(env):
                values[key] = value
                break
    try:
        return cls.model_validate(values)
    except ValidationError as e:
        raise ConfigError(_describe(None, {}, e, (name,))) from None


def _build(data: dict, path: Path | None) -> Settings:
    try:
        return Settings(**data, config_path=path)
    except ValidationError as e:
        raise ConfigError(_describe(path, data, e)) from None


def _refuse_file_only_problems(path: Path, data: dict) -> None:
    """Secrets and environment-only sections never come from the file."""
    for (*parents, key), names in _secrets().items():
        node: Any = data
        for p in parents:
            node = node.get(p) if isinstance(node, dict) else None
        keys = {key, *names} if not parents else {key}
        if isinstance(node, dict) and keys & node.keys():
            where = ".".join([*parents, key])
            raise ConfigError(
                f"{path}: {where} is a secret and is never read from this file: remove it and set "
                f"{names[0]} in the environment"
            )
    for key, why in _ENV_ONLY.items():
        if key in data:
            raise ConfigError(f"{path}: {key!r} cannot be set in this file: {why}")


def _env_hint(loc: list) -> str:
    """` (from NAME='value')` when the environment gave the value at `loc` (never a secret's value)."""
    names: tuple[str, ...] = ()
    if len(loc) >= 2 and (cls := _sections().get(str(loc[0]))) and str(loc[1]) in cls.model_fields:
        names = cls.env_names(str(loc[1]))
    names += ("DOCFORGE_" + "__".join(str(p) for p in loc).upper(),)
    for name in names:
        if value := os.environ.get(name):
            secret = tuple(str(p) for p in loc[:2]) in _secrets() or tuple(str(p) for p in loc[:1]) in _secrets()
            return f" (from {name})" if secret else f" (from {name}={value!r})"
    return ""


def _describe(path: Path | None, data: dict, err: ValidationError, parent: tuple[str, ...] = ()) -> str:
    lines = [f"{path or 'environment'}: {err.error_count()} problem(s)"]
    for e in err.errors():
        loc = [*parent, *e["loc"]]
        where = ".".join(str(p) for p in loc)
        if loc[:1] == ["sources"] and len(loc) > 1 and isinstance(loc[1], int):
            listed = data.get("sources")
            srcs = listed if isinstance(listed, list) else []
            src = srcs[loc[1]] if loc[1] < len(srcs) else {}
            name = src.get("name", "?") if isinstance(src, dict) else "?"
            key = [str(p) for p in loc[2:] if p not in ("git", "confluence")]
            where = f"source {name!r} (sources[{loc[1]}])" + (f", key {'.'.join(key)!r}" if key else "")
        else:
            where += _env_hint(loc)
        msg = "unknown key" if e["type"] == "extra_forbidden" else e["msg"]
        lines.append(f"  {where}: {msg}")
    return "\n".join(lines)

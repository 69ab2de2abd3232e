"""Typed configuration: one tree, rooted at `Settings`, from `sources.yml` plus the environment.

    Settings
    ├── sources          the sources to index (sources.yml)
    ├── embedding        model, fallbacks, dimensions, backend, device; `cache_dir` for ONNX exports;
    │                    the embedder service (EMBEDDER_URL, EMBEDDER_TOKEN)
    ├── chunking, schedule
    ├── search           retrieval knobs (DOCFORGE_SEARCH_<KEY>)
    ├── rerank           the optional reranker (RERANK_ENABLED, RERANKER_<KEY>)
    ├── verifier         the answer verifier's parameters and NLI judge (VERIFIER_<KEY>)
    ├── auth             who may call the HTTP API (DOCFORGE_API_TOKENS, DOCFORGE_JWT_<KEY>)
    ├── api              the HTTP API's request limits (DOCFORGE_API_<KEY>)
    ├── webhook          webhook secret and body cap (DOCFORGE_WEBHOOK_SECRET, DOCFORGE_WEBHOOK_<KEY>)
    ├── service          the embedder / reranker sidecars' request limits (DOCFORGE_SERVICE_<KEY>)
    ├── llm              the chat server of `docforge ask` (DOCFORGE_LLM_<KEY>;
    │                    key: DOCFORGE_LLM_API_KEY or OPENAI_API_KEY)
    ├── answers          the answer layer's loop and cache (DOCFORGE_ANSWERS_<KEY>)
    ├── usage            what each ask and search records for `docforge gaps` (DOCFORGE_USAGE__<KEY>)
    ├── metrics          `GET /metrics` and its token (DOCFORGE_METRICS__<KEY>)
    ├── confluence       Confluence credentials (CONFLUENCE_<KEY>)
    ├── orchestration    how Dagster runs (DOCFORGE_EXECUTOR, DOCFORGE_EMBED_<KEY>); environment only
    ├── home             DOCFORGE_HOME
    └── database_url     DATABASE_URL

Precedence, highest first: the environment, then the YAML file, then defaults.
Each key has one environment name: its section's own (the table above, README's
environment table; `env_prefix` / `env_aliases` on the section) where it has them,
else the generic `DOCFORGE_<SECTION>__<KEY>`; the other spelling is refused with
a ConfigError naming the right one. Secrets are `SecretStr`, read from
the environment only: a secret key in sources.yml is refused with a ConfigError,
and no error or repr ever shows a secret's value.

This package is the one place the process environment is read for configuration:

    base.py      the strict model, `EnvSection` and its environment names, the one lookup of them
    sources.py   the source schemas (git, directory, confluence) and a source name's rules
    sections.py  the settings sections (embedding … orchestration)
    settings.py  the root, `Settings`, and what it knows of its sections (env names, secrets)
    loader.py    load_settings / env_settings / env_section, the ad-hoc sources' file, error messages
"""

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pipeline.config.base import EnvSection, Strict
    from pipeline.config.loader import (
        ADHOC_FILE,
        DEFAULT_CONFIG,
        adhoc_file,
        adhoc_home,
        config_file,
        env_section,
        env_settings,
        load_settings,
        read_adhoc,
        source_secret,
    )
    from pipeline.config.sections import (
        DEFAULT_CHUNK_TOKENS,
        DEFAULT_MODEL,
        MAX_DIMENSIONS,
        AnswersConfig,
        ApiConfig,
        AuthConfig,
        ChunkingConfig,
        ConfluenceCredentials,
        EmbeddingConfig,
        Executor,
        LLMConfig,
        MetricsConfig,
        OrchestrationConfig,
        RerankConfig,
        ScheduleConfig,
        SearchConfig,
        ServiceConfig,
        UsageConfig,
        VerifierConfig,
        WebhookConfig,
    )
    from pipeline.config.settings import Settings, secrets
    from pipeline.config.sources import (
        DEFAULT_GLOBS,
        DEFAULT_IGNORED_DIRS,
        MAX_FILE_BYTES,
        SOURCE_TYPES,
        ConfluenceSourceConfig,
        DirectorySourceConfig,
        GitSourceConfig,
        SourceConfig,
        check_source_name,
        safe_source_name,
    )

__all__ = [
    "ADHOC_FILE",
    "DEFAULT_CHUNK_TOKENS",
    "DEFAULT_CONFIG",
    "DEFAULT_GLOBS",
    "DEFAULT_IGNORED_DIRS",
    "DEFAULT_MODEL",
    "MAX_DIMENSIONS",
    "MAX_FILE_BYTES",
    "SOURCE_TYPES",
    "AnswersConfig",
    "ApiConfig",
    "WebhookConfig",
    "AuthConfig",
    "ChunkingConfig",
    "ConfluenceCredentials",
    "ConfluenceSourceConfig",
    "DirectorySourceConfig",
    "EmbeddingConfig",
    "EnvSection",
    "Executor",
    "GitSourceConfig",
    "LLMConfig",
    "MetricsConfig",
    "OrchestrationConfig",
    "RerankConfig",
    "VerifierConfig",
    "ScheduleConfig",
    "SearchConfig",
    "ServiceConfig",
    "Settings",
    "SourceConfig",
    "UsageConfig",
    "Strict",
    "adhoc_file",
    "adhoc_home",
    "check_source_name",
    "config_file",
    "env_section",
    "env_settings",
    "load_settings",
    "read_adhoc",
    "safe_source_name",
    "secrets",
    "source_secret",
]
_HOME = {
    "EnvSection": "base",
    "Strict": "base",
    "ADHOC_FILE": "loader",
    "DEFAULT_CONFIG": "loader",
    "adhoc_file": "loader",
    "adhoc_home": "loader",
    "config_file": "loader",
    "env_section": "loader",
    "env_settings": "loader",
    "load_settings": "loader",
    "read_adhoc": "loader",
    "source_secret": "loader",
    "DEFAULT_CHUNK_TOKENS": "sections",
    "DEFAULT_MODEL": "sections",
    "MAX_DIMENSIONS": "sections",
    "AnswersConfig": "sections",
    "ApiConfig": "sections",
    "AuthConfig": "sections",
    "ChunkingConfig": "sections",
    "ConfluenceCredentials": "sections",
    "EmbeddingConfig": "sections",
    "Executor": "sections",
    "LLMConfig": "sections",
    "MetricsConfig": "sections",
    "OrchestrationConfig": "sections",
    "RerankConfig": "sections",
    "ScheduleConfig": "sections",
    "SearchConfig": "sections",
    "ServiceConfig": "sections",
    "UsageConfig": "sections",
    "VerifierConfig": "sections",
    "WebhookConfig": "sections",
    "Settings": "settings",
    "secrets": "settings",
    "DEFAULT_GLOBS": "sources",
    "DEFAULT_IGNORED_DIRS": "sources",
    "MAX_FILE_BYTES": "sources",
    "SOURCE_TYPES": "sources",
    "ConfluenceSourceConfig": "sources",
    "DirectorySourceConfig": "sources",
    "GitSourceConfig": "sources",
    "SourceConfig": "sources",
    "check_source_name": "sources",
    "safe_source_name": "sources",
}


def __getattr__(name: str):
    """Loaded on first use: a module that reads one section (the verifier's parameters file) does not load
    the settings root, the source schemas and the store client they bring (with pipeline.embed loaded so
    too, `docforge verify` of one line took 0.68–0.79 s against 1.25–1.31 s on the shared 2-core machine)."""
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_HOME[name]}"), name)

"""The root of the tree, `Settings`, and what it knows of its sections: their environment names
and their secrets."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, get_args

from pydantic import AliasChoices, Field, SecretStr, field_validator
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from pipeline.config.base import EnvSection, first_set, generic_name
from pipeline.config.sections import (
    AnswersConfig,
    ApiConfig,
    AuthConfig,
    ChunkingConfig,
    ConfluenceCredentials,
    EmbeddingConfig,
    LLMConfig,
    MetricsConfig,
    OrchestrationConfig,
    RerankConfig,
    ScheduleConfig,
    SearchConfig,
    ServiceConfig,
    UsageConfig,
    WebhookConfig,
)
from pipeline.config.sources import SourceConfig
from pipeline.errors import ConfigError


class _SectionEnv(PydanticBaseSettingsSource):
    """The sections' own environment names (`EnvSection.env_names`), as a nested dict."""

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False  # unused: __call__ reads whole sections

    def __call__(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for section, cls in sections().items():
            for key in cls.model_fields:
                if found := first_set(cls.env_names(key)):
                    out.setdefault(section, {})[key] = found[1]
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
    webhook: WebhookConfig = WebhookConfig()
    service: ServiceConfig = ServiceConfig()
    confluence: ConfluenceCredentials = ConfluenceCredentials()
    orchestration: OrchestrationConfig = OrchestrationConfig()
    llm: LLMConfig = LLMConfig()
    answers: AnswersConfig = AnswersConfig()
    usage: UsageConfig = UsageConfig()
    metrics: MetricsConfig = MetricsConfig()
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


def sections() -> dict[str, type[EnvSection]]:
    """The root's fields that are sections with environment names of their own."""
    out = {}
    for name, f in Settings.model_fields.items():
        if isinstance(f.annotation, type) and issubclass(f.annotation, EnvSection):
            out[name] = f.annotation
    return out


def _is_secret(f: FieldInfo) -> bool:
    return f.annotation is SecretStr or SecretStr in get_args(f.annotation)


def secrets() -> dict[tuple[str, ...], tuple[str, ...]]:
    """{path in the tree: its environment names} for every secret."""
    out: dict[tuple[str, ...], tuple[str, ...]] = {("database_url",): ("DATABASE_URL",)}
    for section, cls in sections().items():
        for key, f in cls.model_fields.items():
            if _is_secret(f):
                out[(section, key)] = cls.env_names(key) + (generic_name(section, key),)
    return out

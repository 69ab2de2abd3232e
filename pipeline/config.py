"""Typed configuration: `sources.yml` plus environment (prefix DOCFORGE_).

Precedence, highest first: environment (`DOCFORGE_EMBEDDING__MODEL=...`), then
the YAML file, then defaults. Secrets never live in the file: `DATABASE_URL`,
`CONFLUENCE_API_TOKEN` and friends are read from the environment only.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any, Literal, Union

import yaml
from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from pipeline.errors import ConfigError

DEFAULT_GLOBS = ["README.md", "CLAUDE.md", "docs/**/*.md"]
DEFAULT_MODEL = "all-MiniLM-L6-v2"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class GitSourceConfig(_Strict):
    """A git repository: a local path (relative to sources.yml) or a URL."""

    name: str
    type: Literal["git"]
    repo: str
    branch: str | None = None  # None: the checked-out working tree
    globs: list[str] = Field(default_factory=lambda: list(DEFAULT_GLOBS))
    tags: list[str] = Field(default_factory=list)


class ConfluenceSourceConfig(_Strict):
    """A Confluence Cloud site: a whole space and/or explicit pages."""

    name: str
    type: Literal["confluence"]
    base_url: str  # https://example.atlassian.net/wiki
    space: str | None = None
    page_ids: list[str] = Field(default_factory=list)
    include_children: bool = False
    labels_include: list[str] = Field(default_factory=list)
    labels_exclude: list[str] = Field(default_factory=list)
    tags: list[str] = Field(default_factory=list)
    page_size: int = Field(default=100, ge=1, le=250)
    max_retry_after_s: float = Field(default=60.0, gt=0)
    retry_budget_s: float = Field(default=300.0, gt=0)
    max_attempts: int = Field(default=8, ge=1)
    timeout_s: float = Field(default=30.0, gt=0)

    @field_validator("page_ids", mode="before")
    @classmethod
    def _ids_as_strings(cls, v: Any) -> Any:
        return [str(i) for i in v] if isinstance(v, list) else v

    @model_validator(mode="after")
    def _has_scope(self) -> "ConfluenceSourceConfig":
        if not self.space and not self.page_ids:
            raise ValueError("set 'space' (a space key) and/or 'page_ids'")
        return self


SourceConfig = Annotated[Union[GitSourceConfig, ConfluenceSourceConfig], Field(discriminator="type")]


class EmbeddingConfig(_Strict):
    """Which model embeds; the first of model + fallbacks that loads wins."""

    model: str = DEFAULT_MODEL
    fallbacks: list[str] = Field(default_factory=lambda: [DEFAULT_MODEL])
    device: Literal["auto", "cpu", "cuda", "mps"] = "auto"
    batch_size: int | None = Field(default=None, ge=1)  # None: chosen for the device
    backend: Literal["torch", "onnx", "onnx-int8"] = "torch"
    # Search queries are one short text each, where torch's per-call overhead dominates
    # (MiniLM on CPU: 10.6 ms torch vs 3.6 ms ONNX fp32, same weights). auto: `backend`,
    # except torch on a CPU becomes onnx when onnxruntime is installed.
    query_backend: Literal["auto", "torch", "onnx", "onnx-int8"] = "auto"


class ChunkingConfig(_Strict):
    """Chunk budget in model tokens; None means the model's whole window."""

    max_tokens: int | None = Field(default=None, ge=16)
    overlap_tokens: int = Field(default=0, ge=0)


class ScheduleConfig(_Strict):
    cron: str = "0 2 * * *"
    timezone: str = "UTC"


class Settings(BaseSettings):
    """Everything docforge needs to run; see README's environment table."""

    model_config = SettingsConfigDict(
        env_prefix="DOCFORGE_", env_nested_delimiter="__", extra="forbid", frozen=True
    )

    sources: list[SourceConfig] = Field(default_factory=list)
    embedding: EmbeddingConfig = EmbeddingConfig()
    chunking: ChunkingConfig = ChunkingConfig()
    schedule: ScheduleConfig = ScheduleConfig()
    home: Path = Path(".docforge")
    database_url: SecretStr | None = Field(default=None, validation_alias="DATABASE_URL")
    config_path: Path | None = None  # where sources.yml was read from

    @classmethod
    def settings_customise_sources(
        cls, settings_cls: type[BaseSettings], init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource, dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # Environment beats the file: deployments override without editing YAML.
        return env_settings, init_settings

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


def load_settings(path: str | Path | None = None) -> Settings:
    """Read and validate sources.yml; raise ConfigError naming the key and source."""
    path = Path(path or os.environ.get("DOCFORGE_CONFIG", "sources.yml")).resolve()
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except FileNotFoundError:
        raise ConfigError(f"{path}: file not found (pass --config or set DOCFORGE_CONFIG)") from None
    except (yaml.YAMLError, UnicodeDecodeError) as e:
        raise ConfigError(f"{path}: not valid YAML: {e}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping with a 'sources' list, got {type(data).__name__}")
    try:
        return Settings(**data, config_path=path)
    except ValidationError as e:
        raise ConfigError(_describe(path, data, e)) from None


def _describe(path: Path, data: dict, err: ValidationError) -> str:
    lines = [f"{path}: {err.error_count()} problem(s)"]
    for e in err.errors():
        loc = list(e["loc"])
        where = ".".join(str(p) for p in loc)
        if loc[:1] == ["sources"] and len(loc) > 1 and isinstance(loc[1], int):
            src = (data.get("sources") or [{}])[loc[1]] if loc[1] < len(data.get("sources") or []) else {}
            name = src.get("name", "?") if isinstance(src, dict) else "?"
            key = [str(p) for p in loc[2:] if p not in ("git", "confluence")]
            where = f"source {name!r} (sources[{loc[1]}])" + (f", key {'.'.join(key)!r}" if key else "")
        msg = "unknown key" if e["type"] == "extra_forbidden" else e["msg"]
        lines.append(f"  {where}: {msg}")
    return "\n".join(lines)

"""The sources to index: one schema per source type (`type: git | directory | confluence`), and the
rules of a source's name."""

from __future__ import annotations

import re
from pathlib import PurePosixPath
from typing import Annotated, Any, Literal, get_args

from pydantic import Field, field_validator, model_validator

from pipeline.access import config_entry
from pipeline.config.base import Strict

DEFAULT_GLOBS = ["README.md", "CLAUDE.md", "docs/**/*.md"]
MAX_FILE_BYTES = 20 * 2**20  # a source file larger than this is not read (a docs page is kilobytes)
# A source's name is its Dagster partition key, which cannot hold "..." nor (most) control characters;
# every control character is refused (they garble a terminal too).
_UNSAFE_IN_NAME = re.compile(r"[\x00-\x1f\x7f]|\.\.\.")


def check_source_name(name: str) -> str:
    """`name` when it can name a source; else a ValueError saying why."""
    if not name.strip():
        raise ValueError("a source needs a non-empty name (it names the source's documents and its Dagster partition)")
    if name != name.strip():
        raise ValueError(f"source name {name!r} starts or ends with whitespace")
    if bad := _UNSAFE_IN_NAME.search(name):
        raise ValueError(f"source name {name!r} contains {bad.group()!r}, which a Dagster partition key cannot hold")
    return name


def safe_source_name(text: str) -> str:
    """`text` made into a valid source name: what a name cannot hold becomes "-" ("root" when nothing is left)."""
    return _UNSAFE_IN_NAME.sub("-", text).strip() or "root"


ENV_NAME = r"^[A-Za-z_][A-Za-z0-9_]*$"  # a field that names an environment variable (its value is a secret)


class _SourceBase(Strict):
    name: str
    tags: list[str] = Field(default_factory=list)
    # Who may read the source's documents (docs/security.md): group names, or `group:<name>` /
    # `user:<email>` written out; a reader needs one of them. Omitted: everyone; `[]`: admins only.
    access: list[str] | None = None

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        return check_source_name(v)

    @field_validator("access", mode="before")
    @classmethod
    def _access(cls, v: Any) -> Any:
        if v is None:
            return None
        if isinstance(v, str):  # `access: hr` is a list of one
            v = [v]
        if not isinstance(v, list):
            raise ValueError("access is a list of group names (or group:<name> / user:<email>), e.g. [hr, legal]")
        return sorted({config_entry(e) for e in v})


class GitSourceConfig(_SourceBase):
    """A git repository: a local path (relative to sources.yml) or a URL."""

    type: Literal["git"]
    repo: str
    branch: str | None = None  # None: the checked-out working tree (a URL: the remote's default branch)
    globs: list[str] = Field(default_factory=lambda: list(DEFAULT_GLOBS))
    max_file_bytes: int = Field(default=MAX_FILE_BYTES, ge=1)  # larger files are listed as failures, never read
    # A URL's credentials: the NAME of an environment variable holding "token" or "user:token"
    # (pipeline.sources.remote); the value itself never enters the config, a URL, a log or the store.
    credentials_env: str | None = Field(default=None, pattern=ENV_NAME)
    # Webhooks (docforge.servers.hooks): the NAME of an environment variable holding this source's own
    # webhook secret; unset: DOCFORGE_WEBHOOK_SECRET.
    webhook_secret_env: str | None = Field(default=None, pattern=ENV_NAME)

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
    extensions: list[str] | None = None  # e.g. [".md", ".py", ""]; None: every format docforge reads; "": none
    include: list[str] = Field(default_factory=list)  # name globs read as text when no format claims them
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
        """`md` and `.MD` are `.md`; `""` (or `.`) stands for files without an extension."""
        return None if v is None else ["." + e.lower().strip().lstrip(".") if e.strip(". ") else "" for e in v]


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
    webhook_secret_env: str | None = Field(default=None, pattern=ENV_NAME)  # as GitSourceConfig's
    # "sync": every listing reads who may read each page (its space's permissions, its own and its
    # ancestors' read restrictions) into its access clauses (pipeline.sources.confluence_access);
    # "off": Confluence's permissions are not read, the source's own `access:` alone applies.
    permissions: Literal["off", "sync"] = "off"
    # Groups (or access classes, e.g. all-licensed-users) every docforge caller is in (a site's default
    # group, e.g. confluence-users): a space permission or restriction naming one admits everyone: no clause.
    everyone_groups: list[str] = Field(default_factory=list)

    @field_validator("permissions", mode="before")
    @classmethod
    def _permissions_mode(cls, v: Any) -> Any:
        if v is False or v is None:  # YAML 1.1 reads a bare `off` (or `no`) as false
            return "off"
        if v not in ("off", "sync"):
            raise ValueError(
                f"permissions must be 'sync' (read each page's space permissions and read restrictions, "
                f"ancestors' included, at every run) or 'off' (the default), not {v!r}"
            )
        return v

    @field_validator("page_ids", mode="before")
    @classmethod
    def _ids_as_strings(cls, v: Any) -> Any:
        return [str(i) for i in v] if isinstance(v, list) else v

    @model_validator(mode="after")
    def _has_scope(self) -> ConfluenceSourceConfig:
        if not self.space and not self.page_ids:
            raise ValueError("set 'space' (a space key) and/or 'page_ids'")
        if self.everyone_groups and self.permissions != "sync":
            raise ValueError("everyone_groups applies only with `permissions: sync`: set that, or remove it")
        return self


SourceConfig = Annotated[GitSourceConfig | DirectorySourceConfig | ConfluenceSourceConfig, Field(discriminator="type")]
# Each type's tag (`type: git`): pydantic puts it in a validation error's location, between the list
# index and the key.
SOURCE_TYPES = frozenset(
    get_args(c.model_fields["type"].annotation)[0]
    for c in (GitSourceConfig, DirectorySourceConfig, ConfluenceSourceConfig)
)

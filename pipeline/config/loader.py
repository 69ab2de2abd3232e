"""Loading the tree: sources.yml (and the ad-hoc sources of `docforge ingest PATH`) plus the
environment, into `Settings`; a section alone from the environment; problems as a ConfigError that
names the key and where its value came from (never a secret's value)."""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

import yaml
from pydantic import SecretStr, TypeAdapter, ValidationError

from pipeline.config.base import EnvSection, first_set, generic_name
from pipeline.config.settings import Settings, secrets, sections
from pipeline.config.sources import SOURCE_TYPES, SourceConfig
from pipeline.errors import ConfigError
from pipeline.redact import register

log = logging.getLogger(__name__)
DEFAULT_CONFIG = "sources.yml"
# A file read while serving (a sensor's tick) is read twice this far apart, and taken only when both
# reads agree (issue 48): a writer's pieces land within it (an editor's save takes milliseconds), so a
# file caught half written (valid YAML listing fewer sources: the sensor would purge the rest) differs.
SETTLE_S = 0.5

# Keys the file may not hold, and why.
_ORCHESTRATION_NAMES = "DOCFORGE_EXECUTOR, DOCFORGE_EMBED_POOL, DOCFORGE_EMBED_GPUS or DOCFORGE_EMBED_NODE_SELECTOR"
_ENV_ONLY = {
    "orchestration": f"Dagster reads it as it loads its definitions: set {_ORCHESTRATION_NAMES} in the environment",
    "confluence": "credentials come from the environment: set CONFLUENCE_EMAIL and CONFLUENCE_API_TOKEN "
    "(or CONFLUENCE_BEARER_TOKEN)",
    "config_path": "it is where this file was read from",
}


def config_file() -> Path:
    """Where sources.yml is: $DOCFORGE_CONFIG, else ./sources.yml."""
    return Path(os.environ.get("DOCFORGE_CONFIG") or DEFAULT_CONFIG)


def load_settings(path: str | Path | None = None, settled: bool = False) -> Settings:
    """Read and validate sources.yml, then the environment; raise ConfigError naming the key and source.
    `settled` (a file read again while serving): read twice SETTLE_S apart, a ConfigError unless alike.

    No path given, no $DOCFORGE_CONFIG and no ./sources.yml: the ad-hoc file of `docforge ingest PATH…`
    is the configuration (`adhoc_home()` says where it is), so the ad-hoc flow works from any directory.
    """
    if path is None and not os.environ.get("DOCFORGE_CONFIG") and not Path(DEFAULT_CONFIG).exists():
        f = adhoc_file(adhoc_home())
        if not f.exists():
            raise ConfigError(
                f"no {DEFAULT_CONFIG} in {Path.cwd()} and nothing indexed yet: run `docforge ingest PATH…` "
                "to index a folder, or pass --config / set DOCFORGE_CONFIG"
            )
        path = f
    path = Path(path or config_file()).resolve()
    try:
        data = _yaml(_read(path, settled).decode("utf-8"))
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
    if path.name == ADHOC_FILE and "home" not in data:
        data = {**data, "home": path.parent}  # the ad-hoc file lives in its store's home (DOCFORGE_HOME wins)
    return _with_adhoc(_build(data, path))


def _read(path: Path, settled: bool) -> bytes:
    """The file's bytes; `settled`: the same bytes twice, SETTLE_S apart, else ConfigError."""
    first = path.read_bytes()
    if not settled:
        return first
    time.sleep(SETTLE_S)
    if path.read_bytes() != first:
        raise ConfigError(
            f"{path}: changed while it was read (a write in progress?): it is read again next time; "
            "replace it by rename (write a new file, then `mv` it over) so that every read sees it whole"
        )
    return first


def source_secret(env_name: str) -> SecretStr | None:
    """A source's secret from the environment variable its config names (e.g. `credentials_env`)."""
    value = os.environ.get(env_name)
    return SecretStr(value) if value else None


# `docforge ingest PATH…` records the sources it makes here (pipeline.adhoc writes it), under the
# store's home, so the Dagster run, the sensors and later commands see them without sources.yml edits.
ADHOC_FILE = "adhoc-sources.yml"


def adhoc_file(home: Path) -> Path:
    return Path(home) / ADHOC_FILE


def adhoc_home() -> Path:
    """The home of the ad-hoc sources when there is no sources.yml: $DOCFORGE_HOME; else the nearest
    `.docforge` holding ad-hoc sources in this directory or one above it; else the user's data directory
    ($XDG_DATA_HOME/docforge, ~/.local/share/docforge), so `docforge search` finds from any directory
    what `docforge ingest PATH…` indexed from another."""
    if env := os.environ.get("DOCFORGE_HOME"):
        return Path(env)
    here = Path.cwd()
    for d in (here, *here.parents):
        if (d / ".docforge" / ADHOC_FILE).is_file():
            return d / ".docforge"
    return Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share") / "docforge"


MAX_YAML_DEPTH = 64  # sources.yml needs about 6 levels; a parser recursing 2,000 deep needs none


def _yaml(text: str) -> Any:
    """`yaml.safe_load`, after a pass over the parser's events (a loop, no recursion) that refuses
    nesting deeper than MAX_YAML_DEPTH with the line it passes the limit on."""
    depth = 0
    for event in yaml.parse(text, Loader=yaml.SafeLoader):
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_YAML_DEPTH:
                line = event.start_mark.line + 1 if event.start_mark else "?"
                raise yaml.YAMLError(f"nested more than {MAX_YAML_DEPTH} levels deep (line {line})")
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1
    return yaml.safe_load(text)


def read_adhoc(home: Path) -> list[SourceConfig]:
    """The ad-hoc sources recorded under `home` ([] when none); ConfigError naming the file if it is damaged."""
    f = adhoc_file(home)
    try:
        data = _yaml(f.read_text(encoding="utf-8")) or {}
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


S = TypeVar("S", bound=EnvSection)


def env_section(cls: type[S]) -> S:
    """One section from the environment and defaults alone, as the tree would read it; a problem
    elsewhere in the tree does not stop it (the Dagster code location loads with a typo elsewhere)."""
    (name,) = [n for n, c in sections().items() if c is cls]
    _refuse_other_spellings(name)
    values: dict[str, Any] = {}
    for key in cls.model_fields:
        if found := first_set(cls.env_names(key) or (generic_name(name, key),)):
            values[key] = found[1]
    try:
        section = cls.model_validate(values)
    except ValidationError as e:
        raise ConfigError(_describe(None, {}, e, (name,))) from None
    for key in cls.model_fields:  # its secrets masked from then on, as a whole tree's are (_build)
        if isinstance(v := getattr(section, key), SecretStr):
            register(v.get_secret_value(), *v.get_secret_value().split(","))
    return section


def _refuse_other_spellings(only: str | None = None) -> None:
    """Each key has one environment name: its section's own (`DOCFORGE_SEARCH_FETCH_K`) where the section
    has them, else the generic `DOCFORGE_<SECTION>__<KEY>`. The generic name of a key with its own is
    refused, naming the right one, rather than read: one spelling per setting in a deployment. So is
    `DOCFORGE_<SECTION>_<KEY>` of a key without its own, which would otherwise be ignored in silence."""
    wrong = []
    for name, cls in sections().items():
        if only not in (None, name):
            continue
        for key in cls.model_fields:
            right = own[0] if (own := cls.env_names(key)) else generic_name(name, key)
            other = generic_name(name, key) if own else f"DOCFORGE_{name}_{key}".upper()
            if first_set((other,)):
                wrong.append(f"  {other} is not read: set {right} instead ({name}.{key})")
    if wrong:
        raise ConfigError("\n".join([f"environment: {len(wrong)} problem(s)", *wrong]))


def _build(data: dict, path: Path | None) -> Settings:
    _refuse_other_spellings()
    try:
        settings = Settings(**data, config_path=path)
    except ValidationError as e:
        raise ConfigError(_describe(path, data, e)) from None
    register(*secret_values(settings))
    return settings


def secret_values(settings: Settings) -> list[str]:
    """Every secret `settings` holds, as it is and, for a list (DOCFORGE_API_TOKENS), each entry; the
    store URL's password; each source's webhook secret: what pipeline.redact masks from then on."""
    out: list[str] = []
    for *parents, key in secrets():
        node: Any = settings
        for p in parents:
            node = getattr(node, p, None)
        value = getattr(node, key, None)
        if isinstance(value, SecretStr) and (text := value.get_secret_value()):
            out += [text, *(t.strip() for t in text.split(",") if "," in text)]
            if "://" in text:
                out.append(urlsplit(text).password or "")
    for s in settings.sources:
        for field in ("webhook_secret_env", "credentials_env"):
            if name := getattr(s, field, None):
                value = os.environ.get(name, "")
                out += [value, value.partition(":")[2]]  # credentials_env may be "user:token"
    return [v for v in out if v]


def _refuse_file_only_problems(path: Path, data: dict) -> None:
    """Secrets and environment-only sections never come from the file."""
    for (*parents, key), names in secrets().items():
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
    names: tuple[str, ...] = (generic_name(*loc),)
    if len(loc) >= 2 and (cls := sections().get(str(loc[0]))) and str(loc[1]) in cls.model_fields:
        names = cls.env_names(str(loc[1])) or names
    if not (found := first_set(names)):
        return ""
    name, value = found
    secret = tuple(str(p) for p in loc[:2]) in secrets() or tuple(str(p) for p in loc[:1]) in secrets()
    return f" (from {name})" if secret else f" (from {name}={value!r})"


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
            key = [str(p) for p in loc[2:]]
            if key[:1] and key[0] in SOURCE_TYPES:  # pydantic names the source's type first: not a key
                key = key[1:]
            where = f"source {name!r} (sources[{loc[1]}])" + (f", key {'.'.join(key)!r}" if key else "")
        else:
            where += _env_hint(loc)
        msg = "unknown key" if e["type"] == "extra_forbidden" else e["msg"]
        lines.append(f"  {where}: {msg}")
    return "\n".join(lines)

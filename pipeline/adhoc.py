"""Ad-hoc sources: `docforge ingest PATH…` indexes a directory or file without editing sources.yml.

Each PATH becomes a `type: directory` source (a file: a source of that one
file) named after it, recorded in `$DOCFORGE_HOME/adhoc-sources.yml`
(pipeline.config.ADHOC_FILE). `load_settings` adds the recorded sources to
those of sources.yml, so the Dagster run, the sensors (which would otherwise
purge their rows) and `search --source` all know them. The same path always
gets the same name: ingesting it again updates that source. A name sources.yml
already uses, for another path, gets a short suffix from the path's hash.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

import yaml

from pipeline.config import DirectorySourceConfig, Settings, adhoc_file, read_adhoc, safe_source_name
from pipeline.errors import ConfigError


def register(settings: Settings, paths: Sequence[str | Path]) -> list[str]:
    """Create or update one ad-hoc source per path; their names, in order."""
    recorded = read_adhoc(settings.home)
    by_path = {Path(s.path).as_posix(): s.name for s in recorded if isinstance(s, DirectorySourceConfig)}
    taken = {s.name for s in settings.sources} | {s.name for s in recorded}
    names, new = [], []
    for p in paths:
        real = Path(os.path.realpath(os.path.expanduser(str(p))))
        if not real.exists():
            raise ConfigError(f"{p}: no such file or directory")
        if not (real.is_dir() or real.is_file()):
            raise ConfigError(f"{p}: neither a directory nor a regular file")
        configured = _configured(settings, real)
        if configured:
            names.append(configured)
            continue
        name = by_path.get(real.as_posix())
        if name is None:
            name = _name_for(real, taken)
            taken.add(name)
            by_path[real.as_posix()] = name
            new.append(DirectorySourceConfig(type="directory", name=name, path=real.as_posix(), tags=["adhoc"]))
        names.append(name)
    if new:
        _write(adhoc_file(settings.home), [*recorded, *new])
    return names


def _configured(settings: Settings, real: Path) -> str | None:
    """The name of a sources.yml directory source for this very path, if there is one."""
    for s in settings.sources:
        if (
            isinstance(s, DirectorySourceConfig)
            and "adhoc" not in s.tags
            and Path(os.path.realpath(settings.resolve_path(s.path))) == real
        ):
            return s.name
    return None


def _name_for(real: Path, taken: set[str]) -> str:
    base = safe_source_name(real.name)
    if base not in taken:
        return base
    return f"{base}-{hashlib.sha256(real.as_posix().encode()).hexdigest()[:8]}"


def _write(path: Path, sources: list) -> None:
    """The whole file, replaced atomically: a reader sees the old list or the new one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {
        "sources": [
            s.model_dump(mode="json", exclude_defaults=True) | {"type": s.type, "name": s.name} for s in sources
        ]
    }
    text = (
        "# Sources made by `docforge ingest PATH…` (pipeline/adhoc.py); delete an entry to drop it\n"
        + yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
    )
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".adhoc-", suffix=".yml")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise

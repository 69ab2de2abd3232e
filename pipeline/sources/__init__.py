"""Sources list documents cheaply, then fetch only what changed.

Every source implements `Source`: `list_refs()` returns a `DocRef` per document
in scope (no content), `fetch(refs)` yields a `Document` or a `Failure` for each.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from typing import Protocol

from pipeline.config import ConfluenceSourceConfig, GitSourceConfig, Settings, SourceConfig
from pipeline.records import DocRef, Document, Failure


class Source(Protocol):
    name: str
    type: str
    tags: list[str]

    def list_refs(self) -> list[DocRef]: ...

    def fetch(self, refs: Sequence[DocRef]) -> Iterator[Document | Failure]: ...


def open_source(settings: Settings, cfg: SourceConfig) -> Source:
    """The client for one configured source."""
    if isinstance(cfg, GitSourceConfig):
        from pipeline.sources.git import GitSource

        return GitSource(cfg, settings.resolve_path(cfg.repo) if "://" not in cfg.repo else cfg.repo)
    if isinstance(cfg, ConfluenceSourceConfig):
        from pipeline.sources.confluence import ConfluenceSource

        return ConfluenceSource(cfg)
    raise TypeError(f"unknown source config {type(cfg).__name__}")


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def decode_text(key: str, data: bytes) -> str | Failure:
    """UTF-8 text, or a Failure saying why the bytes are not a text document."""
    if b"\x00" in data[:8192]:
        return Failure(key, "decode", "binary file (NUL byte found): skipped")
    try:
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as e:
        return Failure(key, "decode", f"not valid UTF-8 ({e.reason} at byte {e.start}): skipped")

"""The `Source` protocol and `open_source`: list documents cheaply, then fetch only what changed.

Every source implements `Source`: `list_refs()` returns a `DocRef` per document
in scope (no content), `fetch(refs)` yields a `Document` or a `Failure` for each:
a fault of one document never escapes `fetch`, it is that document's Failure.
Sources that read files read them through `pipeline.sources.files.read_file`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Protocol

from pipeline.config import ConfluenceSourceConfig, DirectorySourceConfig, GitSourceConfig, Settings, SourceConfig
from pipeline.records import DocRef, Document, Failure, Skipped

__all__ = ["Source", "failed_by", "open_source", "skipped_by"]


class Source(Protocol):
    name: str
    type: str
    tags: list[str]

    def list_refs(self) -> list[DocRef]: ...

    def fetch(self, refs: Sequence[DocRef]) -> Iterator[Document | Failure]: ...


def skipped_by(source: Source) -> list[Skipped]:
    """What the source's last listing deliberately left out (sources that skip nothing have no `skipped`)."""
    return list(getattr(source, "skipped", ()))


def failed_by(source: Source) -> list[Failure]:
    """What the source's last listing listed but could not fully read (a Confluence page's permissions)."""
    return list(getattr(source, "failures", ()))


def open_source(settings: Settings, cfg: SourceConfig) -> Source:
    """The client for one configured source."""
    if isinstance(cfg, GitSourceConfig):
        from pipeline.sources.git import GitSource
        from pipeline.sources.remote import is_remote, prefetcher, sync_clone

        if is_remote(cfg.repo):  # a partial clone under $DOCFORGE_HOME, fetched now
            clone = sync_clone(settings.home, cfg)
            return GitSource(
                cfg.model_copy(update={"branch": clone.branch}),
                clone.path,
                origin=cfg.repo,
                prefetch=prefetcher(cfg, clone.path),
            )
        return GitSource(cfg, settings.resolve_path(cfg.repo))
    if isinstance(cfg, DirectorySourceConfig):
        from pipeline.sources.directory import DirectorySource

        return DirectorySource(cfg, settings.resolve_path(cfg.path))
    if isinstance(cfg, ConfluenceSourceConfig):
        from pipeline.sources.confluence import ConfluenceSource

        return ConfluenceSource(cfg, settings.confluence)
    raise TypeError(f"unknown source config {type(cfg).__name__}")

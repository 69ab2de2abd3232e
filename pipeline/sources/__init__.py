"""Sources list documents cheaply, then fetch only what changed.

Every source implements `Source`: `list_refs()` returns a `DocRef` per document
in scope (no content), `fetch(refs)` yields a `Document` or a `Failure` for each:
a fault of one document never escapes `fetch`, it is that document's Failure.
Sources that read files read them through `pipeline.sources.files.read_file`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from typing import Protocol

from pipeline.config import ConfluenceSourceConfig, DirectorySourceConfig, GitSourceConfig, Settings, SourceConfig
from pipeline.errors import ParseError
from pipeline.parse.formats import BINARY_DOCUMENTS
from pipeline.records import DocRef, Document, Failure, Skipped


class Source(Protocol):
    name: str
    type: str
    tags: list[str]

    def list_refs(self) -> list[DocRef]: ...

    def fetch(self, refs: Sequence[DocRef]) -> Iterator[Document | Failure]: ...


def skipped_by(source: Source) -> list[Skipped]:
    """What the source's last listing deliberately left out (sources that skip nothing have no `skipped`)."""
    return list(getattr(source, "skipped", ()))


def open_source(settings: Settings, cfg: SourceConfig) -> Source:
    """The client for one configured source."""
    if isinstance(cfg, GitSourceConfig):
        from pipeline.sources.git import GitSource
        from pipeline.sources.remote import is_remote, sync_clone

        if is_remote(cfg.repo):  # a partial clone under $DOCFORGE_HOME, fetched now
            clone = sync_clone(settings.home, cfg)
            return GitSource(cfg.model_copy(update={"branch": clone.branch}), clone.path, web=clone.web_url)
        return GitSource(cfg, settings.resolve_path(cfg.repo))
    if isinstance(cfg, DirectorySourceConfig):
        from pipeline.sources.directory import DirectorySource

        return DirectorySource(cfg, settings.resolve_path(cfg.path))
    if isinstance(cfg, ConfluenceSourceConfig):
        from pipeline.sources.confluence import ConfluenceSource

        return ConfluenceSource(cfg, settings.confluence)
    raise TypeError(f"unknown source config {type(cfg).__name__}")


def sha256_text(text: str) -> str:
    # surrogatepass: a text with a lone surrogate still gets a hash, so it reaches the check that reports it
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def decode_text(key: str, data: bytes) -> str | Failure:
    """UTF-8 text, or a Failure saying why the bytes are not a text document."""
    if b"\x00" in data:  # anywhere: Postgres text cannot hold NUL
        return Failure(key, "decode", "binary file (NUL byte found): skipped")
    try:
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as e:
        return Failure(key, "decode", f"not valid UTF-8 ({e.reason} at byte {e.start}): skipped")


def file_document(ref: DocRef, data: bytes, fmt: str, title: str, url: str) -> Document | Failure:
    """A file's Document: text decoded as UTF-8, a PDF or Word file extracted to its sections
    (pipeline.parse.binary); an undecodable, encrypted or corrupt file is a Failure for it alone."""
    if fmt in BINARY_DOCUMENTS:
        from pipeline.parse.binary import extract

        try:
            content = extract(fmt, data)
        except ParseError as e:
            return Failure(ref.key, "parse", str(e))
    else:
        text = decode_text(ref.key, data)
        if isinstance(text, Failure):
            return text
        content = text
    return Document(ref, fmt, title, url, content, sha256_text(content))

"""The frozen records that flow one way: DocRef → Document → Section → Chunk."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class DocRef:
    """A document as a listing sees it: cheap to get, enough to decide skip or fetch.

    `version` is whatever the source offers that changes with content (git blob id,
    Confluence version number); `mtime_ns`/`size` come from a file system.
    """

    key: str  # stable across runs: "<source name>:<path or page id>"
    path: str  # path in repo, or page id
    version: str | None = None
    mtime_ns: int | None = None
    size: int | None = None
    meta: dict[str, Any] = field(default_factory=dict)  # title, url, labels, space ...
    # Who may read it, as the source found it (pipeline.access): clauses of principals, "user:<id>" /
    # "group:<name>", each to be met; None: the source knows of no restriction.
    access: tuple[tuple[str, ...], ...] | None = None


@dataclass(frozen=True)
class Document:
    """A fetched document: its text plus everything we know about it."""

    ref: DocRef
    kind: str  # a format of pipeline.parse.formats: "markdown", "confluence", "python", "pdf" ...
    title: str
    url: str
    content: str
    content_hash: str  # sha256 hex of the UTF-8 content


# The kinds of Block a parser emits; the answer layer reads these instead of re-parsing text.
BLOCK_KINDS = ("paragraph", "list_item", "table_row", "code", "term", "definition", "note", "quote")


@dataclass(frozen=True)
class Block:
    """One typed piece of a section's text, as its parser saw it.

    `start`/`end` are character offsets into the text that holds the block: the
    section's text, and after chunking the chunk's. `code` holds the offsets of
    inline code spans (`<code>`, backticks; the span without its delimiters) in
    that same text, so an identifier is known as code even where the rendered
    text shows no backticks.
    """

    kind: str  # one of BLOCK_KINDS
    start: int
    end: int
    header: tuple[str, ...] = ()  # a table row: its table's header cells, in order
    cells: tuple[str, ...] = ()  # a table row: its own cells
    code: tuple[tuple[int, int], ...] = ()  # inline code spans, (start, end) in the same text
    lang: str | None = None  # a code block's language, where the source names it


@dataclass(frozen=True)
class Section:
    """A semantic unit of a document: text under one heading path."""

    heading_path: tuple[str, ...]
    text: str
    page: int | None = None  # 1-based page of a paged document (PDF), else None
    blocks: tuple[Block, ...] = ()  # typed pieces of `text`, in order; () where the parser emits none


@dataclass(frozen=True)
class Chunk:
    """A piece of one section, sized to fit the embedding model's window."""

    ordinal: int
    heading_path: tuple[str, ...]
    text: str  # the section text this chunk covers (shown in citations)
    embed_text: str  # what is embedded: title and heading path prepended
    token_count: int  # tokens of embed_text, special tokens included
    page: int | None = None  # the page its sections are on (a chunk never spans two pages)
    blocks: tuple[Block, ...] = ()  # its sections' blocks, offsets re-based onto `text`, clipped at its edges


@dataclass(frozen=True)
class Failure:
    """One document that could not be processed; the rest of the run goes on."""

    key: str
    stage: str  # "fetch" | "decode" | "parse" | "embed"
    error: str


@dataclass(frozen=True)
class Skipped:
    """A path a listing deliberately did not read (an ignored directory, a binary, a link out of the root)."""

    path: str
    reason: str


@dataclass(frozen=True)
class Part:
    """A listing of part of a source (a Confluence page a webhook named): its documents, and the keys
    it speaks for; a key it owns but does not list is gone, every other key is left alone."""

    refs: list[DocRef]
    prefixes: tuple[str, ...]  # a key is owned when it equals one or starts with one + "/"

    def owns(self, key: str) -> bool:
        return any(key == p or key.startswith(p + "/") for p in self.prefixes)

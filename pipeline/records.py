"""The frozen records that flow one way: DocRef → Document → Section → Chunk."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
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

    def shifted(self, by: int) -> Block:
        """The block with its offsets (code spans included) moved by `by` characters."""
        code = tuple((s + by, e + by) for s, e in self.code)
        return replace(self, start=self.start + by, end=self.end + by, code=code)

    def clipped(self, start: int, end: int) -> Block | None:
        """The part of the block inside [start, end), offsets unchanged; None when nothing of it is."""
        s, e = max(self.start, start), min(self.end, end)
        if s >= e:
            return None
        code = tuple((max(a, s), min(b, e)) for a, b in self.code if min(b, e) > max(a, s))
        return replace(self, start=s, end=e, code=code)

    def packed(self) -> list:
        """The compact JSON form the store keeps: [kind, start, end, header, cells, code, lang],
        trailing empty fields left off."""
        out: list = [self.kind, self.start, self.end, list(self.header), list(self.cells)]
        out += [[list(c) for c in self.code], self.lang]
        while len(out) > 3 and out[-1] in (None, []):
            out.pop()
        return out

    @classmethod
    def unpacked(cls, row: list) -> Block:
        """A block from its `packed` form."""
        pad: list = [(), (), (), None]
        kind, start, end, header, cells, code, lang = list(row) + pad[len(row) - 3 :]
        return cls(kind, start, end, tuple(header), tuple(cells), tuple((a, b) for a, b in code), lang)


def pack_blocks(blocks: tuple[Block, ...] | list[Block]) -> list[list]:
    return [b.packed() for b in blocks]


def unpack_blocks(rows: list | None) -> tuple[Block, ...]:
    """Blocks from the store's JSON (None: a chunk stored before blocks were kept)."""
    return tuple(Block.unpacked(r) for r in rows or ())


@dataclass(frozen=True)
class Section:
    """A semantic unit of a document: text under one heading path."""

    heading_path: tuple[str, ...]
    text: str
    page: int | None = None  # 1-based page of a paged document (PDF), else None
    blocks: tuple[Block, ...] = ()  # typed pieces of `text`, in order; () where the parser emits none
    # The nearest anchor at or above the section's start (an HTML `id` / `<a name>`, an AsciiDoc `[[id]]`,
    # a Confluence heading's id): a link to the document plus "#" + anchor lands on it. None: none known.
    anchor: str | None = None
    # An entry of a reference (a parameter, an option: pipeline.parse.events): chunked on its own, never
    # packed with its neighbours, so a hit on it cites it and no other.
    alone: bool = False


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
    anchor: str | None = None  # the nearest anchor above its text (its first section's `anchor`)


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

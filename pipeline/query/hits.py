"""The search result type, a leaf every query module and surface shares."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from urllib.parse import quote

from pipeline.records import Block, unpack_blocks


@dataclass(frozen=True)
class Hit:
    """One search result with everything needed to cite it."""

    chunk_id: str
    doc_key: str  # the document's key, "<source>:<path or page id>"
    source: str  # the source's name in sources.yml
    type: str
    url: str
    title: str
    section: str
    chunk_index: int  # the chunk's position in its document (a joined hit: its best chunk's)
    text: str
    score: float
    page: int | None = None  # page number, for sources that have pages
    rerank_score: float | None = None
    dense_rank: int | None = None  # 1-based rank in the dense candidates, None if absent
    keyword_rank: int | None = None
    # A hit that joins neighbouring chunks of its document (pipeline.query.fusion.passages): the first
    # and last chunk_index its text spans, in document order; None for one chunk. chunk_id, section,
    # page and score are its best chunk's.
    span: tuple[int, int] | None = None
    # The ids of every chunk its text joins, in document order (a joined hit's several; one chunk's, its
    # own): what an answer's provenance re-reads to prove its evidence unchanged (pipeline.answers).
    chunk_ids: tuple[str, ...] = ()
    # Its text's typed blocks (pipeline.records.Block), offsets into `text` (a joined hit's: re-based
    # onto the joined text); () for a chunk stored before blocks were kept.
    blocks: tuple[Block, ...] = ()
    # The nearest anchor above its text (an HTML id, `<a name>`); `url` already links to it (`deep_url`).
    anchor: str | None = None

    def as_dict(self) -> dict:
        return asdict(self)

    def label(self) -> str:
        """How a citation names the place: "guide.pdf, page 3, Setup › Install"."""
        return cite_label(self.title, self.page, self.section)


def deep_url(url: str, anchor: str | None) -> str:
    """The document's URL to the place `anchor` names (`…/page.html#maxconn`): a file URI, a git web URL
    or a Confluence page URL alike; the URL as it is where there is no anchor, no URL, or a fragment already."""
    if not anchor or not url or "#" in url:
        return url
    return f"{url}#{quote(anchor, safe=_FRAGMENT_SAFE)}"


_FRAGMENT_SAFE = "-._~!$&'()*+,;=:@/?"  # what RFC 3986 lets a fragment hold unencoded


JOIN = "\n\n"  # between the texts of neighbouring chunks a hit joins


def joined(texts: list[str], packed: list[list | None]) -> tuple[str, tuple[Block, ...]]:
    """The text of neighbouring chunks joined in order, and their blocks (as the store keeps them,
    `packed`) re-based onto it."""
    blocks: list[Block] = []
    at = 0
    for text, rows in zip(texts, packed, strict=True):
        blocks += [b.shifted(at) for b in unpack_blocks(rows)]
        at += len(text) + len(JOIN)
    return JOIN.join(texts), tuple(blocks)


def where(title: str, section: str) -> str:
    """`title › A › B`: the one "title › section" label (CLI, answer prompts, servers); the section's
    ' > ' joins shown as ' › ', a top heading that repeats the title left out."""
    return " › ".join([title, *_path(title, section)] if title else _path(title, section))


def cite_label(title: str, page: int | None, section: str) -> str:
    """`title, page N, A › B` with what is known (the section as `where` shows it)."""
    parts = [title] if title else []
    if page is not None:
        parts.append(f"page {page}")
    if path := _path(title, section):
        parts.append(" › ".join(path))
    return ", ".join(parts)


def _path(title: str, section: str) -> list[str]:
    path = [p for p in section.split(" > ") if p]
    return path[1:] if path and path[0] == title else path

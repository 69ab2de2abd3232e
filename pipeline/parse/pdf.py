"""PDF → sections that know their page, with pypdf (BSD-licensed, pure Python).

Each page's text is its own section (a chunk never spans two pages, so every
chunk cites the one page it came from). The outline (bookmarks), where the file
has one, gives the heading path: an entry applies from where its title appears
on its page (the page's start if it does not) until the next entry. An
encrypted file that opens with the empty password (permissions only) is read;
any other encrypted, truncated or corrupt file is a ParseError, for that file alone.
"""

from __future__ import annotations

import io
import logging
import re

from pipeline.errors import ParseError
from pipeline.parse.blocks import text_blocks
from pipeline.parse.parsed import Parsed
from pipeline.parse.text import scrub
from pipeline.records import Section

MAX_OUTLINE_ITEMS = 10_000  # bookmarks read at most (a hostile file may hold millions)


def parse_pdf(data: bytes) -> Parsed:
    """Sections with 1-based page numbers; raises ParseError on a file that cannot be read."""
    from pypdf import PdfReader
    from pypdf.errors import FileNotDecryptedError

    logging.getLogger("pypdf").setLevel(logging.ERROR)  # its warnings about sloppy files are noise here
    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            raise ParseError("the PDF is encrypted (it needs a password): skipped")
        pages = [scrub(page.extract_text() or "") for page in reader.pages]
        meta = reader.metadata
        title = scrub(str(meta.get("/Title") or "")).strip() if meta is not None else ""
        outline = _outline(reader)
    except ParseError:
        raise
    except FileNotDecryptedError:
        raise ParseError("the PDF is encrypted (it needs a password): skipped") from None
    except Exception as e:  # pypdf raises many kinds (PdfReadError, KeyError ...) on broken files: this file's alone
        raise ParseError(f"not a readable PDF ({type(e).__name__}: {str(e)[:200]})") from None
    return Parsed(title, _sections(pages, outline))


def _outline(reader) -> list[tuple[int, int, str]]:
    """(page index, level, title) of every bookmark, in reading order; [] when there are none or they are broken."""
    try:
        top = reader.outline
    except Exception:  # a broken outline costs the headings, not the text
        return []
    out: list[tuple[int, int, str]] = []
    stack: list[tuple[list, int]] = [(list(top), 1)]  # iterative: outlines nest as deep as a file likes
    while stack and len(out) < MAX_OUTLINE_ITEMS:
        items, level = stack.pop()
        while items:
            item = items.pop(0)
            if isinstance(item, list):  # the children of the entry before it
                stack.append((items, level))
                items, level = item, level + 1
                continue
            try:
                page = reader.get_destination_page_number(item)
                title = " ".join(scrub(str(item.title or "")).split())
            except Exception:  # pypdf raises many kinds on a broken entry: it alone is left out
                continue
            if page is not None and page >= 0 and title:
                out.append((page, level, title))
    return sorted(out, key=lambda e: e[0])  # stable: reading order within a page


def _sections(pages: list[str], outline: list[tuple[int, int, str]]) -> list[Section]:
    sections: list[Section] = []
    stack: list[tuple[int, str]] = []
    entries = iter(outline)
    nxt = next(entries, None)
    for index, text in enumerate(pages):
        pos = 0
        path = tuple(t for _, t in stack)
        while nxt is not None and nxt[0] <= index:
            _, level, title = nxt
            # The heading as a line of its own on its page; a mere mention in the text is no heading.
            found = (
                re.compile(rf"^[ \t]*{re.escape(title)}[ \t]*$", re.M).search(text, pos) if nxt[0] == index else None
            )
            start = found.start() if found else pos
            if text[pos:start].strip():
                sections.append(_section(path, text[pos:start], index + 1))
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, title))
            path, pos = tuple(t for _, t in stack), found.end() if found else start  # the heading is in the path
            nxt = next(entries, None)
        if text[pos:].strip():
            sections.append(_section(path, text[pos:], index + 1))
    return sections


def _section(path: tuple[str, ...], text: str, page: int) -> Section:
    return Section(path, text, page, tuple(text_blocks(text)))

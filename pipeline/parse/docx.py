"""Word .docx → sections, with python-docx (MIT): heading styles split sections.

Paragraphs styled "Heading N" open a section at level N ("Title" is the title);
tables read as `a | b | c` rows, in document order with the paragraphs; under a
header row (Word's "repeat as header row") a row reads `Header: a | Other: b`. Blocks:
paragraphs, list items and quotes by their paragraph style, table rows with their
header cells. A .docx
has no pages until a word processor lays it out, so its sections carry none.
A password-protected file (an OLE container, not a zip) or a corrupt one is a
ParseError, for that file alone.
"""

from __future__ import annotations

import io
import re
import zipfile
from itertools import zip_longest

from pipeline.errors import ParseError
from pipeline.parse.blocks import block, shift
from pipeline.parse.parsed import Parsed
from pipeline.parse.text import scrub
from pipeline.records import Block, Section

_HEADING = re.compile(r"^heading (\d)$", re.I)
MAX_INFLATED_BYTES = 200 * 2**20  # a .docx's parts, uncompressed (a big manual is a few MB)
_OLE_MAGIC = b"\xd0\xcf\x11\xe0"  # encrypted Office files (and old .doc) are OLE compound files
# Word's built-in paragraph styles, by what their names say: "List Bullet 2", "Intense Quote" ...
_STYLE_KINDS = (("list", "list_item"), ("quote", "quote"), ("preformatted", "code"), ("macro text", "code"))


def parse_docx(data: bytes) -> Parsed:
    from docx import Document as open_docx

    if data.startswith(_OLE_MAGIC):
        raise ParseError("the Word file is encrypted (password-protected) or an old binary .doc: skipped")
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as z:  # a zip bomb is refused before anything is inflated
            if (inflated := sum(i.file_size for i in z.infolist())) > MAX_INFLATED_BYTES:
                raise ParseError(f"the Word file inflates to {inflated} bytes (at most {MAX_INFLATED_BYTES} are read)")
        doc = open_docx(io.BytesIO(data))
        title = scrub(doc.core_properties.title or "").strip()
        events = list(_events(doc))
    except ParseError:
        raise
    except Exception as e:  # zipfile, lxml and python-docx errors on a broken file: this file's alone
        raise ParseError(f"not a readable Word .docx ({type(e).__name__}: {str(e)[:200]})") from None
    sections: list[Section] = []
    stack: list[tuple[int, str]] = []
    parts: list[tuple[str, tuple[Block, ...]]] = []
    for level, text, found in [*events, (0, "", ())]:  # a sentinel heading flushes the last section
        if level is None:
            parts.append((text, found))
            continue
        if parts:
            sections.append(_section(tuple(h for _, h in stack), parts))
        parts = []
        if level == -1:  # the Title paragraph
            title = title or text
            continue
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, text))
    return Parsed(title, sections)


def _section(path: tuple[str, ...], parts: list[tuple[str, tuple[Block, ...]]]) -> Section:
    """One section of paragraphs and tables, joined by blank lines, their blocks re-based."""
    blocks: list[Block] = []
    at = 0
    for text, found in parts:
        blocks += shift(found, at)
        at += len(text) + 2
    return Section(path, "\n\n".join(t for t, _ in parts), blocks=tuple(blocks))


def _events(doc):
    """(None, text, blocks) per paragraph or table, (level, heading, ()) per heading, (-1, title, ()) for
    a Title, in order."""
    from docx.table import Table
    from docx.text.paragraph import Paragraph

    for item in doc.iter_inner_content():
        if isinstance(item, Table):
            if table := _table(item):
                yield None, *table
        elif isinstance(item, Paragraph):
            text = scrub(item.text).strip()
            if not text:
                continue
            style = (item.style.name if item.style is not None else "") or ""
            if m := _HEADING.match(style):
                yield int(m.group(1)), " ".join(text.split()), ()
            elif style.lower() == "title":
                yield -1, " ".join(text.split()), ()
            else:
                kind = next((k for word, k in _STYLE_KINDS if word in style.lower()), "paragraph")
                b = block(kind, text, 0, len(text), spans=False)
                yield None, text, (b,) if b else ()


def _table(table) -> tuple[str, tuple[Block, ...]] | None:
    """A table's rows as lines, and a block per row; rows under a header row read with its cells."""
    header: list[str] = []
    lines: list[str] = []
    blocks: list[Block] = []
    at = 0
    for row in table.rows:
        cells = [" ".join(scrub(c.text).split()) for c in row.cells]
        if not any(cells):
            continue
        if row._tr.xpath("./w:trPr/w:tblHeader") and not lines:  # Word's "repeat as header row"
            header = cells
            continue
        pairs = zip_longest(header, cells, fillvalue="") if header else (("", c) for c in cells)
        text = " | ".join(f"{h}: {c}" if h else c for h, c in pairs if c or not header)
        if b := block("table_row", text, 0, len(text), header=tuple(header), cells=tuple(cells), spans=False):
            blocks.append(b.shifted(at))
        lines.append(text)
        at += len(text) + 1
    if not lines and header:  # a table of its header alone
        lines, blocks = [" | ".join(header)], [Block("table_row", 0, len(" | ".join(header)), cells=tuple(header))]
    return ("\n".join(lines), tuple(blocks)) if lines else None

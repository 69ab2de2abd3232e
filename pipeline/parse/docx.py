"""Word .docx → sections, with python-docx (MIT): heading styles split sections.

Paragraphs styled "Heading N" open a section at level N ("Title" is the title);
tables read as `a | b | c` rows, in document order with the paragraphs. A .docx
has no pages until a word processor lays it out, so its sections carry none.
A password-protected file (an OLE container, not a zip) or a corrupt one is a
ParseError, for that file alone.
"""

from __future__ import annotations

import io
import re
import zipfile

from pipeline.errors import ParseError
from pipeline.parse.parsed import Parsed
from pipeline.parse.text import scrub
from pipeline.records import Section

_HEADING = re.compile(r"^heading (\d)$", re.I)
MAX_INFLATED_BYTES = 200 * 2**20  # a .docx's parts, uncompressed (a big manual is a few MB)
_OLE_MAGIC = b"\xd0\xcf\x11\xe0"  # encrypted Office files (and old .doc) are OLE compound files


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
    blocks: list[str] = []
    for level, text in [*events, (0, "")]:  # a sentinel heading flushes the last section
        if level is None:
            blocks.append(text)
            continue
        if blocks:
            sections.append(Section(tuple(h for _, h in stack), "\n\n".join(blocks)))
        blocks = []
        if level == -1:  # the Title paragraph
            title = title or text
            continue
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, text))
    return Parsed(title, sections)


def _events(doc):
    """(None, text) per paragraph or table, (level, heading) per heading, (-1, title) for a Title, in order."""
    from docx.table import Table
    from docx.text.paragraph import Paragraph

    for block in doc.iter_inner_content():
        if isinstance(block, Table):
            rows = [" | ".join(" ".join(c.text.split()) for c in row.cells) for row in block.rows]
            if text := "\n".join(r for r in rows if r.strip(" |")):
                yield None, scrub(text)
        elif isinstance(block, Paragraph):
            text = scrub(block.text).strip()
            if not text:
                continue
            style = (block.style.name if block.style is not None else "") or ""
            if m := _HEADING.match(style):
                yield int(m.group(1)), " ".join(text.split())
            elif style.lower() == "title":
                yield -1, " ".join(text.split())
            else:
                yield None, text

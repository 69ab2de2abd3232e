"""Real PDF and Word files for tests, made here: a hand-written PDF (pypdf adds outlines and encryption)
and a .docx written by python-docx."""

from __future__ import annotations

import io
from collections.abc import Sequence


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def make_pdf(
    pages: Sequence[Sequence[str]],
    title: str | None = None,
    outline: Sequence[tuple[str, int, int]] = (),
    password: str | None = None,
) -> bytes:
    """A PDF with one page per item (each a list of text lines, Helvetica); `outline`: (title, page index,
    level) bookmarks in order; `password`: encrypted with it (RC4, readable by pypdf alone)."""
    n = len(pages)
    objects = [
        "<< /Type /Catalog /Pages 2 0 R >>",
        "<< /Type /Pages /Kids [" + " ".join(f"{4 + 2 * i} 0 R" for i in range(n)) + f"] /Count {n} >>",
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
    ]
    for i, lines in enumerate(pages):
        ops = "".join(f"({_escape(line)}) Tj T* " for line in lines)
        stream = f"BT /F1 12 Tf 16 TL 72 720 Td {ops}ET"
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> "
            f"/Contents {5 + 2 * i} 0 R >>"
        )
        objects.append(f"<< /Length {len(stream.encode('latin-1'))} >>\nstream\n{stream}\nendstream")
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n")
    offsets = []
    for i, body in enumerate(objects, 1):
        offsets.append(out.tell())
        out.write(f"{i} 0 obj\n{body}\nendobj\n".encode("latin-1"))
    xref = out.tell()
    out.write(f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode())
    for off in offsets:
        out.write(f"{off:010d} 00000 n \n".encode())
    out.write(f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode())
    data = out.getvalue()
    if not (title or outline or password):
        return data
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(data)))
    if title:
        writer.add_metadata({"/Title": title})
    parents: list = []
    for text, page, level in outline:
        parents = parents[: level - 1]
        item = writer.add_outline_item(text, page, parent=parents[-1] if parents else None)
        parents.append(item)
    if password:
        writer.encrypt(password, algorithm="RC4-128")
    buf = io.BytesIO()
    writer.write(buf)
    return buf.getvalue()


def make_docx(blocks: Sequence[tuple[str, str]], title: str | None = None) -> bytes:
    """A .docx from (style, text) blocks: style "h1".."h3", "p", "list", "quote", or "table" / "header-table"
    (text: rows by '\\n', cells by '|'; a header table's first row is marked "repeat as header row")."""
    from docx import Document

    doc = Document()
    if title:
        doc.core_properties.title = title
    for style, text in blocks:
        if style[:1] == "h" and style[1:].isdigit():
            doc.add_heading(text, level=int(style[1:]))
        elif style in ("table", "header-table"):
            rows = [r.split("|") for r in text.split("\n")]
            table = doc.add_table(rows=len(rows), cols=len(rows[0]))
            for r, row in enumerate(rows):
                for c, cell in enumerate(row):
                    table.cell(r, c).text = cell
            if style == "header-table":
                from docx.oxml import OxmlElement

                table.rows[0]._tr.get_or_add_trPr().append(OxmlElement("w:tblHeader"))
        elif style in ("list", "quote"):
            doc.add_paragraph(text, style="List Bullet" if style == "list" else "Quote")
        else:
            doc.add_paragraph(text)
    buf = io.BytesIO()
    doc.save(buf)
    return buf.getvalue()

"""The parser for a document's kind: `parse_document` chooses one by `Document.kind`.

Each parser is its own module, imported when its kind first comes; they return
`Parsed` (pipeline.parse.parsed, a leaf: no module imports this package back).
"""

from __future__ import annotations

from pipeline.errors import ParseError
from pipeline.parse.parsed import Parsed
from pipeline.parse.text import scrub
from pipeline.records import Document, Section

__all__ = ["Parsed", "parse_document"]


def parse_document(doc: Document) -> Parsed:
    """Split a document into sections; raises ParseError, naming the document, on content it cannot read."""
    try:
        return _parse(doc)
    except ParseError as e:
        raise ParseError(f"{doc.ref.key} ({doc.title[:80]!r}): {e}") from None


def _parse(doc: Document) -> Parsed:
    if doc.kind == "markdown":
        from pipeline.parse.markdown import parse_markdown

        return parse_markdown(doc.content)
    if doc.kind == "confluence":
        from pipeline.parse.confluence import parse_storage

        return Parsed(doc.title, parse_storage(doc.content))
    return _parse_file(doc)


def _parse_file(doc: Document) -> Parsed:
    """The formats of pipeline.parse.formats; an unknown one is one plain-text section, as before."""
    from pipeline.parse import formats

    kind = doc.kind
    if kind in formats.BINARY_DOCUMENTS:  # extracted to sections at fetch (pipeline.parse.binary)
        from pipeline.parse.binary import load

        return load(doc.content)
    if kind == "html":
        from pipeline.parse.html import parse_html

        return parse_html(doc.content)
    if kind == "rst":
        from pipeline.parse.plain import parse_rst

        return parse_rst(doc.content)
    if kind in formats.STRUCTURED_DATA:
        from pipeline.parse.data import parse_data

        return parse_data(doc.content, kind, doc.ref.path)
    if kind == "xml":
        from pipeline.parse.storage_xml import looks_like_storage

        if looks_like_storage(doc.content):  # a wiki page exported in storage format: prose, not data
            from pipeline.parse.confluence import parse_storage_file

            return parse_storage_file(doc.content)
    if kind in formats.CODE:
        from pipeline.parse.code import parse_code

        return parse_code(doc.content, kind, doc.ref.path)
    if kind == "text":
        from pipeline.parse.manpage import looks_like_man, parse_man_text

        if looks_like_man(doc.content):  # `man -l PAGE > page.txt`: a man page as man sets it
            return parse_man_text(doc.content)
    if kind in ("asciidoc", "text"):
        from pipeline.parse.asciidoc import looks_like_asciidoc, parse_asciidoc

        if kind == "asciidoc" or looks_like_asciidoc(doc.content):  # git's `.txt` docs are AsciiDoc
            return parse_asciidoc(doc.content)
        from pipeline.parse.plain import parse_text

        return parse_text(doc.content)
    if kind == "csv":
        from pipeline.parse.plain import paragraphs

        return Parsed("", paragraphs(doc.content))
    return Parsed("", [Section((), scrub(doc.content))])

"""Documents → sections. One parser per document kind, chosen by `Document.kind`."""

from __future__ import annotations

from dataclasses import dataclass

from pipeline.records import Document, Section


@dataclass(frozen=True)
class Parsed:
    """Sections plus the title the content itself declares ("" if none).

    Only this title is embedded with each chunk: a title taken from a file name
    would make a renamed file's vectors unreusable.
    """

    title: str
    sections: list[Section]


def parse_document(doc: Document) -> Parsed:
    """Split a document into sections; raises ParseError on content it cannot read."""
    if doc.kind == "markdown":
        from pipeline.parse.markdown import parse_markdown

        return parse_markdown(doc.content)
    if doc.kind == "confluence":
        from pipeline.parse.confluence import parse_storage

        return Parsed(doc.title, parse_storage(doc.content))
    return Parsed("", [Section((), doc.content)])

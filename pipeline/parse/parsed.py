"""What a parser returns: a leaf, so the parsers and the package dispatching to them never import each other."""

from __future__ import annotations

from dataclasses import dataclass

from pipeline.records import Section

# What the parsers make of the same text, as the ledger records it (in the chunker's fingerprint): bump it
# when a parser's sections change, and every store re-chunks its documents on the next ingest, re-embedding
# only chunks whose text changed (vectors are reused by text hash).
# 2: entries as sections, man pages, anchors, furniture removed across a source's pages
# 3: a bold lead-in followed by a value alone keeps its whole line as the entry's first ("name: 0")
PARSER_VERSION = "3"


@dataclass(frozen=True)
class Parsed:
    """Sections plus the title the content itself declares ("" if none).

    Only this title is embedded with each chunk: a title taken from a file name
    would make a renamed file's vectors unreusable.
    """

    title: str
    sections: list[Section]
    pack: bool = True  # False (code, data files): only sections of one heading path share a chunk
    # The share of the page's text that is link text (HTML; 0 elsewhere): a sitemap, keyword index or list
    # of pages reads near 1 and ranks below pages of content (pipeline.query.ranking, SearchConfig.index_*).
    link_share: float = 0.0

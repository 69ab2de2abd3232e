"""A source's page furniture: the blocks repeated across its pages (menus, taglines, headers, footers,
"skip to" lines), found by repetition, not by their words, and removed before chunking.

A site sets the same blocks on every page; a page's own text repeats on few. So a block (a
paragraph, list item, table row, note: one typed block of a parser, compared with its whitespace
squashed) is furniture when at least SHARE of a source's pages hold it, on MIN_PAGES pages or more,
and it is long enough to be a site's sentence rather than a word pages share (MIN_CHARS: "Note",
"Default: off"). Code is never furniture (an example repeated in a tutorial's every step is content).

The repetition is counted over the pages an ingest parses together (every page on a first ingest or a
parser change); what it finds is kept per source in the store (`furniture`, migration 0017), so a later
run that re-parses two changed pages still knows the site's furniture.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterable
from dataclasses import replace

from pipeline.records import Block, Section

# Fitted on the fit manuals (bench/html_manuals.py --furniture): a site's tagline, masthead or footer sits on
# ≥ 90 % of its pages; the most repeated content block of a manual (a "See also" line, a licence
# notice of a few chapters) on ≤ 25 %. Half is between them with room either side.
SHARE = 0.5
MIN_PAGES = 3  # fewer pages say nothing about a site
MIN_CHARS = 20  # shorter repeated blocks are words of the manual, as bench/html_manuals.py counts menu lines


def key(text: str) -> str:
    """A block's text as furniture is compared: whitespace squashed, case kept, hashed (what the store keeps)."""
    return hashlib.sha256(" ".join(text.split()).encode("utf-8", "surrogatepass")).hexdigest()[:24]


def _candidates(sections: list[Section]) -> set[str]:
    out = set()
    for sec in sections:
        for b in sec.blocks:
            text = sec.text[b.start : b.end]
            if b.kind != "code" and len(text.strip()) >= MIN_CHARS:
                out.add(key(text))
    return out


def repeated(pages: Iterable[list[Section]]) -> set[str]:
    """The keys of blocks on at least SHARE of the pages (and MIN_PAGES); none from fewer pages."""
    counts: Counter[str] = Counter()
    n = 0
    for sections in pages:
        n += 1
        counts.update(_candidates(sections))
    if n < MIN_PAGES:
        return set()
    least = max(MIN_PAGES, SHARE * n)
    return {k for k, c in counts.items() if c >= least}


def strip(sections: list[Section], furniture: set[str]) -> list[Section]:
    """The sections without their furniture blocks (a section left with no text is dropped)."""
    if not furniture:
        return sections
    out = []
    for sec in sections:
        gone = [b for b in sec.blocks if b.kind != "code" and key(sec.text[b.start : b.end]) in furniture]
        if not gone:
            out.append(sec)
        elif (kept := _without(sec, gone)) is not None:
            out.append(kept)
    return out


def _without(sec: Section, gone: list[Block]) -> Section | None:
    """The section with the `gone` blocks (and the marker and gap before each) cut out of its text, the
    blocks after them moved back; None when nothing is left."""
    spans: list[tuple[int, int]] = []
    at = 0
    for b in gone:
        start = b.start
        while start > at and sec.text[start - 1] in " \t\n-":
            start -= 1
        spans.append((start, b.end))
        at = b.end
    keep = zip([0] + [e for _, e in spans], [s for s, _ in spans] + [len(sec.text)], strict=True)
    text = "".join(sec.text[a:b] for a, b in keep)
    gone_ids = {id(b) for b in gone}
    kept = [b.shifted(-sum(e - s for s, e in spans if e <= b.start)) for b in sec.blocks if id(b) not in gone_ids]
    stripped = text.strip()
    if not stripped:
        return None
    lead = len(text) - len(text.lstrip())
    return replace(sec, text=stripped, blocks=tuple(b.shifted(-lead) for b in kept))

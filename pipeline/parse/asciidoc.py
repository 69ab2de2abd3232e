"""AsciiDoc → sections, split on its section titles.

Both title styles open sections: `= Title`, `== Section` … (one `=` per level,
the lone level-0 title being the document's title) and the older two-line,
setext style, a title underlined with `=`, `-`, `~`, `^` or `+` (levels 0-4)
of about its length, as all of git's documentation is written. Delimited
blocks (`----` listings, `....` literals, `====` examples, `////` comments …)
are skipped whole, so a listing's `----` fence or a `= x` line inside one is
never a title. Inside a section, paragraphs are sections of their own, as for
plain text (pipeline.parse.plain), so the chunker packs whole paragraphs, and
only those of one section: every chunk names its section exactly (a manual's
short NAME, SYNOPSIS, OPTIONS sections are not merged under the page's title).

Blocks: those of plain text (pipeline.parse.blocks.text_blocks), and AsciiDoc's own:
listing and literal blocks (`----`, `....`, with a `[source,LANG]` line's language) as
code, admonition paragraphs (`NOTE: …`, `[WARNING]`) as notes, definition lists
(`term::`, `term;;`) as terms and definitions (an indented paragraph after one goes on
with its definition), and `|===` tables' rows with their header cells.

`looks_like_asciidoc` tells a `.txt` file written in AsciiDoc from plain text.
"""

from __future__ import annotations

import bisect
import itertools
import re
from dataclasses import replace

from pipeline.parse.blocks import block, code_spans, text_blocks
from pipeline.parse.events import ENTRY_SHARE, LONG_SECTION, MIN_ENTRIES
from pipeline.parse.parsed import Parsed
from pipeline.parse.plain import under_headings
from pipeline.parse.text import scrub
from pipeline.records import Block, Section

_ATX = re.compile(r"^(={1,6})[ \t]+(\S.*?)(?:[ \t]+=+)?[ \t]*$")
_UNDERLINE = {"=": 0, "-": 1, "~": 2, "^": 3, "+": 4}
_UNDERLINE_LINE = re.compile(r"^([=\-~^+])\1+[ \t]*$")
_DELIMITER = re.compile(r"^(?:([-.=*_+/])\1{3,}|--)[ \t]*$")  # a delimited block's fence
_TITLE_START = re.compile(r"^\w")  # a setext title starts with a letter or digit (not `.`, `[`, `|` …)
_LISTING = re.compile(r"^(-{4,}|\.{4,})[ \t]*$", re.M)  # a listing's or literal's fence
_SOURCE = re.compile(r"^\[(?:source)?,[ \t]*([\w+#.-]+)", re.M)  # `[source,python]`, `[,sh]`
_ADMONITION = re.compile(r"^(?:\[(NOTE|TIP|IMPORTANT|WARNING|CAUTION)\]$|(NOTE|TIP|IMPORTANT|WARNING|CAUTION): )")
_TABLE = re.compile(r"^\|===[ \t]*$", re.M)
_HEADER_OPTION = re.compile(
    r"^\[[^\]\n]*(?:%header|options=\"?[^\]\n]*header)", re.M
)  # `[%header]`, `[options="header"]`
_CELL_LINE = re.compile(r"^[ \t]*\|(?!===)[^\n]*", re.M)
_TERM = re.compile(r"^(\S.*?)(?::{2,4}|;;)(?:[ \t]+(\S.*))?$", re.M)  # `term::`, `term:: text`, `term;;`


def parse_asciidoc(text: str) -> Parsed:
    lines = scrub(text).replace("\r\n", "\n").replace("\r", "\n").split("\n")
    heads = _headings(lines)
    levels = [level for _, _, level, _ in heads]
    title = heads[0][3] if heads and levels.count(0) == 1 and heads[0][2] == 0 else ""
    return Parsed(title, _entries(_tables(_adoc_blocks(under_headings(lines, heads)))), pack=False)


def _entries(sections: list[Section]) -> list[Section]:
    """A labelled list that structures a long section (pipeline.parse.events' measure) as its sub-sections:
    each term's paragraphs one section under the term's name (`OPTIONS › --verbose`), chunked alone."""
    out: list[Section] = []
    for _, run in itertools.groupby(sections, key=lambda s: s.heading_path):
        group = list(run)
        starts = [i for i, s in enumerate(group) if s.blocks and s.blocks[0].kind == "term"]
        total = sum(len(s.text) for s in group)
        inside = sum(len(s.text) for s in group[starts[0] :]) if starts else 0
        if len(starts) < MIN_ENTRIES or total < LONG_SECTION or inside < ENTRY_SHARE * total:
            out += group
            continue
        out += group[: starts[0]]
        for a, b in itertools.pairwise([*starts, len(group)]):
            out.append(_entry(group[a:b]))
    return out


def _term_name(term: str) -> str:
    """`-f::` and `--force::` on two lines: `-f / --force`."""
    names = [re.sub(r"(?::{2,4}|;;)$", "", " ".join(ln.split())) for ln in term.split("\n")]
    return " / ".join(n for n in names if n)


def _entry(paras: list[Section]) -> Section:
    first = paras[0]
    term = first.text[first.blocks[0].start : first.blocks[0].end]
    text, blocks = "", []
    for p in paras:
        at = len(text) + (2 if text else 0)
        text = f"{text}\n\n{p.text}" if text else p.text
        blocks += [b.shifted(at) for b in p.blocks]
    return replace(
        first, heading_path=(*first.heading_path, _term_name(term)), text=text, blocks=tuple(blocks), alone=True
    )


def _adoc_blocks(sections: list[Section]) -> list[Section]:
    """AsciiDoc's blocks over the plain-text ones: listings (which may hold blank lines, so run over
    several paragraphs), admonitions, definition lists."""
    out: list[Section] = []
    fence: str | None = None  # inside a listing opened by this fence line
    lang: str | None = None
    for sec in sections:
        text = sec.text
        if fence is not None:  # a paragraph inside a listing
            close = re.search(rf"^{re.escape(fence)}[ \t]*$", text, re.M)
            code = block("code", text, 0, close.start() if close else len(text), lang=lang)
            sec = replace(sec, blocks=(code,) if code else ())
            fence = None if close else fence
        elif m := _LISTING.search(text):
            found = [b for b in sec.blocks if b.end <= m.start()]
            after = _LISTING.search(text, m.end())
            while after and after.group(1) != m.group(1):
                after = _LISTING.search(text, after.end())
            src = _SOURCE.search(text, 0, m.start())
            lang = src.group(1) if src else None
            code = block("code", text, m.end(), after.start() if after else len(text), lang=lang)
            found += [code] if code else []
            if after:
                found += text_blocks(text, after.end())
            sec = replace(sec, blocks=tuple(found))
            fence = None if after else m.group(1)
        elif _ADMONITION.match(text):
            sec = replace(sec, blocks=tuple(replace(b, kind="note") for b in sec.blocks))
        elif _TERM.match(text) or (out and out[-1].heading_path == sec.heading_path and _in_definition(out[-1], sec)):
            sec = replace(sec, blocks=_definitions(text))
        out.append(sec)
    return out


def _tables(sections: list[Section]) -> list[Section]:
    """`|===` tables' rows as table_row blocks. A table may run over several paragraphs (a blank
    line after its first row makes that row the header, as `[%header]` does); its columns are the
    cells of its first line, and a row is that many cells in a row, on one line or on several."""
    out = list(sections)
    i = 0
    while i < len(out):
        m = _TABLE.search(out[i].text)
        if m is None:
            i += 1
            continue
        cells: list[tuple[int, int, int]] = []  # (section, start, end) of each cell's text
        cols = 0
        header_gap = False
        j, pos, close = i, m.end(), None
        while j < len(out):
            text = out[j].text
            close = _TABLE.search(text, pos)
            for line in _CELL_LINE.finditer(text, pos, close.start() if close else len(text)):
                found = _cells(text, line.start(), line.end())
                if not cols:
                    cols = len(found)
                    header_gap = line.end() == len(text.rstrip()) and close is None
                cells += [(j, a, b) for a, b in found]
            if close is not None:
                break
            j, pos = j + 1, 0
        has_header = header_gap or bool(_HEADER_OPTION.search(out[i].text, 0, m.start()))
        rows = [cells[k : k + cols] for k in range(0, len(cells), cols)] if cols else []
        header = tuple(out[k].text[a:b] for k, a, b in rows[0]) if has_header and rows else ()
        blocks: dict[int, list[Block]] = {k: [] for k in range(i, min(j, len(out) - 1) + 1)}
        for row in rows[1:] if header else rows:
            if len({k for k, _, _ in row}) == 1:  # a row is a block only within one paragraph
                text = out[row[0][0]].text
                cells_text = tuple(text[a:b] for _, a, b in row)
                if b := block("table_row", text, row[0][1], row[-1][2], header=header, cells=cells_text):
                    blocks[row[0][0]].append(b)
        for k, rows_here in blocks.items():
            text = out[k].text
            lo = m.start() if k == i else 0
            hi = close.end() if close is not None and k == j else len(text)
            keep = [b for b in out[k].blocks if b.end <= lo or b.start >= hi]
            out[k] = replace(out[k], blocks=tuple(sorted(keep + rows_here, key=lambda b: b.start)))
        i = j + 1
    return out


def _cells(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """The (start, end) of each cell's text on a line of `|`-led cells (an escaped `\\|` is text)."""
    bars = [k for k in range(start, end) if text[k] == "|" and (k == 0 or text[k - 1] != "\\")]
    spans = [(a + 1, b) for a, b in zip(bars, [*bars[1:], end], strict=True)]
    out = []
    for a, b in spans:
        piece = text[a:b]
        out.append((a + len(piece) - len(piece.lstrip()), a + len(piece.rstrip())) if piece.strip() else (a, a))
    return out


def _in_definition(prev: Section, sec: Section) -> bool:
    """An indented paragraph right after a definition list item goes on with its definition."""
    return bool(prev.blocks) and prev.blocks[-1].kind in ("term", "definition") and sec.text[:1] in " \t"


def _definitions(text: str) -> tuple[Block, ...]:
    """Term lines (consecutive ones are one term) and the definition text after each."""
    out: list[Block | None] = []
    lines = text.split("\n")
    at = 0
    kind, lo = "definition", 0
    for line in lines:
        m = _TERM.match(line)
        if m and kind != "term":
            out.append(block(kind, text, lo, at))
            kind, lo = "term", at
        if m and m.group(2):  # `term:: its definition` on one line
            out.append(block("term", text, lo, at + m.end(1)))
            kind, lo = "definition", at + m.start(2)
        elif not m and kind == "term":
            out.append(block("term", text, lo, at))
            kind, lo = "definition", at
        at += len(line) + 1
    out.append(block(kind, text, lo, len(text)))
    return tuple(_term_text(b, text) for b in out if b is not None)


def _term_text(b: Block, text: str) -> Block:
    """A term's block without its `::` marks (its code spans found within what is left)."""
    if b.kind != "term":
        return b
    end = b.end
    while end > b.start and text[end - 1] in ":; \t":
        end -= 1
    return replace(b, end=end, code=code_spans(text, b.start, end))


def looks_like_asciidoc(text: str) -> bool:
    """True when a text file has AsciiDoc section titles (`= Title` lines or underlined ones)."""
    lines = text[:200_000].replace("\r\n", "\n").split("\n")
    return bool(_headings(lines))


def _headings(lines: list[str]) -> list[tuple[int, int, int, str]]:
    """(first line, line after, level, title) of each section title outside delimited blocks."""
    heads: list[tuple[int, int, int, str]] = []
    fences: dict[str, list[int]] = {}  # each fence line → where it occurs: a block needs its closing fence
    for n, raw in enumerate(lines):
        if _DELIMITER.match(raw.rstrip()):
            fences.setdefault(raw.rstrip(), []).append(n)
    i = 0
    while i < len(lines):
        line = lines[i].rstrip()
        after_break = i == 0 or not lines[i - 1].strip() or lines[i - 1].startswith("[")
        if after_break and (m := _ATX.match(line)):
            heads.append((i, i + 1, len(m.group(1)) - 1, m.group(2)))
            i += 1
            continue
        nxt = lines[i + 1].rstrip() if i + 1 < len(lines) else ""
        if after_break and _TITLE_START.match(line) and _setext(line, nxt):
            heads.append((i, i + 2, _UNDERLINE[nxt[0]], line.strip()))
            i += 2
            continue
        if line in fences and (close := bisect.bisect_right(fences[line], i)) < len(fences[line]):
            i = fences[line][close]  # skip the block; one never closed is text
        i += 1
    return heads


def _setext(title: str, underline: str) -> bool:
    """An underline of one title character, as long as the title give or take two characters."""
    return bool(_UNDERLINE_LINE.match(underline)) and abs(len(underline) - len(title)) <= 2 and len(underline) >= 2

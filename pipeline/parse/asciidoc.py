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
code, admonition paragraphs (`NOTE: …`, `[WARNING]`) as notes, and definition lists
(`term::`, `term;;`) as terms and definitions (an indented paragraph after one goes on
with its definition).

`looks_like_asciidoc` tells a `.txt` file written in AsciiDoc from plain text.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import replace

from pipeline.parse.blocks import block, code_spans, text_blocks
from pipeline.parse.parsed import Parsed
from pipeline.parse.plain import paragraphs
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
_TERM = re.compile(r"^(\S.*?)(?::{2,4}|;;)(?:[ \t]+(\S.*))?$", re.M)  # `term::`, `term:: text`, `term;;`


def parse_asciidoc(text: str) -> Parsed:
    lines = scrub(text).replace("\r\n", "\n").replace("\r", "\n").split("\n")
    heads = _headings(lines)
    levels = [level for _, _, level, _ in heads]
    title = heads[0][3] if heads and levels.count(0) == 1 and heads[0][2] == 0 else ""
    sections: list[Section] = []
    stack: list[tuple[int, str]] = []
    pos = 0
    for start, end, level, heading in [*heads, (len(lines), len(lines), -1, "")]:
        sections += paragraphs("\n".join(lines[pos:start]), tuple(h for _, h in stack))
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, heading))
        pos = end
    return Parsed(title, _adoc_blocks(sections), pack=False)


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
    while end > b.start and text[end - 1] in ":;":
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

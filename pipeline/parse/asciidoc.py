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

`looks_like_asciidoc` tells a `.txt` file written in AsciiDoc from plain text.
"""

from __future__ import annotations

import bisect
import re

from pipeline.parse.parsed import Parsed
from pipeline.parse.plain import paragraphs
from pipeline.parse.text import scrub
from pipeline.records import Section

_ATX = re.compile(r"^(={1,6})[ \t]+(\S.*?)(?:[ \t]+=+)?[ \t]*$")
_UNDERLINE = {"=": 0, "-": 1, "~": 2, "^": 3, "+": 4}
_UNDERLINE_LINE = re.compile(r"^([=\-~^+])\1+[ \t]*$")
_DELIMITER = re.compile(r"^(?:([-.=*_+/])\1{3,}|--)[ \t]*$")  # a delimited block's fence
_TITLE_START = re.compile(r"^\w")  # a setext title starts with a letter or digit (not `.`, `[`, `|` …)


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
    return Parsed(title, sections, pack=False)


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

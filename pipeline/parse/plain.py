"""Plain text and reStructuredText → sections, paragraph by paragraph.

A plain-text document's title is its first line when that line stands alone
and is short (a heading). (A `.txt` file written in AsciiDoc goes to
pipeline.parse.asciidoc instead.)

Each paragraph (text between blank lines) is a section of its own, so the
chunker packs whole paragraphs and cuts only inside one longer than the window.
reStructuredText titles (a line under- and optionally overlined with one
punctuation character) also open sections; as in docutils, levels are numbered in
the order their adornment styles first appear, and a lone first title is the title.

Blocks (pipeline.parse.blocks.text_blocks): paragraphs, list items, indented text as
code. In reStructuredText an indented paragraph is code after a `::` or a code
directive (whose argument is its language), a note after an admonition directive
(`.. note::`, `.. warning::` …, itself a note), else a block quote.
"""

from __future__ import annotations

import re
from dataclasses import replace

from pipeline.parse.blocks import text_blocks
from pipeline.parse.parsed import Parsed
from pipeline.parse.text import scrub
from pipeline.records import Section

_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n")
_MAX_TITLE = 80  # characters: a longer first line is a sentence, not a heading
_ADORNMENT = re.compile(r"^([!-/:-@\[-`{-~])\1{2,}[ \t]*$")  # 3+ of one punctuation character
_DIRECTIVE = re.compile(r"\.\.[ \t]+([\w-]+)::[ \t]*(\S*)")
_CODE_DIRECTIVES = {"code", "code-block", "sourcecode"}  # docutils' and Sphinx's names for one
_ADMONITIONS = {  # docutils' admonition directives (Sphinx adds seealso, versionadded … )
    "admonition", "attention", "caution", "danger", "error", "hint", "important", "note", "tip",
    "warning", "seealso", "versionadded", "versionchanged", "deprecated",
}  # fmt: skip


def paragraphs(text: str, path: tuple[str, ...] = ()) -> list[Section]:
    text = scrub(text).replace("\r\n", "\n").replace("\r", "\n")
    out = []
    for p in _PARAGRAPH_BREAK.split(text):
        if p.strip():
            p = p.strip("\n")
            out.append(Section(path, p, blocks=tuple(text_blocks(p))))
    return out


def under_headings(lines: list[str], heads: list[tuple[int, int, int, str]]) -> list[Section]:
    """The paragraphs of `lines`, each under its heading path. `heads`, in order: (the heading's first
    line, the line after it, its level, its text); a heading closes every open one of its level or deeper."""
    sections: list[Section] = []
    stack: list[tuple[int, str]] = []
    pos = 0
    for start, end, level, heading in [*heads, (len(lines), len(lines), 0, "")]:  # the last: the text's end
        sections += paragraphs("\n".join(lines[pos:start]), tuple(h for _, h in stack))
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, heading))
        pos = end
    return sections


def parse_text(text: str) -> Parsed:
    sections = paragraphs(text)
    return Parsed(_first_line_title(sections), sections)


def _first_line_title(sections: list[Section]) -> str:
    """A short one-line first paragraph, followed by more text, is the document's heading."""
    if len(sections) < 2:
        return ""
    first = sections[0].text.strip()
    if "\n" in first or len(first) > _MAX_TITLE or "://" in first or first[-1] in ".,;:":
        return ""
    return first


def parse_rst(text: str) -> Parsed:
    lines = scrub(text).replace("\r\n", "\n").replace("\r", "\n").split("\n")
    styles: list[tuple[str, bool]] = []  # adornment styles in order of first use: their level
    heads: list[tuple[int, int, int, str]] = []  # (first line, line after, level, title)
    i = 0
    while i < len(lines) - 1:
        over = bool(_ADORNMENT.match(lines[i])) and i + 2 < len(lines)
        t = i + 1 if over else i
        title, under = lines[t].strip(), lines[t + 1] if t + 1 < len(lines) else ""
        m = _ADORNMENT.match(under)
        if (
            title
            and m
            and not _ADORNMENT.match(lines[t])
            and len(under.rstrip()) >= len(title)
            and (not over or lines[i].rstrip()[:1] == m.group(1))
        ):
            style = (m.group(1), over)
            if style not in styles:
                styles.append(style)
            heads.append((i, t + 2, styles.index(style) + 1, title))
            i = t + 2
            continue
        i += 1
    title = heads[0][3] if heads and sum(h[2] == 1 for h in heads) == 1 else ""
    return Parsed(title, _rst_blocks(under_headings(lines, heads)))


def _rst_blocks(sections: list[Section]) -> list[Section]:
    """Indented paragraphs read by what opens them (code, a note, else a quote); admonitions as notes."""
    out: list[Section] = []
    opener: tuple[str, str | None] | None = None  # what the indented paragraphs after this one are
    for sec in sections:
        indented = bool(sec.blocks) and all(b.kind == "code" for b in sec.blocks)
        if indented and out and out[-1].heading_path == sec.heading_path:
            kind, lang = opener or ("quote", None)
            sec = replace(
                sec, blocks=tuple(replace(b, kind=kind, lang=lang if kind == "code" else None) for b in sec.blocks)
            )
        else:
            opener = None
            m = _DIRECTIVE.match(sec.text.lstrip())
            if m and m.group(1) in _CODE_DIRECTIVES:
                opener = ("code", m.group(2) or None)
            elif m and m.group(1) in _ADMONITIONS:
                opener = ("note", None)
                sec = replace(sec, blocks=tuple(replace(b, kind="note") for b in sec.blocks))
            elif sec.text.rstrip().endswith("::"):
                opener = ("code", None)
        out.append(sec)
    return out

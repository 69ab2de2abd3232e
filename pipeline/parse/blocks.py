"""Typed blocks (pipeline.records.Block) for the parsers: shared helpers.

Two ways a parser knows its blocks. A parser over source text (Markdown, AsciiDoc,
reStructuredText, plain text) knows where each block lies in it: `block` makes one
from a range, tight to its text, with the code spans `code_spans` finds. A parser that
renders markup to text (Confluence storage, HTML) knows blocks while it renders, in
nested calls that join strings: `Marks` lets it mark a block or a code span inside the
strings it returns, and reads the marks back, as offsets, once a section's text is final.
"""

from __future__ import annotations

import re
from dataclasses import replace

from pipeline.records import Block, Section

# Unicode noncharacters, reserved for a program's internal use: never text a source means.
_OPEN, _SEP, _CLOSE, _CODE, _END_CODE = "\ufdd0", "\ufdd1", "\ufdd2", "\ufdd3", "\ufdd4"
_ANY_MARK = re.compile("[\ufdd0-\ufdd4]")
_TOKEN = re.compile("\ufdd0([0-9]+)\ufdd1|[\ufdd2-\ufdd4]")
_BLOCK_MARK = re.compile("\ufdd0[0-9]+\ufdd1|\ufdd2")
_TICKS = re.compile(r"(?<!\\)`+|\\`")  # a backslash-escaped backtick opens nothing (CommonMark 6.1)
_WORDY = re.compile(r"\w")
_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n")
_LINE = re.compile(r"[^\n]+")
_INDENTED = re.compile(r"(?: {4}|\t)")  # CommonMark's indented code: four spaces or a tab
_BULLET = re.compile(r"[ \t]*(?:[-*+\u2022]|[0-9]{1,9}[.)])[ \t]+\S")  # a list marker, then text

# An outer block that holds an inner one of these kinds holds its text (a list item's paragraph is
# the item); any other inner block stays a block of its own (a code block inside a list item).
_HOLDS: dict[str, frozenset[str]] = {
    "list_item": frozenset({"paragraph"}),
    "note": frozenset({"paragraph", "quote"}),
    "quote": frozenset({"paragraph"}),
    "term": frozenset({"paragraph"}),
    "definition": frozenset({"paragraph"}),
    "table_row": frozenset({"paragraph", "list_item", "table_row", "code", "note", "quote", "term", "definition"}),
    "code": frozenset({"paragraph", "list_item", "table_row", "code", "note", "quote", "term", "definition"}),
}


def tight(text: str, start: int, end: int) -> tuple[int, int]:
    """[start, end) with the whitespace at either edge left out."""
    piece = text[start:end]
    return start + len(piece) - len(piece.lstrip()), start + len(piece.rstrip())


def code_spans(text: str, start: int = 0, end: int | None = None) -> tuple[tuple[int, int], ...]:
    """Backtick code spans in text[start:end] (CommonMark: a run of n backticks to the next run of
    exactly n), as the offsets of their content; one space inside each edge is left out."""
    end = len(text) if end is None else end
    runs = [m for m in _TICKS.finditer(text, start, end) if m.group(0) != "\\`"]
    out: list[tuple[int, int]] = []
    i = 0
    while i < len(runs):
        opener = runs[i]
        n = len(opener.group(0))
        j = next((j for j in range(i + 1, len(runs)) if len(runs[j].group(0)) == n), None)
        if j is None:  # no closer: the run is literal backticks
            i += 1
            continue
        s, e = opener.end(), runs[j].start()
        if e - s >= 2 and text[s] == " " == text[e - 1] and text[s:e].strip():
            s, e = s + 1, e - 1
        if text[s:e].strip():
            out.append((s, e))
        i = j + 1
    return tuple(out)


def block(
    kind: str,
    text: str,
    start: int,
    end: int,
    *,
    header: tuple[str, ...] = (),
    cells: tuple[str, ...] = (),
    lang: str | None = None,
    spans: bool = True,
) -> Block | None:
    """The block of text[start:end], tight to its text, with its backtick code spans (`spans`; never
    inside a code block); None when the range holds only whitespace."""
    s, e = tight(text, start, end)
    if s >= e:
        return None
    code = code_spans(text, s, e) if spans and kind != "code" else ()
    return Block(kind, s, e, header, cells, code, lang)


def text_blocks(text: str, start: int = 0, end: int | None = None) -> list[Block]:
    """Blocks of plain text, paragraph by paragraph (text between blank lines): one whose lines are
    all indented is code; lines opening with a list marker are list items (an item runs on over
    the lines after it that open with none); any other run of lines is a paragraph."""
    end = len(text) if end is None else end
    out: list[Block | None] = []
    pos = start
    for brk in [*_PARAGRAPH_BREAK.finditer(text, start, end), None]:
        stop = brk.start() if brk else end
        lines = [m for m in _LINE.finditer(text, pos, stop) if m.group(0).strip()]
        if lines and all(_INDENTED.match(m.group(0)) for m in lines):
            out.append(block("code", text, pos, stop))
        else:
            kind, lo, hi = "paragraph", pos, pos  # the block being read
            for m in lines:
                if _BULLET.match(m.group(0)):
                    out.append(block(kind, text, lo, hi))
                    kind, lo = "list_item", m.start()
                hi = m.end()
            out.append(block(kind, text, lo, hi))
        pos = brk.end() if brk else end
    return [b for b in out if b is not None]


def as_code(sections: list[Section], lang: str) -> list[Section]:
    """Sections of a code or data file: each one code block, in the file's language."""
    out = []
    for sec in sections:
        b = block("code", sec.text, 0, len(sec.text), lang=lang)
        out.append(replace(sec, blocks=(b,) if b else ()))
    return out


def shift(blocks: tuple[Block, ...] | list[Block], by: int) -> tuple[Block, ...]:
    return tuple(b.shifted(by) for b in blocks) if by else tuple(blocks)


class Marks:
    """Blocks and inline code marked inside rendered strings, read back as offsets.

    `block` wraps a string in marks naming a block (its kind and fields kept here); `code`
    wraps inline code. The marks are Unicode noncharacters (`clean` keeps them out of a
    source), neither whitespace nor line breaks, so whitespace squashing, joins and
    indentation leave them in place. `read` removes them from a section's final text:
    inline code is written between backticks and recorded as a span; nested blocks are
    flattened so that each character belongs to its innermost block, except where the
    outer block holds the inner one's kind (`_HOLDS`: a paragraph in a list item).
    """

    def __init__(self) -> None:
        self._fields: list[tuple[str, tuple[str, ...], tuple[str, ...], str | None]] = []

    @staticmethod
    def clean(text: str) -> str:
        """A source's text with any character the marks use replaced by U+FFFD."""
        return _ANY_MARK.sub("\ufffd", text)

    def block(
        self,
        kind: str,
        text: str,
        *,
        header: tuple[str, ...] = (),
        cells: tuple[str, ...] = (),
        lang: str | None = None,
    ) -> str:
        """`text` marked as one block (header and cells may hold marks; they are read as plain text)."""
        if not text.strip():
            return text
        self._fields.append((kind, header, cells, lang))
        return f"{_OPEN}{len(self._fields) - 1}{_SEP}{text}{_CLOSE}"

    @staticmethod
    def code(text: str) -> str:
        """`text` marked as inline code."""
        return f"{_CODE}{text}{_END_CODE}" if text.strip() else text

    @staticmethod
    def plain(text: str) -> str:
        """The text as it will read: block marks dropped, inline code between backticks."""
        return _render(text)[0]

    def read(self, text: str) -> tuple[str, tuple[Block, ...]]:
        """The text without marks, and its blocks in order (offsets into that text)."""
        out, spans, codes = _render(text)
        blocks: list[Block] = []
        ci = 0
        for s, e, idx in _flatten(spans, self._fields):
            s, e = tight(out, s, e)
            kind, header, cells, lang = self._fields[idx]
            if s >= e or (kind != "code" and not _WORDY.search(out, s, e)):
                continue  # nothing left but a list marker or punctuation between nested blocks
            while ci < len(codes) and codes[ci][1] <= s:
                ci += 1
            own = tuple((max(a, s), min(b, e)) for a, b in codes[ci:] if a < e and min(b, e) > max(a, s))
            blocks.append(
                Block(
                    kind,
                    s,
                    e,
                    tuple(self.plain(h) for h in header),
                    tuple(self.plain(c) for c in cells),
                    () if kind == "code" else own,
                    lang,
                )
            )
        return out, tuple(blocks)


def _render(text: str) -> tuple[str, list[tuple[int, int, int, int]], list[tuple[int, int]]]:
    """(text without marks, block spans as (start, end, depth, field index), code spans)."""
    out: list[str] = []
    n = 0
    stack: list[tuple[int, int]] = []
    spans: list[tuple[int, int, int, int]] = []
    codes: list[tuple[int, int]] = []
    pos = 0
    for m in _TOKEN.finditer(text):
        if m.start() < pos:  # inside inline code already written
            continue
        literal = text[pos : m.start()]
        out.append(literal)
        n += len(literal)
        pos = m.end()
        mark = m.group(0)
        if m.group(1) is not None:
            stack.append((int(m.group(1)), n))
        elif mark == _CLOSE:
            if stack:
                idx, s = stack.pop()
                spans.append((s, n, len(stack), idx))
        elif mark == _CODE and (close := text.find(_END_CODE, pos)) >= 0:
            content = _TOKEN.sub("", text[pos:close])
            fence = "`" * (max((len(r) for r in re.findall("`+", content)), default=0) + 1)
            pad = " " if content.startswith("`") or content.endswith("`") else ""
            lead = fence + pad
            out += [lead, content, pad + fence]
            codes.append((n + len(lead), n + len(lead) + len(content)))
            n += len(lead) + len(content) + len(pad + fence)
            pos = close + 1
    out.append(text[pos:])
    return "".join(out), spans, codes


def _flatten(
    spans: list[tuple[int, int, int, int]], fields: list[tuple[str, tuple[str, ...], tuple[str, ...], str | None]]
) -> list[tuple[int, int, int]]:
    """Non-overlapping (start, end, field index) pieces, in order: each character its innermost
    block's, unless an enclosing block holds that block's kind."""
    kept: list[tuple[int, int, int]] = []
    open_: list[tuple[int, int, int]] = []  # enclosing kept blocks (start, end, idx)
    for s, e, _, idx in sorted(spans, key=lambda t: (t[0], -t[1], t[2])):
        while open_ and open_[-1][1] <= s:
            open_.pop()
        if open_ and fields[idx][0] in _HOLDS.get(fields[open_[-1][2]][0], frozenset()):
            continue
        kept.append((s, e, idx))
        open_.append((s, e, idx))
    pieces: list[tuple[int, int, int]] = []
    stack: list[list[int]] = []  # [end, idx, cursor]
    for s, e, idx in kept:
        while stack and stack[-1][0] <= s:
            _close(stack, pieces)
        if stack:
            pieces.append((stack[-1][2], s, stack[-1][1]))
        stack.append([e, idx, s])
    while stack:
        _close(stack, pieces)
    return sorted((p for p in pieces if p[1] > p[0]), key=lambda p: p[0])


def _close(stack: list[list[int]], pieces: list[tuple[int, int, int]]) -> None:
    end, idx, cursor = stack.pop()
    pieces.append((cursor, end, idx))
    if stack:
        stack[-1][2] = end


def strip_marks(text: str) -> str:
    """Text with every block mark removed (inline code marks too, leaving their content)."""
    return _ANY_MARK.sub("", _BLOCK_MARK.sub("", text))

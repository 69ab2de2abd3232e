"""An HTML page's main content → sections of typed blocks (pipeline.records.Block).

The walk reads what a reader sees, in order: `<h1>`–`<h6>` open sections; a
paragraph, each list item, each table row, a `<pre>`, a `<dt>` term and its
`<dd>` definition, a note (`<aside>`, a `class` note/warning/tip ...) and a
blockquote are one block each. Where a page has no heading below its title, its
visible structure makes the sections instead: definition terms, the bold lead-in
of a paragraph or list item, a table's caption (`derived`). Inline `<code>` reads
`in backticks`; its span (inside them) is recorded in `Block.code`. An inline SVG's
`<text>` elements (a syntax diagram's words) are read in document order.

How blocks read in the section text: paragraphs, notes and quotes are separated
by a blank line; list items are `- item` lines and table rows `A: a | B: b` lines
under their header row (`A | B`), each block spanning the item or row without its marker; a
code block is fenced (```lang), its block spanning the code inside the fence.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from bs4 import NavigableString, Tag
from bs4.element import Comment, Declaration, Doctype, ProcessingInstruction

from pipeline.records import Block, Section

HEADINGS = {"h1", "h2", "h3", "h4", "h5", "h6"}
DERIVED = 8  # a derived heading's level: below every real one (a nested page's h6 reads 7), under the current section
_INLINE_CODE = {"code", "tt", "kbd", "samp", "var"}
_BLOCKS = HEADINGS | {
    "p", "div", "section", "article", "main", "header", "aside", "ul", "ol", "dl", "dt", "dd", "table",
    "pre", "blockquote", "hr", "figure", "figcaption", "details", "summary", "li", "center", "address",
}  # fmt: skip
_NOTE_CLASSES = {"note", "warning", "tip", "caution", "important", "admonition", "hint", "danger", "attention"}
_LAYOUT_CELL = HEADINGS | {"table", "pre"}  # a cell holding one of these makes its table a layout table
_SKIPPED = (Comment, Declaration, Doctype, ProcessingInstruction)
_WS = re.compile(r"[ \t\r\n\f\v\u00a0\u200b]+")
_LANG = re.compile(r"^(?:language|lang|highlight|brush:?)-?(\w[\w+#.-]*)$")
_ANCHOR_MARK = re.compile(r"[\s#¶§\u00b6\U0001f517]+$")  # a heading's own permalink symbol


@dataclass
class Rich:
    """Text with the spans of inline code in it."""

    text: str = ""
    code: list[tuple[int, int]] = field(default_factory=list)

    def indent(self, pad: str) -> Rich:
        """Every line after the first indented by `pad` (a list item's continuation lines)."""
        starts = [i for i, c in enumerate(self.text) if c == "\n"]

        def at(i: int) -> int:
            return i + len(pad) * sum(1 for s in starts if s < i)

        return Rich(self.text.replace("\n", "\n" + pad), [(at(a), at(b)) for a, b in self.code])


def join(parts: list[Rich], sep: str) -> Rich:
    out = Rich()
    for p in parts:
        if not p.text:
            continue
        if out.text:
            out.text += sep
        out.code += [(a + len(out.text), b + len(out.text)) for a, b in p.code]
        out.text += p.text
    return out


class _Line:
    """Inline content rendered as a reader sees it: whitespace squashed, `<br>` a line break."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.n = 0
        self.last = "\n"
        self.code: list[tuple[int, int]] = []

    def add(self, s: str) -> None:
        s = _WS.sub(" ", s)
        if s.startswith(" ") and self.last in " \n":
            s = s[1:]
        if s:
            self.parts.append(s)
            self.n += len(s)
            self.last = s[-1]

    def br(self) -> None:
        if self.parts and self.last == " ":
            self.parts[-1] = self.parts[-1][:-1]
            self.n -= 1
        if self.n:
            self.parts.append("\n")
            self.n += 1
            self.last = "\n"

    def span(self, text: str) -> None:
        raw = _WS.sub(" ", text)
        inner = raw.strip()
        if not inner:
            return self.add(raw)
        if raw.startswith(" "):
            self.add(" ")
        self.add("`")  # the text reads as Markdown and Confluence pages do; the span is the code inside
        self.code.append((self.n, self.n + len(inner)))
        self.add(inner)
        self.add("`")
        if raw.endswith(" "):
            self.add(" ")

    def rich(self) -> Rich:
        text = "".join(self.parts).rstrip()
        return Rich(text, [(a, min(b, len(text))) for a, b in self.code if a < len(text)])


def inline(node: object, line: _Line | None = None, in_code: bool = False) -> _Line:
    line = line if line is not None else _Line()
    if isinstance(node, _SKIPPED):
        return line
    if isinstance(node, NavigableString):
        line.add(str(node))
        return line
    assert isinstance(node, Tag)
    if node.name == "br":
        line.br()
    elif node.name == "svg":
        line.add(" " + " ".join(t.get_text(" ", strip=True) for t in node.find_all("text")) + " ")
    elif node.name in _INLINE_CODE and not in_code:
        line.span(inline_text(node, in_code=True))
    else:
        for child in node.children:
            inline(child, line, in_code)
    return line


def inline_text(node: Tag, in_code: bool = False) -> str:
    sub = _Line()
    for child in node.children:
        inline(child, sub, in_code)
    return "".join(sub.parts)


def heading_text(tag: Tag) -> str:
    return _ANCHOR_MARK.sub("", " ".join(inline(tag).rich().text.split()))


@dataclass
class _Piece:
    kind: str
    rich: Rich
    sep: str = "\n\n"  # what comes before it in the section text
    marker: str = ""  # "- " before a list item: in the text, outside the block
    header: tuple[str, ...] = ()
    cells: tuple[str, ...] = ()
    lang: str | None = None


Event = tuple[int, str] | _Piece


class Walk:
    """One page's walk; `derived`: headings come from terms, bold lead-ins and captions."""

    def __init__(self, derived: bool):
        self.derived = derived

    def events(self, node: Tag, kind: str = "paragraph", top: bool = True) -> Iterator[Event]:
        line = _Line()
        for child in node.children:
            if isinstance(child, Tag) and child.name in _BLOCKS:
                yield from self._flush(line, kind)
                line = _Line()
                yield from self._block(child, kind, top)
            else:
                inline(child, line)
        yield from self._flush(line, kind)

    @staticmethod
    def _flush(line: _Line, kind: str) -> Iterator[_Piece]:
        if (rich := line.rich()).text:
            yield _Piece(kind, rich)

    def _block(self, tag: Tag, kind: str, top: bool) -> Iterator[Event]:
        name = tag.name
        if name in HEADINGS:
            if top and kind == "paragraph" and (text := heading_text(tag)):
                yield int(name[1]), text
            else:  # inside a note, list or cell: a line of it, not a new section
                yield from self._flush(inline(tag), kind)
        elif name in ("ul", "ol"):
            yield from self._list(tag, top and kind == "paragraph")
        elif name == "dl":
            yield from self._dl(tag, kind, top)
        elif name == "table":
            yield from self._table(tag, kind, top)
        elif name == "pre":
            yield _Piece("code", Rich(tag.get_text().strip("\n")), lang=_lang(tag))
        elif name == "blockquote":
            yield from self.events(tag, "quote", False)
        elif name == "hr":
            return
        elif name == "aside" or _is_note(tag):
            yield from self.events(tag, "note", False)
        elif name == "p" and self.derived and top and kind == "paragraph" and (lead := _lead_in(tag)):
            yield DERIVED, lead
            yield from self._rest(tag, kind)
        else:
            yield from self.events(tag, kind, top)

    def _rest(self, tag: Tag, kind: str) -> Iterator[Event]:
        """A paragraph without its bold lead-in (already a heading)."""
        lead = _first_child(tag)
        line = _Line()
        for child in tag.children:
            if child is not lead:
                inline(child, line)
        rich = line.rich()
        rich.text = rich.text.lstrip(" :.-–—")
        shift = len(line.rich().text) - len(rich.text)
        rich.code = [(a - shift, b - shift) for a, b in rich.code if a >= shift]
        yield from ([_Piece(kind, rich)] if rich.text else [])

    def _item(self, li: Tag) -> Rich:
        """A list item's text: its own lines, a nested list's items as indented `- ` lines."""
        parts: list[Rich] = []
        for ev in self.events(li, "list_item", False):
            if isinstance(ev, _Piece):
                parts.append(
                    Rich(ev.marker + ev.rich.text, [(a + len(ev.marker), b + len(ev.marker)) for a, b in ev.rich.code])
                )
        return join(parts, "\n")

    def _list(self, tag: Tag, top: bool) -> Iterator[Event]:
        ordered = tag.name == "ol"
        raw = str(tag.get("start") or "1").strip()
        n = int(raw) if ordered and raw.isascii() and raw.isdigit() and len(raw) < 10 else 1
        first = True
        for li in tag.find_all("li", recursive=False):
            if self.derived and top and (lead := _lead_in(li)):
                yield DERIVED, lead
                yield from self._rest(li, "paragraph")
                first = True
                continue
            marker = f"{n}. " if ordered else "- "
            n += 1
            rich = self._item(li)
            if rich.text:
                pad = " " * len(marker)
                yield _Piece("list_item", rich.indent(pad), "\n\n" if first else "\n", marker)
                first = False

    def _dl(self, tag: Tag, kind: str, top: bool) -> Iterator[Event]:
        terms: list[str] = []
        for child in tag.find_all(["dt", "dd"], recursive=False):
            if child.name == "dt":
                text = " ".join(inline(child).rich().text.split())
                if self.derived and top and kind == "paragraph":
                    terms.append(text)
                elif text:
                    yield _Piece("term", inline(child).rich())
                continue
            if terms:
                yield DERIVED, " / ".join(t for t in terms if t)
                terms = []
            yield from self.events(child, "definition" if kind == "paragraph" else kind, False)
        if terms:
            yield DERIVED, " / ".join(t for t in terms if t)

    def _table(self, tag: Tag, kind: str, top: bool) -> Iterator[Event]:
        rows = [tr for tr in tag.find_all("tr") if tr.find_parent("table") is tag]
        cells_of = [tr.find_all(["th", "td"], recursive=False) for tr in rows]
        if any(c.find(_LAYOUT_CELL) for cells in cells_of for c in cells):  # layout, not data: read its cells
            for cells in cells_of:
                for c in cells:
                    yield from self.events(c, kind, top)
            return
        caption = tag.find("caption")
        if caption is not None and (text := " ".join(inline(caption).rich().text.split())):
            yield (DERIVED, text) if self.derived and top and kind == "paragraph" else _Piece(kind, Rich(text))
        header: tuple[str, ...] = ()
        first = True
        for tr, cells in zip(rows, cells_of, strict=True):
            texts = [self._cell(c) for c in cells]
            if not any(t.text for t in texts):
                continue
            plain = tuple(t.text for t in texts)
            is_header = all(c.name == "th" for c in cells) or tr.find_parent("thead") is not None
            named = header if not is_header else ()
            row = join([_headed(named[i] if i < len(named) else "", t) for i, t in enumerate(texts)], " | ")
            yield _Piece("table_row", row, "\n\n" if first else "\n", header=() if is_header else header, cells=plain)
            header = plain if is_header and not header else header
            first = False

    def _cell(self, cell: Tag) -> Rich:
        parts = [ev.rich for ev in self.events(cell, "table_row", False) if isinstance(ev, _Piece)]
        return join(parts, " ")


def _headed(name: str, cell: Rich) -> Rich:
    """A cell as its row reads: `Header: value` under a header row (as Confluence rows read), else the value."""
    lead = f"{name}: " if name and cell.text else ""
    return Rich(lead + cell.text.replace("\n", " "), [(a + len(lead), b + len(lead)) for a, b in cell.code])


def _first_child(tag: Tag) -> object:
    for child in tag.children:
        if isinstance(child, NavigableString) and not str(child).strip():
            continue
        return child
    return None


def _lead_in(tag: Tag) -> str:
    """The bold text a paragraph or list item opens with (its visible heading), else ""."""
    lead = _first_child(tag)
    if not isinstance(lead, Tag) or lead.name not in ("b", "strong"):
        return ""
    text = " ".join(lead.get_text(" ").split()).rstrip(":.").strip()
    return text if 0 < len(text) <= 200 else ""


def _is_note(tag: Tag) -> bool:
    classes = tag.get("class") or ()
    return tag.name in ("div", "p", "section") and any(c.lower() in _NOTE_CLASSES for c in classes)


def _lang(pre: Tag) -> str | None:
    """A code block's language, from a `language-x` (`lang-x`, `highlight-x`) class on it, its code, its parent
    or the parent's parent (Sphinx: `<div class="highlight-python"><div class="highlight"><pre>`)."""
    code = pre.find("code")
    parent = pre.parent
    for node in (pre, code, parent, parent.parent if parent is not None else None):
        for c in (node.get("class") or ()) if isinstance(node, Tag) else ():
            if (m := _LANG.match(c.lower())) and m.group(1) not in ("none", "text", "default"):
                return m.group(1)
    return None


def sections(events: Iterator[Event]) -> list[Section]:
    """Events → sections: each heading closes the section before it; blocks get their offsets."""
    out: list[Section] = []
    stack: list[tuple[int, str]] = []
    pieces: list[_Piece] = []
    for ev in [*events, (0, "")]:  # the sentinel heading flushes the last section
        if isinstance(ev, _Piece):
            pieces.append(ev)
            continue
        if pieces:
            out.append(_section(tuple(h for _, h in stack if h), pieces))
        pieces = []
        while stack and stack[-1][0] >= ev[0]:
            stack.pop()
        stack.append(ev)
    return out


def _section(path: tuple[str, ...], pieces: list[_Piece]) -> Section:
    text, blocks = "", []
    for p in pieces:
        if text:
            text += p.sep
        if p.kind == "code":
            fence = "````" if "```" in p.rich.text else "```"
            text += f"{fence}{p.lang or ''}\n"
            start = len(text)
            text += p.rich.text
            blocks.append(Block("code", start, len(text), lang=p.lang))
            text += f"\n{fence}"
            continue
        text += p.marker
        start = len(text)
        text += p.rich.text
        code = tuple((start + a, start + b) for a, b in p.rich.code if b > a)
        blocks.append(Block(p.kind, start, len(text), header=p.header, cells=p.cells, code=code))
    return Section(path, text, blocks=tuple(blocks))

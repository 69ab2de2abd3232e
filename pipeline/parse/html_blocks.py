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

from bs4 import NavigableString, Tag
from bs4.element import Comment, Declaration, Doctype, ProcessingInstruction

from pipeline.parse.events import Anchor, Entry, Event, Piece, Rich, join
from pipeline.parse.manpage import pre_events

HEADINGS = {"h1", "h2", "h3", "h4", "h5", "h6"}
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
_CAPITALS = re.compile(r"^[A-Z][A-Z0-9 ,/&()'-]{2,60}$")
_SET_HEADING = 7  # its level: below the page's own headings (h1-h6), above the entries under it
_KEYWORD_LINE = 200  # characters: a keyword line or term longer than this is a paragraph, not an entry's name
_ANCHOR_MARK = re.compile(r"[\s#¶§\u00b6\U0001f517]+$")  # a heading's own permalink symbol


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


class Walk:
    """One page's walk: pieces, headings, anchors, and the entries its visible structure offers (definition
    terms, keyword lines, bold lead-ins, a one-row table heading a description, a table's caption), which
    pipeline.parse.events.resolve makes sub-sections or leaves as text."""

    def events(self, node: Tag, kind: str = "paragraph", top: bool = True) -> Iterator[Event]:
        line = _Line()
        for child in node.children:
            if isinstance(child, Tag) and child.name in _BLOCKS:
                yield from self._flush(line, kind)
                line = _Line()
                if name := _own_anchor(child):
                    yield Anchor(name)
                yield from self._block(child, kind, top)
            else:
                if isinstance(child, Tag):
                    yield from (Anchor(a) for a in _anchors(child))
                inline(child, line)
        yield from self._flush(line, kind)

    @staticmethod
    def _flush(line: _Line, kind: str) -> Iterator[Piece]:
        if (rich := line.rich()).text:
            yield Piece(kind, rich)

    def _block(self, tag: Tag, kind: str, top: bool) -> Iterator[Event]:
        name = tag.name
        at_top = top and kind == "paragraph"
        if name in HEADINGS:
            if at_top and (text := heading_text(tag)):
                yield from (Anchor(a) for a in _anchors(tag)[:1])
                yield int(name[1]), text
            else:  # inside a note, list or cell: a line of it, not a new section
                yield from self._flush(inline(tag), kind)
        elif name in ("ul", "ol"):
            yield from self._list(tag, at_top)
        elif name == "dl":
            yield from self._dl(tag, kind, top)
        elif name == "table":
            yield from self._table(tag, kind, top)
        elif name == "pre":
            yield from pre_events(tag.get_text().strip("\n"), _bold_lines(tag), _lang(tag), at_top)
        elif name == "blockquote":
            yield from self.events(tag, "quote", False)
        elif name == "hr":
            return
        elif name == "aside" or _is_note(tag):
            yield from self.events(tag, "note", False)
        elif name == "p" and at_top and (lead := _lead_in(tag)) and _CAPITALS.match(lead) and lead == heading_text(tag):
            yield _SET_HEADING, lead  # a paragraph of bold capitals alone: a section name as man pages set one
        elif name in ("p", "div") and at_top and (lead := _lead_in(tag)):
            whole = inline(tag).rich()
            if (
                name == "div"
                and len(whole.text) <= _KEYWORD_LINE
                and "\n" not in whole.text
                and not tag.find(list(_BLOCKS))
            ):
                kept = [Piece("term", whole)] if whole.text != lead else []  # a keyword line: its term, its values
                yield Entry(lead, kept, [Piece(kind, whole)], _entry_anchor(tag))
            elif name == "p":
                rest = list(self._rest(tag, kind))
                if len(rest) == 1 and _a_value(rest[0].rich.text):  # "name: 0": the value says nothing alone
                    rest = [Piece("term", whole)]
                yield Entry(lead, rest, [Piece(kind, whole)], _entry_anchor(tag))
            else:
                yield from self.events(tag, kind, top)
        else:
            yield from self.events(tag, kind, top)

    def _rest(self, tag: Tag, kind: str) -> Iterator[Piece]:
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
        yield from ([Piece(kind, rich)] if rich.text else [])

    def _item(self, li: Tag) -> Rich:
        """A list item's text: its own lines, a nested list's items as indented `- ` lines."""
        parts: list[Rich] = []
        for ev in self.events(li, "list_item", False):
            if isinstance(ev, Piece):
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
            marker = f"{n}. " if ordered else "- "
            n += 1
            rich = self._item(li)
            if not rich.text:
                continue
            pad = " " * len(marker)
            item = Piece("list_item", rich.indent(pad), "\n\n" if first else "\n", marker)
            if top and (lead := _lead_in(li)):
                yield Entry(lead, list(self._rest(li, "paragraph")), [item], _entry_anchor(li))
            else:
                yield item
            first = False

    def _dl(self, tag: Tag, kind: str, top: bool) -> Iterator[Event]:
        terms: list[tuple[str, Rich, str | None]] = []
        at_top = top and kind == "paragraph"
        for child in tag.find_all(["dt", "dd"], recursive=False):
            if child.name == "dt":
                rich = inline(child).rich()
                if at_top and rich.text:
                    terms.append((_term(child, rich.text), rich, _entry_anchor(child)))
                elif rich.text:
                    yield Piece("term", rich)
                continue
            if terms:
                yield _dl_entry(terms)
                terms = []
            yield from self.events(child, "definition" if kind == "paragraph" else kind, False)
        if terms:
            yield _dl_entry(terms)

    def _table(self, tag: Tag, kind: str, top: bool) -> Iterator[Event]:
        rows = [tr for tr in tag.find_all("tr") if tr.find_parent("table") is tag]
        cells_of = [tr.find_all(["th", "td"], recursive=False) for tr in rows]
        if any(c.find(_LAYOUT_CELL) for cells in cells_of for c in cells):  # layout, not data: read its cells
            for cells in cells_of:
                for c in cells:
                    yield from self.events(c, kind, top)
            return
        caption = tag.find("caption")
        at_top = top and kind == "paragraph"
        if caption is not None and (text := " ".join(inline(caption).rich().text.split())):
            line = Piece(kind, Rich(text))
            yield Entry(text, [], [line], _entry_anchor(caption)) if at_top else line
        if at_top and len(rows) == 1 and len(cells_of[0]) >= 2 and tag.find("th") is None:
            texts = [self._cell(c) for c in cells_of[0]]
            if 0 < len(term := " ".join(texts[0].text.split())) <= _KEYWORD_LINE:  # an entry's heading line
                row = join(texts, " | ")
                yield Entry(term, [Piece("term", row)], [Piece("table_row", row, cells=tuple(t.text for t in texts))])
                return
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
            yield Piece("table_row", row, "\n\n" if first else "\n", header=() if is_header else header, cells=plain)
            header = plain if is_header and not header else header
            first = False

    def _cell(self, cell: Tag) -> Rich:
        parts = [ev.rich for ev in self.events(cell, "table_row", False) if isinstance(ev, Piece)]
        return join(parts, " ")


def _dl_entry(terms: list[tuple[str, Rich, str | None]]) -> Entry:
    """The entry of one or more `<dt>` terms: their names as its heading, each `<dt>` as it reads (a
    parameter's default, an option's argument) its first lines unless it is only the name."""
    heading = " / ".join(t for t, _, _ in terms)
    kept = [Piece("term", r, "\n") for t, r, _ in terms if r.text.strip("`") != t]
    plain = [Piece("term", r, "\n") for _, r, _ in terms]
    return Entry(heading, kept, plain, next((a for _, _, a in terms if a), None))


def _term(dt: Tag, text: str) -> str:
    """A term's name: the text of its anchor or of its first code or bold element where that starts the
    term (`max_connections (integer)`, `header_size_limit (default: 102400)`), else the whole term."""
    for el in dt.find_all(["a", "code", "tt", "b", "strong", "kbd", "samp", "var"]):
        name = " ".join(el.get_text(" ").split())
        if name and text.lstrip("`").startswith(name) and len(name) < len(text):
            return name
    return " ".join(text.split())[:_KEYWORD_LINE]


def _own_anchor(tag: Tag) -> str | None:
    value = tag.get("id") or (tag.get("name") if tag.name == "a" else None)
    return str(value) if value else None


def _anchors(tag: Tag) -> list[str]:
    """The anchors an inline element holds, its own first."""
    found = [a] if (a := _own_anchor(tag)) else []
    return found + [str(d.get("id") or d.get("name")) for d in tag.find_all(_ANCHORED)]


def _ANCHORED(tag: Tag) -> bool:
    return bool(tag.get("id") or (tag.name == "a" and tag.get("name")))


def _entry_anchor(tag: Tag) -> str | None:
    """An entry's anchor: its element's own, else the first inside it."""
    return _own_anchor(tag) or next(iter(_anchors(tag)), None)


def _bold_lines(pre: Tag) -> set[str]:
    """The lines of a `<pre>` that are bold from start to end (a rendered man page's section names)."""
    out = set()
    for b in pre.find_all(["b", "strong"]):
        text = b.get_text()
        if "\n" not in text and text.strip():
            prev = b.previous_sibling
            if prev is None or (isinstance(prev, NavigableString) and str(prev).endswith("\n")):
                nxt = b.next_sibling
                if nxt is None or (isinstance(nxt, NavigableString) and str(nxt).startswith("\n")):
                    out.add(text.strip())
    return out


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


# A bold lead-in's rest that is a value, not a sentence: "0", "<none>", "/var/run", "yes (default)". Words, not
# characters: a path or an option list is one word; a definition runs longer or ends as a sentence does.
_VALUE_WORDS = 3


def _a_value(text: str) -> bool:
    return 0 < len(text.split()) <= _VALUE_WORDS and not text.rstrip().endswith((".", "!", "?"))


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

"""Confluence storage format (XHTML with `ac:`/`ri:` markup) → sections.

A storage body is made well-formed XML (pipeline.parse.storage_xml) and checked
strictly with lxml: Confluence only stores well-formed XHTML, so a body that fails
is truncated or corrupt and is reported rather than half indexed, and so is one
nested deeper than MAX_DEPTH elements (the walk recurses per level; real pages nest
a few dozen at most). BeautifulSoup then walks it: headings split sections;
code macros become fenced blocks with their language, panels keep their kind and
title, expands their title, status lozenges read `[label]`, links read as their
text or target, tables as `a | b | c` rows (a row under a header row reads
`Header: cell | Other: cell`), task lists as `[x] ...` lines, `<code>` between
backticks. Each section's blocks (pipeline.parse.blocks.Marks) are marked while it
is rendered: paragraphs, list items and tasks, table rows with their header cells,
code macros and `<pre>` (the code, not its fences) with the macro's language,
info/note/tip/warning panels as notes, blockquotes, and inline `<code>` spans.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextvars import ContextVar
from itertools import zip_longest
from typing import TypeGuard

from bs4 import BeautifulSoup, NavigableString, Tag
from bs4.element import Comment, Declaration, Doctype, ProcessingInstruction
from lxml import etree

from pipeline.errors import ParseError
from pipeline.parse.blocks import Marks, strip_marks
from pipeline.parse.parsed import Parsed
from pipeline.parse.storage_xml import depth as _depth  # pipeline.parse.html imports it from here
from pipeline.parse.storage_xml import wrap as _wrap
from pipeline.parse.text import scrub
from pipeline.records import Section

MAX_DEPTH = 100  # elements; the walk spends up to ~4 Python frames per level, the interpreter allows 1000

_HEADINGS = {"h1", "h2", "h3", "h4", "h5", "h6"}
# Containers whose children may hold section headings (page layout columns).
_TRANSPARENT = {"ac:layout", "ac:layout-section", "ac:layout-cell", "div", "section", "root"}
_BLOCKS = (
    _HEADINGS
    | _TRANSPARENT
    | {"p", "ul", "ol", "dl", "table", "pre", "blockquote", "hr", "ac:task-list", "ac:adf-extension"}
)
_NOTES = {"Info", "Note", "Tip", "Warning"}  # the panels that are a note (a plain panel is a box)
_PANELS = {
    "info": "Info",
    "note": "Note",
    "tip": "Tip",
    "warning": "Warning",
    "panel": "Panel",
    "success": "Tip",
    "error": "Warning",
    "custom": "Panel",
}
_INLINE_MACROS = {"status", "anchor", "view-file", "viewpdf", "jira", "emoticon"}
_DROPPED_MACROS = {"toc", "toc-zone", "children", "pagetree", "recently-updated", "contentbylabel"}
_SKIPPED = (Comment, Declaration, Doctype, ProcessingInstruction)
_CLASS_LANG = re.compile(r"^(?:language|lang|highlight|sourceCode)-([\w+#.-]+)$")  # HTML's code-language classes
_OL_START = re.compile(r"-?[0-9]{1,9}")  # ASCII digits only: int() rejects "²", and huge values are noise
_MARKS: ContextVar[Marks] = ContextVar("confluence_marks")  # the page being parsed's


def _mark(kind: str, text: str, **fields: tuple[str, ...] | str | None) -> str:
    return _MARKS.get().block(kind, text, **fields)  # type: ignore[arg-type]


def parse_storage(xhtml: str) -> list[Section]:
    """Sections of a storage-format body; raises ParseError if it is not well-formed."""
    return _storage(xhtml)[1]


def parse_storage_file(xhtml: str) -> Parsed:
    """A storage page kept as a file (no API to give its title): its first level-1 heading is the
    title, as in Markdown."""
    title, sections = _storage(xhtml)
    return Parsed(title, sections)


def _storage(xhtml: str) -> tuple[str, list[Section]]:
    """The body's first level-1 heading ("" if none) and its sections."""
    if not isinstance(xhtml, str):
        raise ParseError(f"storage body must be text, got {type(xhtml).__name__}")
    doc = _wrap(Marks.clean(scrub(xhtml)))
    try:
        root = etree.fromstring(
            doc.encode("utf-8"), etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=True)
        )
    except etree.XMLSyntaxError as e:
        raise ParseError(f"Confluence storage body is not well-formed XHTML: {e}") from None
    if (depth := _depth(root)) > MAX_DEPTH:
        raise ParseError(f"Confluence storage body nests {depth} elements deep (at most {MAX_DEPTH} are read)")
    root_tag = BeautifulSoup(doc, "lxml-xml").find("root")
    if not isinstance(root_tag, Tag):  # lxml accepted it, so this cannot happen; typed, not assumed
        raise ParseError("Confluence storage body has no root element after parsing")
    h1 = root.find(".//h1")
    title = " ".join("".join(h1.itertext()).split()) if h1 is not None else ""
    try:
        return title, _sections(_walk(root_tag))
    except RecursionError:  # a caller already deep in its stack: still this page's fault alone
        raise ParseError(f"Confluence storage body nests too deeply to read ({depth} elements)") from None


def _qname(tag: Tag) -> str:
    return f"{tag.prefix}:{tag.name}" if tag.prefix else tag.name


def _attr(tag: Tag, name: str) -> str:
    """An attribute as text ("" when absent; a multi-valued one joined)."""
    value = tag.get(name)
    return value if isinstance(value, str) else " ".join(value or ())


def _is_block(node: object) -> TypeGuard[Tag]:
    if not isinstance(node, Tag):
        return False
    name = _qname(node)
    if name == "ac:structured-macro":
        return node.get("ac:name", "") not in _INLINE_MACROS
    return name in _BLOCKS


def _walk(node: Tag) -> Iterator[str | tuple[int, str]]:
    """Block texts in document order, and (level, text) for each section heading."""
    for item in _runs(node):
        if isinstance(item, str):
            yield item
        elif _qname(item) in _HEADINGS:
            yield int(item.name[1]), strip_marks(_squash(_inline(item)))
        elif _qname(item) in _TRANSPARENT:
            yield from _walk(item)
        else:
            yield from _block(item)


def _sections(events: Iterator[str | tuple[int, str]]) -> list[Section]:
    """Sections from `_walk`'s events (a generator: the blocks it marks are marked while this reads it;
    pipeline.parse.html reads an HTML page's the same way)."""
    marks = _MARKS.set(Marks())
    try:
        return _read_sections(events)
    finally:
        _MARKS.reset(marks)


def _read_sections(events: Iterator[str | tuple[int, str]]) -> list[Section]:
    sections: list[Section] = []
    stack: list[tuple[int, str]] = []
    blocks: list[str] = []
    for ev in [*events, (0, "")]:  # the sentinel heading flushes the last section
        if isinstance(ev, str):
            blocks += [ev] if ev.strip() else []
            continue
        if blocks:
            text, found = _MARKS.get().read("\n\n".join(blocks))
            sections.append(Section(tuple(h for _, h in stack if h), text, blocks=found))
        blocks = []
        while stack and stack[-1][0] >= ev[0]:
            stack.pop()
        stack.append(ev)
    return sections


def _runs(node: Tag) -> Iterator[Tag | str]:
    """Children, with each run of inline content merged into one paragraph string."""
    buf: list[str] = []
    for child in node.children:
        if _is_block(child):
            if text := _squash("".join(buf)):
                yield _mark("paragraph", text)
            buf = []
            yield child
        else:
            buf.append(_inline(child))
    if text := _squash("".join(buf)):
        yield _mark("paragraph", text)


def _blocks(node: Tag | None) -> list[str]:
    if node is None:
        return []
    out: list[str] = []
    for item in _runs(node):
        out.extend([item] if isinstance(item, str) else _block(item))
    return [b for b in out if b.strip()]


def _block(tag: Tag) -> list[str]:
    name = _qname(tag)
    if name in _HEADINGS:  # inside a macro or list: a line, not a new section
        return [_mark("paragraph", _squash(_inline(tag)))]
    if name in ("ul", "ol"):
        return [_list(tag)]
    if name == "table":
        return [_table(tag)]
    if name == "pre":
        lang = _pre_lang(tag)
        code = _mark("code", Marks.clean(tag.get_text()).strip(chr(10)), lang=lang)
        return [f"```{lang or ''}\n{code}\n```"]
    if name == "dl":
        return [_definitions(tag)]
    if name == "ac:structured-macro":
        return _macro(tag)
    if name == "ac:task-list":
        return [_tasks(tag)]
    if name == "ac:adf-extension":
        return _adf(tag)
    if name == "blockquote":
        return [_mark("quote", b) for b in _blocks(tag)]
    return _blocks(tag)  # p, div, layouts ...


def _squash(text: str) -> str:
    """Whitespace runs → one space per line; explicit line breaks (<br/>) kept."""
    lines = (" ".join(line.split()) for line in text.split("\n"))
    return "\n".join(line for line in lines if line)


def _inline(node: object) -> str:
    if isinstance(node, _SKIPPED):
        return ""
    if isinstance(node, NavigableString):
        return Marks.clean(str(node))  # an HTML page's text comes here uncleaned (pipeline.parse.html)
    assert isinstance(node, Tag)
    name = _qname(node)
    if name == "br":
        return "\n"
    if name == "ac:link":
        return _link(node)
    if name == "ac:structured-macro":
        return _inline_macro(node) if node.get("ac:name") in _INLINE_MACROS else " ".join(_macro(node))
    if name == "ac:emoticon":  # keep a real emoji, drop ":shortname:" fallbacks
        fallback = _attr(node, "ac:emoji-fallback")
        return "" if fallback.startswith(":") else fallback
    if name == "ac:image":
        caption = node.find("ac:caption")
        return f" {_squash(_inline(caption))} " if caption else ""
    if name in ("ac:parameter", "ac:placeholder", "ac:adf-mark", "ac:task-id", "ac:task-uuid"):
        return ""
    text = "".join(_inline(c) for c in node.children)
    return Marks.code(text) if name == "code" else text


def _link(tag: Tag) -> str:
    """A link's own text, else its target's name (page title, file name, space key)."""
    body = tag.find(["ac:plain-text-link-body", "ac:link-body"], recursive=False)
    if body is not None and (text := _squash(_inline(body))):
        return text
    target = tag.find(["ri:page", "ri:attachment", "ri:space", "ri:url", "ri:blog-post"])
    if target is None:
        return _attr(tag, "ac:anchor")
    for attr in ("ri:content-title", "ri:filename", "ri:space-key", "ri:value"):
        if value := _attr(target, attr):
            return value
    return ""


def _params(tag: Tag) -> dict[str, str]:
    return {_attr(p, "ac:name"): _squash(p.get_text()) for p in tag.find_all("ac:parameter", recursive=False)}


def _inline_macro(tag: Tag) -> str:
    name, params = tag.get("ac:name", ""), _params(tag)
    if name == "status":
        return f" [{params['title']}] " if params.get("title") else ""
    if name in ("view-file", "viewpdf"):
        att = tag.find("ri:attachment")
        return f" [file: {att['ri:filename']}] " if att is not None and att.get("ri:filename") else ""
    if name == "jira":
        return params.get("key", "")
    return ""


def _macro(tag: Tag) -> list[str]:
    name, params = tag.get("ac:name", ""), _params(tag)
    if name in ("code", "noformat"):
        return [_code(tag, params)]
    if name in _DROPPED_MACROS:
        return []
    body = _blocks(tag.find("ac:rich-text-body", recursive=False))
    if name in _PANELS:
        return _panel(_PANELS[name], params.get("title", ""), body)
    if name == "expand":
        return [_mark("paragraph", params.get("title") or "Details"), *body]
    if body:
        return [_mark("paragraph", params["title"]), *body] if params.get("title") else body
    plain = tag.find("ac:plain-text-body", recursive=False)
    if plain is not None and plain.get_text().strip():
        return [_code(tag, params)]
    text = _inline_macro(tag)
    return [_mark("paragraph", text)] if text.strip() else []


def _panel(kind: str, title: str, body: list[str]) -> list[str]:
    if not body and not title:
        return []
    head = f"{kind}: {title}" if title else f"{kind}:"
    text = head + "\n" + "\n\n".join(body)
    return [_mark("note", text) if kind in _NOTES else _mark("paragraph", head) + "\n" + "\n\n".join(body)]


def _code(tag: Tag, params: dict[str, str]) -> str:
    lang = params.get("language", "")
    lang = "" if lang in ("none", "text") else lang
    body = tag.find("ac:plain-text-body", recursive=False)
    code = Marks.clean(body.get_text()).strip("\n") if body is not None else ""
    fence = "````" if "```" in code else "```"
    title = _mark("paragraph", params["title"]) + "\n" if params.get("title") else ""
    return f"{title}{fence}{lang}\n{_mark('code', code, lang=lang or None)}\n{fence}"


def _pre_lang(tag: Tag) -> str | None:
    """The language an HTML `<pre>` (or its `<code>`, or the two blocks around it) names in a class."""
    code = tag.find("code", recursive=False)
    parent = tag.parent
    for node in (tag, code, parent, parent.parent if parent is not None else None):
        for cls in (node.get("class") or []) if isinstance(node, Tag) else []:
            if m := _CLASS_LANG.match(cls):
                return m.group(1)
    return None


def _definitions(tag: Tag) -> str:
    """A definition list: each term on a line of its own, its definition indented below it."""
    lines = []
    for item in tag.find_all(["dt", "dd"], recursive=False):
        text = "\n".join(_blocks(item))
        if not text.strip():
            continue
        if item.name == "dt":
            lines.append(_mark("term", text))
        else:
            lines.append(_mark("definition", "  " + "\n  ".join(text.split("\n"))))
    return "\n".join(lines)


def _list(tag: Tag) -> str:
    raw = _attr(tag, "start").strip()
    start = int(raw) if tag.name == "ol" and _OL_START.fullmatch(raw) else 1
    lines = []
    for i, li in enumerate(tag.find_all("li", recursive=False), start):
        marker = f"{i}." if tag.name == "ol" else "-"
        text = "\n".join(_blocks(li)) or " "
        pad = "\n" + " " * (len(marker) + 1)
        lines.append(_mark("list_item", f"{marker} {pad.join(text.split(chr(10)))}".rstrip()))
    return "\n".join(lines)


def _table(tag: Tag) -> str:
    """Rows as lines; a header row (all `<th>`) is not a line of its own but is read with each row
    under it (`Header: cell | ...`), and is each row's block's `header`."""
    rows: list[tuple[bool, list[str]]] = []  # (a header row, its cells)
    for tr in tag.find_all("tr"):
        if tr.find_parent("table") is not tag:  # a nested table's rows belong to its cell
            continue
        tds = tr.find_all(["th", "td"], recursive=False)
        cells = [" ".join(" ".join(_blocks(c)).split()) for c in tds]
        if any(cells):
            rows.append((all(c.name == "th" for c in tds), cells))
    lines = []
    header: list[str] = []
    for i, (is_header, cells) in enumerate(rows):
        if is_header and i + 1 < len(rows) and not rows[i + 1][0]:
            header = cells
            continue
        pairs = zip_longest(header, cells, fillvalue="") if header and not is_header else (("", c) for c in cells)
        text = " | ".join(f"{h}: {c}" if h else c for h, c in pairs if c)
        lines.append(_mark("table_row", text, header=tuple(header) if not is_header else (), cells=tuple(cells)))
    return "\n".join(lines)


def _tasks(tag: Tag) -> str:
    lines = []
    for task in tag.find_all("ac:task", recursive=False):
        status = task.find("ac:task-status")
        mark = "[x]" if status is not None and status.get_text(strip=True) == "complete" else "[ ]"
        body = " ".join(" ".join(_blocks(task.find("ac:task-body"))).split())
        lines.append(_mark("list_item", f"{mark} {body}"))
    return "\n".join(lines)


def _adf(tag: Tag) -> list[str]:
    """New-editor extensions: read the node's content, not the HTML fallback (same text twice)."""
    node = tag.find("ac:adf-node")
    content = node.find("ac:adf-content") if node is not None else None
    if node is None or content is None:
        return _blocks(tag.find("ac:adf-fallback"))
    body = _blocks(content)
    if node.get("type") == "panel":
        kind = node.find("ac:adf-attribute", attrs={"key": "panel-type"})
        return _panel(_PANELS.get(kind.get_text(strip=True) if kind else "", "Panel"), "", body)
    return body

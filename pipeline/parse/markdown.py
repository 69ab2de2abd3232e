"""Markdown → sections, split on ATX and setext headings, with their blocks.

markdown-it-py finds the headings, so a `# comment` inside a code fence is
code, not a heading. Each section keeps its raw markdown (code included) and
the path of headings above it; the first level-1 heading becomes the title.
Its block tokens give each section's blocks (pipeline.parse.blocks), as line
ranges of the raw text: paragraphs, list items, table rows with their header
cells, fenced and indented code with its info-string language, definition
lists, admonitions (`!!! note`, and a blockquote opening `[!NOTE]`) as notes,
blockquotes; backtick code spans inside them.
"""

from __future__ import annotations

import re

import yaml
from markdown_it import MarkdownIt
from markdown_it.token import Token
from mdit_py_plugins.admon import admon_plugin
from mdit_py_plugins.deflist import deflist_plugin

from pipeline.parse.blocks import block, shift
from pipeline.parse.parsed import Parsed
from pipeline.parse.text import scrub
from pipeline.records import Block, Section

# Block structure only: inline parsing is skipped (code spans are found in the raw text).
_md = MarkdownIt("commonmark").enable("table").use(deflist_plugin).use(admon_plugin).disable("inline")
_ALERT = re.compile(r"\[![A-Za-z]+\]")  # GitHub's `> [!NOTE]` alert: a blockquote that is a note
# The innermost container a paragraph is in names its kind.
_CONTAINERS = {
    "list_item_open": "list_item",
    "blockquote_open": "quote",
    "admonition_open": "note",
    "dd_open": "definition",
}
_CLOSERS = {t.removesuffix("_open") + "_close" for t in _CONTAINERS}
_FRONT_MATTER = re.compile(r"\A---[ \t]*\n(.*?\n)---[ \t]*\n", re.S)
_FM_TITLE = re.compile(r"^title:\s*['\"]?(.+?)['\"]?\s*$", re.M)


def parse_markdown(text: str, default_title: str = "") -> Parsed:
    # Lines as markdown-it counts them: CR LF and CR end a line; U+2028, form feed & co do not.
    text = scrub(text).replace("\r\n", "\n").replace("\r", "\n")
    title = scrub(default_title)
    fm = _front_matter(text)
    if fm:  # YAML front matter would otherwise read as a setext heading
        if m := _FM_TITLE.search(fm.group(1)):
            title = m.group(1)
        text = "\n" * fm.group(0).count("\n") + text[fm.end() :]
    lines = text.split("\n")
    lines = [line + "\n" for line in lines[:-1]] + lines[-1:]
    tokens = _md.parse(text)
    headings = [  # (first line, line after heading, level, text)
        (tok.map[0], tok.map[1], int(tok.tag[1]), " ".join(tokens[i + 1].content.split()))
        for i, tok in enumerate(tokens)
        if tok.type == "heading_open" and tok.map
    ]
    if not fm and (h1 := next((h for h in headings if h[2] == 1), None)):
        title = h1[3] or title
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    found = _blocks(tokens, text, starts)  # in order: each section takes the run of them it holds
    sections: list[Section] = []
    stack: list[tuple[int, str]] = []
    path: tuple[str, ...] = ()
    pos = bi = 0
    for start, end, level, heading in [*headings, (len(lines), len(lines), 0, "")]:
        lo, hi = starts[pos], starts[start]
        while bi < len(found) and found[bi].start < lo:
            bi += 1
        first = bi
        while bi < len(found) and found[bi].end <= hi:
            bi += 1
        sections.append(Section(path, text[lo:hi], blocks=shift(found[first:bi], -lo)))
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, heading))
        path, pos = tuple(h for _, h in stack), end
    return Parsed(title, [s for s in sections if s.text.strip()])


def _blocks(tokens: list[Token], text: str, starts: list[int]) -> list[Block]:
    """The document's blocks, in order, offsets into `text` (`starts`: each line's offset)."""

    def span(first: int, last: int) -> tuple[int, int]:
        return starts[min(first, len(starts) - 1)], starts[min(max(last, first + 1), len(starts) - 1)]

    out: list[Block | None] = []
    kinds: list[str] = []  # the containers open around the current token
    header: tuple[str, ...] = ()
    for i, tok in enumerate(tokens):
        if tok.type in _CLOSERS:
            kinds.pop()
        elif tok.type in _CONTAINERS:
            kind = _CONTAINERS[tok.type]
            if kind == "quote" and i + 2 < len(tokens) and _ALERT.match(tokens[i + 2].content):
                kind = "note"
            kinds.append(kind)
        elif tok.map is None:
            continue
        elif tok.type in ("paragraph_open", "admonition_title_open", "html_block"):
            kind = kinds[-1] if kinds else "paragraph"
            out.append(block("note" if tok.type == "admonition_title_open" else kind, text, *span(*tok.map)))
        elif tok.type == "dt_open":
            out.append(block("term", text, *span(*tok.map)))
        elif tok.type in ("fence", "code_block"):
            first, last = tok.map
            if tok.type == "fence":
                first += 1  # the fence lines are not code; an unclosed fence runs to the end
                closed = last - 1 >= first and text[slice(*span(last - 1, last))].strip().startswith(tok.markup)
                last -= 1 if closed else 0
            lang = tok.info.split()[0].strip("{}.") if tok.info.split() else None
            if first < last:
                out.append(block("code", text, *span(first, last), lang=lang or None))
        elif tok.type == "tr_open":
            cells = _cells(tokens, i)
            if tokens[i - 1].type == "thead_open":
                header = cells  # the header row: each row below carries it
            else:
                out.append(block("table_row", text, *span(*tok.map), header=header, cells=cells))
    return [b for b in out if b is not None]


def _cells(tokens: list[Token], i: int) -> tuple[str, ...]:
    """The cells of the row opening at tokens[i], as written (inline content)."""
    cells = []
    for tok in tokens[i + 1 :]:
        if tok.type == "tr_close":
            break
        if tok.type == "inline":
            cells.append(" ".join(tok.content.split()))
    return tuple(cells)


def _front_matter(text: str) -> re.Match | None:
    """A leading `---` block that holds a YAML mapping; a rule (`---`) opening prose is no front matter."""
    fm = _FRONT_MATTER.match(text)
    if fm is None:
        return None
    try:
        data = yaml.safe_load(fm.group(1))
    except (yaml.YAMLError, RecursionError):  # not YAML (or too deep to read): prose between two rules
        return None
    return fm if data is None or isinstance(data, dict) else None  # None: an empty block, as Jekyll allows

"""Markdown → sections, split on ATX and setext headings.

markdown-it-py finds the headings, so a `# comment` inside a code fence is
code, not a heading. Each section keeps its raw markdown (code included) and
the path of headings above it; the first level-1 heading becomes the title.
"""

from __future__ import annotations

import re

import yaml
from markdown_it import MarkdownIt

from pipeline.parse.parsed import Parsed
from pipeline.parse.text import scrub
from pipeline.records import Section

_md = MarkdownIt("commonmark").disable("inline")  # headings only: skip inline parsing
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
    sections: list[Section] = []
    stack: list[tuple[int, str]] = []
    path: tuple[str, ...] = ()
    pos = 0
    for start, end, level, heading in headings:
        sections.append(Section(path, "".join(lines[pos:start])))
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, heading))
        path, pos = tuple(h for _, h in stack), end
    sections.append(Section(path, "".join(lines[pos:])))
    return Parsed(title, [s for s in sections if s.text.strip()])


def _front_matter(text: str) -> re.Match | None:
    """A leading `---` block that holds a YAML mapping; a rule (`---`) opening prose is no front matter."""
    fm = _FRONT_MATTER.match(text)
    if fm is None:
        return None
    try:
        data = yaml.safe_load(fm.group(1))
    except Exception:  # not YAML (or YAML too deep to read): prose between two rules
        return None
    return fm if data is None or isinstance(data, dict) else None  # None: an empty block, as Jekyll allows

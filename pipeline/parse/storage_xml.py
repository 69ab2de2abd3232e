"""A Confluence storage body made a well-formed XML document, and how deep it nests.

A storage body is an XML fragment with undeclared namespace prefixes and, in real
pages, HTML named entities (`&nbsp;`, `&rarr;`) unknown to XML. `wrap` declares the
prefixes on one root element and rewrites named entities as numeric ones (outside
CDATA: code stays verbatim), so lxml can check the rest strictly. `looks_like_storage`
tells such a body kept as a `.xml` file from XML data by its undeclared prefixes.
"""

from __future__ import annotations

import re
from html.entities import html5

from lxml import etree

_PREFIX = re.compile(r"</?([A-Za-z][\w.-]*):[A-Za-z]|\s([A-Za-z][\w.-]*):[\w.-]+\s*=")
_ENTITY = re.compile(r"(<!\[CDATA\[.*?\]\]>)|&(#?\w+;)?", re.S)
_XML_ENTITIES = {"amp", "lt", "gt", "quot", "apos"}
# Storage markup: an element of the `ac:` (macros, links) or `ri:` (resources) prefix, never declared.
_STORAGE_TAG = re.compile(r"<(?:ac|ri):[a-z]")
_DECLARES_STORAGE = re.compile(r"xmlns:(?:ac|ri)\s*=")


def depth(root: etree._Element) -> int:
    """The deepest element nesting, counted without recursion."""
    level = deepest = 0
    for event, _ in etree.iterwalk(root, events=("start", "end")):
        level += 1 if event == "start" else -1
        deepest = max(deepest, level)
    return deepest


def looks_like_storage(text: str) -> bool:
    """True for a Confluence storage body kept as a file: its `ac:`/`ri:` elements are undeclared,
    which no namespaced XML document of its own allows."""
    head = text[:65536]
    return bool(_STORAGE_TAG.search(head)) and not _DECLARES_STORAGE.search(head)


def wrap(body: str) -> str:
    """One root element declaring every prefix used; entities XML-safe."""
    prefixes = {p for m in _PREFIX.finditer(body) for p in m.groups() if p} - {"xml", "xmlns"}
    decls = "".join(f' xmlns:{p}="urn:confluence:{p}"' for p in sorted(prefixes))
    return f"<root{decls}>{_ENTITY.sub(_fix_entity, body)}</root>"


def _fix_entity(m: re.Match) -> str:
    if m.group(1):  # CDATA: verbatim
        return m.group(1)
    ref = m.group(2)
    if ref is None:  # a bare ampersand
        return "&amp;"
    if ref.startswith("#") or ref[:-1] in _XML_ENTITIES:
        return "&" + ref
    chars = html5.get(ref)
    return "".join(f"&#{ord(c)};" for c in chars) if chars else "&amp;" + ref

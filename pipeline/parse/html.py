"""HTML files → sections, through the Confluence storage parser's walk.

Confluence storage is XHTML, so both share one reading of headings, lists,
tables, code and links (pipeline.parse.confluence). What differs is the way in:
an HTML file is not well-formed XML, so lxml's forgiving HTML parser reads it;
what is never text (scripts, styles, navigation chrome) is dropped, and the
page's structural wrappers (`main`, `article`, `header` ...) are unwrapped so that
their headings split sections as a Confluence page's do. The `<title>`, else the
first `<h1>`, is the title. Nesting deeper than the Confluence parser's MAX_DEPTH
is a ParseError, as there.
"""

from __future__ import annotations

from bs4 import BeautifulSoup, Tag
from lxml import etree, html

from pipeline.errors import ParseError
from pipeline.parse.confluence import MAX_DEPTH, _depth, _sections, _walk
from pipeline.parse.parsed import Parsed
from pipeline.parse.text import scrub

_DROPPED = ["script", "style", "noscript", "template", "nav", "svg", "canvas", "iframe", "object", "form", "button"]
_WRAPPERS = [
    "html",
    "body",
    "main",
    "article",
    "header",
    "footer",
    "aside",
    "span",
    "font",
    "center",
    "details",
    "summary",
    "figure",
    "figcaption",
]


def parse_html(text: str) -> Parsed:
    text = scrub(text)
    if not text.strip():
        return Parsed("", [])
    try:
        tree = html.document_fromstring(text)
    except (etree.ParserError, ValueError) as e:
        raise ParseError(f"not readable HTML: {e}") from None
    if (depth := _depth(tree)) > MAX_DEPTH:
        raise ParseError(f"the HTML nests {depth} elements deep (at most {MAX_DEPTH} are read)")
    soup = BeautifulSoup(text, "lxml")
    title_tag = soup.find("title")
    title = " ".join(title_tag.get_text().split()) if isinstance(title_tag, Tag) else ""
    for tag in soup.find_all(_DROPPED + ["head"]):
        tag.decompose()
    root = soup.new_tag("root")
    for node in list(soup.contents):
        root.append(node.extract())
    for tag in root.find_all(_WRAPPERS):
        tag.unwrap()
    try:
        sections = _sections(_walk(root))
    except RecursionError:
        raise ParseError(f"the HTML nests too deeply to read ({depth} elements)") from None
    if not title and (h1 := root.find("h1")) is not None:
        title = " ".join(h1.get_text().split())
    return Parsed(title, sections)

"""HTML files → sections of typed blocks: the page's main content, as its reader sees it.

lxml's forgiving HTML parser reads the file (nesting deeper than MAX_DEPTH is a
ParseError, as for Confluence pages); BeautifulSoup walks it (pipeline.parse.html_blocks).
Before the walk, what a reader does not read as the page is removed (`_strip_chrome`):

  never text      scripts, styles, forms, embedded objects, `<head>`;
  navigation      `<nav>`, `<footer>`, ARIA navigation/banner/contentinfo/search roles,
                  an element whose class or id names a navigation part (nav…, menu,
                  sidebar, breadcrumb, footer, toc, skip…), and a `<header>` or `header`
                  block holding no heading (a page's masthead; one with the page's `<h1>`
                  is its title block and stays);
  masthead links  a block before the page's first heading whose text is mostly link text
                  (LEADING_LINK_SHARE): a menu or a breadcrumb trail without a name;
  back-to-top     a small block whose only text is links to places in the page;
  language bar    a block of links to the page in other languages (`hreflang`).

A redirect stub (`<meta http-equiv=refresh>` and next to no text) and a page that is
only scripts (next to no text without them) are not documents: `skip_reason` says why,
the directory source lists them as skipped and the parser gives them no sections.

The title is the `<title>`, unless it is empty or generic: it shares no word with any
of the page's headings (a site name on every page, "No Title"); then the first heading.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from bs4 import BeautifulSoup, Tag
from lxml import etree, html

from pipeline.errors import ParseError
from pipeline.parse.confluence import MAX_DEPTH, _depth
from pipeline.parse.events import DERIVED, Event, resolve, sections
from pipeline.parse.html_blocks import HEADINGS, Walk, heading_text
from pipeline.parse.parsed import Parsed
from pipeline.parse.text import scrub

_DROPPED = ["script", "style", "noscript", "template", "canvas", "iframe", "object", "embed", "form", "button",
            "select", "input", "nav", "footer", "head", "link", "meta"]  # fmt: skip
_ROLES = {"navigation", "banner", "contentinfo", "search", "menu", "menubar", "toolbar"}
# A class or id token naming a navigation part, as the token's start or end ("navheader", "dropdown-menu").
_CHROME = re.compile(
    r"^(nav|menu|sidebar|breadcrumb|footer|toc|skip)|(nav|navbar|menu|sidebar|breadcrumbs?|footer|toc)$"
)
_HEADERISH = re.compile(r"^(page-?)?header$|^masthead$")
# Fitted on the manuals of issue 38 (docs/sources.md): a leading block at ≥ 0.6 of its text in links is a menu
# or trail (PostgreSQL/Debian navigation tables, breadcrumb paths score 0.7–1.0); an opening paragraph that
# cites a few links scores ≤ 0.3.
LEADING_LINK_SHARE = 0.6
# A menu, sidebar or footer is a minority of a page's text; an element holding more than half of it is the
# page's own content whatever its class says (a theme's grid "…-for-nav" wraps the whole article).
WRAPPER_SHARE = 0.5
STUB_WORDS = 30  # a redirect or script-only page says at most this much itself ("Redirecting to …")
_WORD = re.compile(r"\w{3,}")  # a word long enough to count: how much a page says, which headings share one
# A heading's own link mark: "#", "¶", "§", a link emoji, or an icon font's private-use glyph (Sphinx themes).
_PERMALINK = re.compile(r"[#¶§\U0001f517\ue000-\uf8ff]")
_XML_DECL = re.compile(r"^\s*<\?xml[^>]*\?>")


def parse_html(text: str) -> Parsed:
    # An XML declaration naming an encoding is refused on text (the text is decoded already): dropped.
    text = _XML_DECL.sub("", scrub(text), count=1)
    if not text.strip():
        return Parsed("", [])
    try:
        tree = html.document_fromstring(text)
    except (etree.ParserError, ValueError) as e:
        raise ParseError(f"not readable HTML: {e}") from None
    if (depth := _depth(tree)) > MAX_DEPTH:
        raise ParseError(f"the HTML nests {depth} elements deep (at most {MAX_DEPTH} are read)")
    soup = BeautifulSoup(text, "lxml")
    if _stub(soup) is not None:
        return Parsed(_title_tag(soup), [])
    title = _title_tag(soup)
    body = _strip_chrome(soup)
    heads = [h for h in body.find_all(list(HEADINGS)) if heading_text(h)]
    title = _title(title, texts := [heading_text(h) for h in heads])
    events = Walk().events(body)
    if texts and _shares_word(title, texts[0]):
        events = _under_first(events)
    try:
        found = sections(resolve(events, always=len(heads) <= 1))
    except RecursionError:
        raise ParseError(f"the HTML nests too deeply to read ({depth} elements)") from None
    return Parsed(title, found, link_share=round(_link_share(body), 3))


def _under_first(events: Iterator[Event]) -> Iterator[Event]:
    """Every later heading nested under the page's first when that one names the page: a manual's
    reference page titles itself with an `<h2>` and has `<h2>` sections too; a reader reads them as
    the page's sections (`pg_dump › Options`), not as siblings of its name."""
    first = None
    for ev in events:
        if isinstance(ev, tuple):
            if first is None:
                first = ev[0]
            else:
                ev = (ev[0] + 1, ev[1]) if ev[0] < DERIVED else ev
        yield ev


def skip_reason(text: str) -> str | None:
    """Why an HTML file is no document (a redirect stub, a script-only page), or None."""
    if "refresh" not in text.lower() and "<script" not in text.lower():
        return None  # the cheap test first: most pages have neither
    try:
        return _stub(BeautifulSoup(_XML_DECL.sub("", scrub(text), count=1), "lxml"))
    except (ValueError, RecursionError):
        return None  # the parser reports it


def _stub(soup: BeautifulSoup) -> str | None:
    refresh = soup.find("meta", attrs={"http-equiv": re.compile("^refresh$", re.I)})
    scripts = soup.find("script") is not None
    if refresh is None and not scripts:
        return None
    body = soup.find("body") or soup
    shown = " ".join(s for s in body.find_all(string=True) if s.parent is None or s.parent.name not in _NOT_TEXT)
    if len(_WORD.findall(shown)) > STUB_WORDS:
        return None
    if isinstance(refresh, Tag):
        target = str(refresh.get("content") or "").partition("=")[2].strip(" '\"") or "another page"
        return f"a redirect stub (to {target[:80]}): not indexed"
    if soup.find("noscript") is not None or "javascript" in shown.lower():  # it says it needs scripts
        return "a script-only page (its content needs JavaScript): not indexed"
    return None


_NOT_TEXT = {"script", "style", "noscript", "template", "title", "head"}


def _title_tag(soup: BeautifulSoup) -> str:
    tag = soup.find("title")
    return " ".join(tag.get_text().split()) if isinstance(tag, Tag) else ""


def _title(title: str, headings: list[str]) -> str:
    """The `<title>`, unless empty or sharing no word with any heading: then the first heading."""
    if not headings or any(_shares_word(title, h) for h in headings):
        return title
    return headings[0]


def _shares_word(a: str, b: str) -> bool:
    return bool({w.casefold() for w in _WORD.findall(a)} & {w.casefold() for w in _WORD.findall(b)})


def _strip_chrome(soup: BeautifulSoup) -> Tag:
    """The page's body without what a reader does not read as the page (see the module docstring)."""
    for tag in soup.find_all(_DROPPED):
        tag.decompose()
    body = soup.find("body")
    root = body if isinstance(body, Tag) else soup
    gone: set[int] = set()  # what was dropped, descendants included (bs4's `decomposed` searches the subtree)
    total = _text_size(root)
    for tag in root.find_all(True):
        if id(tag) not in gone and _is_chrome(tag) and not _wraps_page(tag, total):
            _drop(tag, gone)
    first = root.find(list(HEADINGS))
    if isinstance(first, Tag):
        _drop_leading_links(root, first, gone)
    for tag in root.find_all(["div", "p", "ul"]):
        if id(tag) not in gone and (_back_to_top(tag) or _translations(tag)):
            _drop(tag, gone)
    for a in root.find_all("a", href=re.compile("^#")):
        if _PERMALINK.fullmatch(a.get_text().strip()):  # a heading's or item's own link mark: "§", "¶", "#"
            a.decompose()
    return root


def _text_size(tag: Tag) -> int:
    return len("".join(tag.get_text().split()))


def _wraps_page(tag: Tag, total: int) -> bool:
    """Whether a part named like navigation holds most of the page's text: a layout wrapper whose class
    says what it sits beside ("wy-grid-for-nav" holds a whole manual page), not a menu."""
    return total > 0 and _text_size(tag) > total * WRAPPER_SHARE


def _drop(tag: Tag, gone: set[int]) -> None:
    gone.add(id(tag))
    gone.update(id(d) for d in tag.descendants)
    tag.decompose()


def _is_chrome(tag: Tag) -> bool:
    if str(tag.get("role") or "").lower() in _ROLES or str(tag.get("aria-hidden") or "") == "true":
        return True
    tokens = [t.lower() for t in (*(tag.get("class") or ()), *str(tag.get("id") or "").split())]
    if any(_CHROME.search(t) for t in tokens):
        return True
    header = tag.name == "header" or any(_HEADERISH.search(t) for t in tokens)
    return header and tag.find(list(HEADINGS)) is None


def _link_share(tag: Tag) -> float:
    text = len("".join(tag.get_text().split()))
    links = sum(len("".join(a.get_text().split())) for a in tag.find_all("a"))
    return links / text if text else 0.0


def _drop_leading_links(root: Tag, first: Tag, gone: set[int]) -> None:
    """Blocks before the first heading that are mostly links: the site's menu, a trail. Outermost first
    (document order), so a dropped block's parts are not weighed again."""
    ancestors = {id(a) for a in first.parents}
    inside = {id(d) for d in root.descendants}
    for tag in reversed(list(first.find_all_previous(["div", "table", "ul", "ol", "p", "section"]))):
        if id(tag) in gone or id(tag) in ancestors or id(tag) not in inside:
            continue
        if _link_share(tag) >= LEADING_LINK_SHARE:
            _drop(tag, gone)


def _translations(tag: Tag) -> bool:
    """A language bar: links to the page in other languages (`hreflang`) after at most a label."""
    if tag.find("a", hreflang=True) is None or tag.find(HEADINGS) is not None:
        return False
    text = len("".join(tag.get_text().split()))
    return text - sum(len("".join(a.get_text().split())) for a in tag.find_all("a")) <= 40


def _back_to_top(tag: Tag) -> bool:
    links = tag.find_all("a")
    if not links or not all(str(a.get("href") or "").startswith("#") for a in links):
        return False
    text = " ".join(tag.get_text().split())
    return len(text) <= 40 and _link_share(tag) >= 0.99  # nothing but in-page links: "top", "back to top"

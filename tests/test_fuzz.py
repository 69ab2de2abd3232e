"""Fuzzing the storage parser, the markdown parser and the chunker (hypothesis, derandomized).

The contracts: a parser returns sections or raises a typed ParseError, never anything
else; what it returns holds the input's text in order (marker words `Q<n>Z` placed in
visible positions come out once each, in the order they went in); every chunk's embedded
text re-tokenises, freshly, to its recorded count and within the window; chunks cover the
section text in order. Inputs are the kinds that broke before: deep nesting of tables,
macros, lists and quotes; lone surrogates; long `-`/`/`/`_`-joined identifiers; base64
data URIs; Korean and CJK text; odd `<ol start>` values; stray line separators.

Documents are built by small interpreters from lists of integers (opcodes) and seeds:
drawing those costs hypothesis little, shrinks well, and keeps the suite CI-fast.
FUZZ_SCALE=10 runs ten times the cases.
"""

from __future__ import annotations

import base64
import os
import random
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline.chunk import Chunker, make_header
from pipeline.errors import ParseError
from pipeline.parse.confluence import MAX_DEPTH, parse_storage
from pipeline.parse.markdown import parse_markdown
from pipeline.parse.text import scrub
from pipeline.records import Section

SCALE = float(os.environ.get("FUZZ_SCALE", "1"))


def fuzz(n: int):
    """Seeded by the test's name (derandomize), no example database: the same cases on every run."""
    return settings(
        max_examples=max(1, int(n * SCALE)),
        derandomize=True,
        database=None,
        deadline=None,
        print_blob=False,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


MARKER = "\x00M\x00"  # a placeholder, numbered Q0Z, Q1Z ... in document order once the input is built
_MARKED = re.compile(r"Q(\d+)Z")


def number_markers(text: str) -> tuple[str, int]:
    parts = text.split(MARKER)
    return "".join(p + (f"Q{i}Z" if i < len(parts) - 1 else "") for i, p in enumerate(parts)), len(parts) - 1


def markers(text: str) -> list[int]:
    return [int(m) for m in _MARKED.findall(text)]


KOREAN = "한국어 텍스트 처리는 형태소 분석이 필요합니다 데이터베이스 검색 색인 문서".split()
CJK = list("東京都渋谷区の検索索引文書处理中文分词")
NOISE = [
    " ",
    "  ",
    "word",
    "déjà-vu",
    "naïve",
    "x=1;",
    "fn main() {}",
    "😀",
    "e\u0301",
    "\ud800",
    "\udfff",
    "\u2028",
    "\x85",
    "\u00a0",
    "ﬁ",
    "İ",
    *KOREAN,
    *CJK,
    "a-b/c_d",
    "http://example.com/a_b-c",
]
OPS = st.lists(st.integers(0, 2**16), max_size=60)


# ---------------------------------------------------------------- Confluence storage format

ENTITIES = ["&nbsp;", "&rarr;", "&amp;", "&lt;", "&#x1F600;", "&#233;", "&hellip;", "&bogus;", "&"]
OL_STARTS = ["²", "٣", "0", "-3", "+4", " 7 ", "1e3", "x", "", "9" * 30, "\ud800", "12"]
# Containers: (opening markup, closing markup, element levels, markup between items or None, holds blocks)
CONTAINERS = [
    ("<blockquote>", "</blockquote>", 1, None, True),
    ("<div>", "</div>", 1, None, True),
    ("<ul><li>", "</li></ul>", 2, "</li><li>", True),
    ('<ol start="{start}"><li>', "</li></ol>", 2, "</li><li>", True),
    ("<table><tbody><tr><td>", "</td></tr></tbody></table>", 4, "</td></tr><tr><td>", True),
    (
        '<ac:structured-macro ac:name="{panel}"><ac:parameter ac:name="title">Heads up</ac:parameter>'
        "<ac:rich-text-body>",
        "</ac:rich-text-body></ac:structured-macro>",
        2,
        None,
        True,
    ),
    (
        '<ac:structured-macro ac:name="expand"><ac:rich-text-body>',
        "</ac:rich-text-body></ac:structured-macro>",
        2,
        None,
        True,
    ),
    (
        "<ac:layout><ac:layout-section><ac:layout-cell>",
        "</ac:layout-cell></ac:layout-section></ac:layout>",
        3,
        "</ac:layout-cell><ac:layout-cell>",
        True,
    ),
    (
        '<ac:adf-extension><ac:adf-node type="panel"><ac:adf-content>',
        "</ac:adf-content></ac:adf-node></ac:adf-extension>",
        3,
        None,
        True,
    ),
    (
        "<ac:task-list><ac:task><ac:task-status>complete</ac:task-status><ac:task-body>",
        "</ac:task-body></ac:task></ac:task-list>",
        3,
        "</ac:task-body></ac:task><ac:task><ac:task-body>",
        True,
    ),
    ("<p>", "</p>", 1, None, False),
    ("<strong>", "</strong>", 1, None, False),
    ('<span style="color: red">', "</span>", 1, None, False),
    ("<ac:link><ac:link-body>", "</ac:link-body></ac:link>", 2, None, False),
    ("<ac:image><ac:caption>", "</ac:caption></ac:image>", 2, None, False),
]
LEAVES = [  # (markup, element levels, needs a block context)
    ("<h{level}>Heading {level}</h{level}>", 1, True),
    (
        '<ac:structured-macro ac:name="code"><ac:parameter ac:name="language">py</ac:parameter>'
        "<ac:plain-text-body><![CDATA[# not a heading\n{m} <b>&amp;\n]]></ac:plain-text-body></ac:structured-macro>",
        2,
        True,
    ),
    ("<pre>{m}\n  x &lt; y</pre>", 1, True),
    (
        '<ac:structured-macro ac:name="status"><ac:parameter ac:name="title">{m}</ac:parameter></ac:structured-macro>',
        2,
        False,
    ),
    ('<ac:link><ri:page ri:content-title="Target page" /></ac:link>', 2, False),
    ('<ac:structured-macro ac:name="toc" />', 1, True),
    ('<ac:emoticon ac:name="smile" ac:emoji-fallback="🙂" />', 1, False),
    ("<br/>", 1, False),
    ("<hr/>", 1, True),
]


def storage_page(ops: list[int]) -> tuple[str, int]:
    """Well-formed storage XHTML from opcodes, and its element depth (the wrapper root included)."""
    out: list[str] = []
    stack: list[tuple[str, int, str | None, bool]] = []  # (closing markup, levels, between items, holds blocks)
    depth = deepest = 1
    for v in ops:
        op, arg = v % 8, v // 8
        blocks = not stack or stack[-1][3]
        if op == 0:
            out.append(MARKER)
        elif op == 1:
            out.append(NOISE[arg % len(NOISE)] + ENTITIES[arg % len(ENTITIES)] * (arg % 3 == 0))
        elif op in (2, 3):  # open a container; a block one inside inline text opens <strong> instead
            open_, close, levels, between, holds = CONTAINERS[arg % len(CONTAINERS)]
            if holds and not blocks:
                open_, close, levels, between, holds = CONTAINERS[11]
            start = OL_STARTS[arg % len(OL_STARTS)].replace("&", "&amp;").replace('"', "&quot;")
            out.append(open_.format(start=start, panel=["info", "note", "warning", "panel", "custom", "x"][arg % 6]))
            stack.append((close, levels, between, holds))
            depth += levels
            deepest = max(deepest, depth)
        elif op == 4 and stack:
            close, levels, _, _ = stack.pop()
            out.append(close)
            depth -= levels
        elif op == 5 and stack and stack[-1][2]:
            out.append(stack[-1][2])  # the next list item, table row, layout cell or task
        elif op == 6:
            markup, levels, needs_blocks = LEAVES[arg % len(LEAVES)]
            if blocks or not needs_blocks:
                out.append(markup.format(level=arg % 6 + 1, m=MARKER))
                deepest = max(deepest, depth + levels)
    out += [close for close, *_ in reversed(stack)]
    return "".join(out), deepest


@fuzz(1200)
@given(OPS)
def test_storage_pages_parse_and_keep_their_text_in_order(ops):
    page, depth = storage_page(ops)
    body, n = number_markers(page)
    if depth > MAX_DEPTH:
        with pytest.raises(ParseError, match="deep"):
            parse_storage(body)
        return
    sections = parse_storage(body)  # well-formed and shallow enough: it must parse
    assert markers("\n".join(s.text for s in sections)) == list(range(n)), "every marked word, once, in order"
    for s in sections:
        assert s.text.strip() and s.text.encode("utf-8") and all(h.encode("utf-8") for h in s.heading_path)


GARBAGE = [
    "<p>",
    "</p>",
    "<table>",
    "<td>",
    "</ac:rich-text-body>",
    '<ac:structured-macro ac:name="code">',
    "<![CDATA[",
    "]]>",
    "<!-- c -->",
    "<?pi x?>",
    "<!DOCTYPE html>",
    "<x:y z:w='1'>",
    "</x:y>",
    "<h1>",
    "&#0;",
    "&#xD800;",
    "\x01",
    "\x00",
    "\x0c",
    '<ol start="²"><li>a</li></ol>',
    "<br/>",
    "<",
    ">",
    '"',
    "\ud800",
    "&bogus",
    "]]",
]


@fuzz(800)
@given(st.lists(st.sampled_from(GARBAGE + NOISE + ENTITIES), max_size=30), OPS, st.integers(0, 100))
def test_malformed_bodies_give_sections_or_a_parse_error(garbage, ops, keep):
    page, _ = storage_page(ops)
    for body in ("".join(garbage), page[: len(page) * keep // 100], page + "".join(garbage)):
        try:
            sections = parse_storage(body)
        except ParseError:
            continue
        assert all(isinstance(s, Section) and s.text.strip() and s.text.encode("utf-8") for s in sections)


_MACRO_END = "</ac:rich-text-body></ac:structured-macro>"
NESTING = {  # (open, close) per level
    "table": ("<table><tbody><tr><td>", "</td></tr></tbody></table>"),
    "macro": ('<ac:structured-macro ac:name="info"><ac:rich-text-body>', _MACRO_END),
    "list": ("<ul><li>", "</li></ul>"),
    "blockquote": ("<blockquote>", "</blockquote>"),
    "span": ("<span>", "</span>"),
    "layout": ("<ac:layout><ac:layout-section><ac:layout-cell>", "</ac:layout-cell></ac:layout-section></ac:layout>"),
    "expand": ('<ac:structured-macro ac:name="expand"><ac:rich-text-body>', _MACRO_END),
}


@fuzz(60)
@given(st.sampled_from(sorted(NESTING)), st.integers(1, 700))
def test_deep_nesting_parses_or_is_refused_with_a_parse_error(kind, levels):
    open_, close = NESTING[kind]
    body = open_ * levels + "<p>Q0Z</p>" + close * levels
    depth = levels * open_.count("<") + 2  # the wrapper root and the <p>
    try:
        sections = parse_storage(body)
    except ParseError as e:
        assert depth > MAX_DEPTH and re.search("deep|depth", str(e))
        return
    assert depth <= MAX_DEPTH and markers(sections[0].text) == [0]


@fuzz(200)
@given(
    st.one_of(
        st.sampled_from(OL_STARTS),
        st.integers(-(10**12), 10**12).map(str),
        st.text(st.characters(min_codepoint=0x20, max_codepoint=0xD7FF), max_size=5),
    )
)  # valid in XML
def test_any_ol_start_value_numbers_the_list(start):
    attr = start.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;")
    [section] = parse_storage(f'<ol start="{attr}"><li>a</li><li>b</li></ol>')
    expected = int(start.strip()) if re.fullmatch(r"-?[0-9]{1,9}", start.strip()) else 1
    assert section.text == f"{expected}. a\n{expected + 1}. b"


# ---------------------------------------------------------------- markdown

MD_NOISE = [
    " word",
    " 한국어 텍스트",
    " 東京",
    " \ud800",
    " \u2028 after",
    " \x0c",
    " \x85",
    " \x0b",
    " \u2029",
    " \x1c",
    " `code`",
    " *em*",
    " # not a heading",
    " ===",
    " ---",
    " \t tab",
    " \x00",
]
FRONT = [
    "",
    "---{nl}title: Front{nl}---{nl}",
    "---{nl}tags: [a]{nl}",
    "---{nl}{nl}",
    "---{nl}- not a mapping{nl}---{nl}",
]


def md_line(arg: int) -> str:
    return MARKER + "".join(MD_NOISE[(arg >> (4 * i)) % len(MD_NOISE)] for i in range(arg % 3))


def md_block(nl: str, op: int, arg: int) -> str:
    """One markdown block: marked lines in paragraphs, quotes, lists and fences; headings hold no marker."""
    lines = [md_line(arg + i) for i in range(arg % 3 + 1)]
    if op == 0:
        return nl.join(lines)
    if op == 1:
        return "#" * (arg % 6 + 1) + " " + ["Intro", "Setup ##", "한국어", "", "C# guide"][arg % 5]
    if op == 2:
        return ["Title", "Sub title"][arg % 2] + nl + ["===", "---"][arg % 3 % 2]
    if op == 3:
        return "```py" + nl + nl.join([md_line(arg), "# comment", md_line(arg + 1)][: arg % 4]) + nl + "```"
    if op == 4:
        return nl.join("> " + x for x in lines)
    if op == 5:
        return ">" * (arg % 60 + 1) + " " + lines[0]
    if op == 6:
        return nl.join("- " + x for x in lines)
    if op == 7:
        depth = arg % 40 + 1
        return "".join("  " * i + "- " + (lines[0] if i == depth - 1 else "x") + nl for i in range(depth))
    if op == 8:
        return "    " + lines[0]
    if op == 9:
        return ["---", "***", "<div>", "</div>", "<!-- c -->", "[ref]: http://x.y"][arg % 6]
    return "~~~" + nl + lines[0]  # an unclosed fence runs to the end


def markdown_doc(nl: str, front: int, ops: list[int]) -> str:
    blocks = [md_block(nl, v % 11, v // 11) for v in ops]
    return FRONT[front % len(FRONT)].format(nl=nl) + (nl + nl).join(blocks) + nl


@fuzz(1200)
@given(st.sampled_from(["\n", "\r\n", "\r"]), st.integers(0, 10), OPS)
def test_markdown_keeps_every_non_heading_line_in_order(nl, front, ops):
    text, n = number_markers(markdown_doc(nl, front, ops))
    parsed = parse_markdown(text)
    assert markers("\n".join(s.text for s in parsed.sections)) == list(range(n)), "every marked line, in order"
    source, pos = scrub(text).replace("\r\n", "\n").replace("\r", "\n"), 0
    for s in parsed.sections:  # raw slices of the input, in order: nothing invented or moved
        assert (body := s.text.strip()) and (found := source.find(body, pos)) >= 0
        pos = found + len(body)


@fuzz(300)
@given(st.text(max_size=400))
def test_markdown_never_raises_on_any_text(text):
    parsed = parse_markdown(text)
    assert all(s.text.strip() and s.text.encode("utf-8") for s in parsed.sections)


# ---------------------------------------------------------------- chunker


def fragment(kind: int, size: int, seed: int) -> str:
    """Text of a kind that re-tokenises badly when cut: identifiers, base64, Hangul, Hanzi, prose, one long run."""
    rng = random.Random(seed)
    alnum = "abcdefghijklmnopqrstuvwxyz0123456789ABCXYZ"
    if kind == 0:
        sep = "-/_."[seed % 4]
        return sep.join("".join(rng.choices(alnum, k=rng.randint(1, 12))) for _ in range(size // 8 + 2))
    if kind == 1:
        return "data:image/png;base64," + base64.b64encode(rng.randbytes(size)).decode()
    if kind == 2:
        return " ".join(rng.choices(KOREAN, k=size // 6 + 1))
    if kind == 3:
        return "".join(rng.choices(CJK, k=size // 3 + 1))
    if kind == 4:
        return " ".join(rng.choices(NOISE, k=size // 5 + 1))
    return "A" * size


FRAGMENTS = st.lists(
    st.tuples(st.integers(0, 5), st.integers(1, 2000), st.integers(0, 2**32)), min_size=1, max_size=3
).map(lambda fs: "\n\n".join(fragment(*f) for f in fs))
HEADINGS = ["Intro", "설치 방법", "東京", "a-very-long-heading-identifier-" * 6, "\ud800", "x"]
SECTION = st.builds(
    lambda path, text: Section(tuple(path), text), st.lists(st.sampled_from(HEADINGS), max_size=3), FRAGMENTS
)
TITLES = ["", "Guide", "한국어 문서 제목", "A very long title " * 30, "t\ud800"]
WINDOWS = [16, 17, 20, 24, 32, 48, 64, 128, None]  # None: the model's whole window (256)


@pytest.fixture(scope="module")
def chunkers(embedder):
    cache: dict[tuple[int | None, int], Chunker] = {}

    def get(max_tokens: int | None, overlap: int) -> Chunker:
        if (max_tokens, overlap) not in cache:
            cache[max_tokens, overlap] = Chunker(embedder.tokenizer, embedder.max_seq_length, max_tokens, overlap)
        return cache[max_tokens, overlap]

    return get


def squash(s: str) -> str:
    return re.sub(r"\s+", "", s)


@fuzz(250)
@given(
    st.sampled_from(TITLES),
    st.lists(SECTION, min_size=1, max_size=3),
    st.sampled_from(WINDOWS),
    st.sampled_from([0, 0, 8, 32]),
)
def test_chunks_fit_the_window_by_a_fresh_count_and_cover_the_text(chunkers, title, sections, max_tokens, overlap):
    chunker = chunkers(max_tokens, overlap)
    chunks = chunker.chunk(title, sections)
    fresh = [len(e.ids) for e in chunker.tok.encode_batch([c.embed_text for c in chunks], add_special_tokens=True)]
    assert fresh == [c.token_count for c in chunks], "recorded counts are what the model sees"
    assert max(fresh, default=0) <= chunker.limit
    assert [c.ordinal for c in chunks] == list(range(len(chunks)))
    for c in chunks:  # the header (cut short with … only when it would eat the window), then the text
        header = make_header(scrub(title), c.heading_path)
        head = c.embed_text[: len(c.embed_text) - len(c.text)]
        assert c.embed_text.endswith(c.text)
        assert head in ("", header + "\n\n") or (head.endswith("…\n\n") and header.startswith(head[:-3]))
    if overlap:
        return
    joined, pos = squash("".join(c.text for c in chunks)), 0
    for s in sections:  # every section's text appears, in order (a word cut in two stays contiguous)
        for word in scrub(s.text).split():
            found = joined.find(squash(word), pos)
            assert found >= 0, f"lost text {word[:40]!r}"
            pos = found + len(squash(word))

"""Storage-format parsing: every shared real/generated page, then the edge cases one by one."""

from __future__ import annotations

import html
import json
import re

import pytest

from pipeline.errors import ParseError
from pipeline.parse import parse_document
from pipeline.parse.confluence import MAX_DEPTH, parse_storage
from pipeline.records import DocRef, Document
from tests.conftest_confluence import STORAGE, storage_dir  # noqa: F401 (fixture)

MANIFEST = json.loads((STORAGE / "manifest.json").read_text()) if (STORAGE / "manifest.json").is_file() else []
_CODE = re.compile(r'ac:name="code".*?<ac:plain-text-body><!\[CDATA\[(.*?)\]\]></ac:plain-text-body>', re.S)
_PANEL = re.compile(
    r'ac:name="(?:info|note|tip|warning|panel)".*?<ac:rich-text-body>\s*<p[^>]*>(.*?)</p>'
    r"|<ac:adf-content>\s*<p[^>]*>(.*?)</p>",
    re.S,
)

# Short strings read from the files: what a search must be able to find in each.
EXPECTED = {
    "md2conf-code.xhtml": [
        "```py\ndef func(n: int) -> str:\n    return str(n)\n```",
        "```java\nclass Simple {",
        'System.out.println("Hello Java!");',
        "```json",
    ],
    "md2conf-collapsed.xhtml": ["Tips for collapsed sections", '```ruby\nputs "Hello World"\n```'],
    "md2conf-admonition.xhtml": ["Tip:\nTip of the day", "This is a structured macro panel showing a warning."],
    "md2conf-panel.xhtml": ["Panel:\nTip of the day", "This is an information panel with an explicit title."],
    "md2conf-table.xhtml": [  # a row under a header row reads with it
        "Arabic: 1 | Roman: I\nArabic: 5 | Roman: V",
        "Arabic: 1986 | Roman: MCMLXXXVI",
        "Number: 1 | English: one | Hungarian: egy",
    ],
    "md2conf-status.xhtml": ["- [gray]", "- [green]"],
    "md2conf-tasklist.xhtml": ["[x] Finished action", "[ ] Unfinished action"],
    "mark-tasklists.xhtml": ["[x] #739", "[ ] Add delight to the experience"],
    "mark-links.xhtml": ["Use page link with spaces", "Another [Link]", "Use https://example.com"],
    "mark-admonitions.xhtml": ["Warning:\nWarn", "Tip:\nTIP:", "This paragraph is a simple blockquote"],
    "querypie-panels.xhtml": [
        "Info:\nThis is an info panel.",
        "Note:\nThis is a note panel.",
        "Panel:\nThis is a custom panel.",
        "Done.",
    ],
    "querypie-544381877.xhtml": ["generate_kubepie_sa.sh", "#!/bin/bash"],
    "querypie-544382364.xhtml": [
        "apiVersion: kubernetes.rbac.querypie.com/v1",
        "[와일드카드 허용]",
        "Info:\n해당 문서는 QueryPie Enterprise 9.20.0 기준으로 작성되었습니다.",
    ],
    "querypie-544379140.xhtml": ["‘Privilege Type’", "(1) 관련 메뉴 진입 → (2) 로그 추출 작업 생성"],
    "querypie-1454342158.xhtml": ["Okta → QueryPie로의 단방향 동기화를 지원합니다."],
    "querypie-544375741.xhtml": ["[file: 994_external.json]"],
    "querypie-544112828.xhtml": ["Info:\nQueryPie Agent는 Mac, Windows, Linux OS를 지원합니다."],
}
HEADINGS = {  # a heading path each page must produce (layouts and inline markup inside headings)
    "querypie-544112828.xhtml": ("에이전트를 통한 서버 접속", "2. Agent로 서버 접속하기"),
    "mark-admonitions.xhtml": ("Main Heading", "GH Alerts Heading", "Tip Type Alert Heading"),
    "md2conf-tasklist.xhtml": ("Tasklist", "Counter-examples"),
}


def _norm(text: str) -> str:
    return " ".join(text.split())


def _text(name: str) -> str:
    return "\n\n".join(s.text for s in parse_storage((STORAGE / name).read_text(encoding="utf-8")))


@pytest.mark.parametrize("entry", MANIFEST, ids=[e["file"] for e in MANIFEST])
def test_every_shared_page_parses_into_sections(entry, storage_dir):
    raw = (storage_dir / entry["file"]).read_text(encoding="utf-8")
    sections = parse_storage(raw)
    assert sections and all(s.text.strip() for s in sections)
    text = "\n\n".join(s.text for s in sections)
    assert "<ac:" not in text and "<ri:" not in text and "]]>" not in text, "markup leaked into the text"
    codes = _CODE.findall(raw)
    assert len(codes) == entry["macros"].get("code", 0)
    for code in codes:  # every line of every code macro survives (whitespace-normalised: tables flatten)
        for line in filter(str.strip, code.splitlines()):
            assert _norm(line) in _norm(text), f"code line {line!r} missing"
    for m in _PANEL.finditer(raw):  # each panel's first paragraph survives (inline tags may split words)
        first = "".join(html.unescape(re.sub(r"<[^>]+>", "", m.group(1) or m.group(2))).split())
        assert first in "".join(text.split()), f"panel text {first!r} missing"


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_concrete_strings_from_the_pages(name, storage_dir):
    text = _text(name)
    for expected in EXPECTED[name]:
        assert expected in text


@pytest.mark.parametrize("name", sorted(HEADINGS))
def test_heading_paths(name, storage_dir):
    paths = [s.heading_path for s in parse_storage((storage_dir / name).read_text(encoding="utf-8"))]
    assert HEADINGS[name] in paths


def test_pages_with_html_entities_parse(storage_dir):
    with_entities = [
        e["file"]
        for e in MANIFEST
        if e["file"].startswith("querypie-")
        and re.search(r"&(nbsp|[lr][sd]quo|ndash|rarr|harr);", (storage_dir / e["file"]).read_text())
    ]
    assert len(with_entities) == 6
    for name in with_entities:
        text = _text(name)
        assert not re.search(r"&(nbsp|[lr][sd]quo|ndash|rarr|harr);", text)


def test_panel_fallback_markup_is_not_indexed_twice(storage_dir):
    assert _text("querypie-panels.xhtml").count("This is a note panel.") == 1


def test_toc_status_and_emoticons_reduce_to_text(storage_dir):
    text = _text("querypie-544382364.xhtml")
    assert "minLevel" not in text and "Blue" not in text  # toc and status parameters are not content
    assert ":check_mark:" not in _text("querypie-544113141.xhtml")


@pytest.mark.parametrize(
    "body, expected",
    [
        ("<p>a&nbsp;b &rarr; c &amp; d &ldquo;q&rdquo;</p>", "a b → c & d “q”"),
        ("<p>R&D and AT&T</p>", "R&D and AT&T"),
        ("<p>&bogus; stays</p>", "&bogus; stays"),
        (
            '<ac:structured-macro ac:name="code"><ac:parameter ac:name="language">html</ac:parameter>'
            "<ac:plain-text-body><![CDATA[<b>&nbsp;</b> & <i>]]></ac:plain-text-body></ac:structured-macro>",
            "```html\n<b>&nbsp;</b> & <i>\n```",
        ),
        (
            '<p>See <ac:link><ri:page ri:content-title="Setup Guide" /></ac:link> and '
            '<ac:link><ri:attachment ri:filename="plan.pdf" /></ac:link>.</p>',
            "See Setup Guide and plan.pdf.",
        ),
        (
            '<p>Ask <ac:link><ri:user ri:account-id="557058:abc" /></ac:link> <at:var at:name="x">v</at:var></p>',
            "Ask v",
        ),
        (
            '<ac:structured-macro ac:name="warning"><ac:parameter ac:name="title">Careful</ac:parameter>'
            "<ac:rich-text-body><p>Back up first.</p></ac:rich-text-body></ac:structured-macro>",
            "Warning: Careful\nBack up first.",
        ),
        (
            '<ac:structured-macro ac:name="toc" /><p>x <ac:emoticon ac:name="smile" ac:emoji-fallback="🙂" /></p>',
            "x 🙂",
        ),
        ("<table><tr><td><p>a</p><table><tr><td>inner</td></tr></table></td><td>b</td></tr></table>", "a inner | b"),
        ('<ol start="3"><li><p>three</p><ul><li>sub</li></ul></li><li>four</li></ol>', "3. three\n   - sub\n4. four"),
        (
            '<ac:layout><ac:layout-section ac:type="two_equal"><ac:layout-cell><p>left</p></ac:layout-cell>'
            "<ac:layout-cell><p>right</p></ac:layout-cell></ac:layout-section></ac:layout>",
            "left\n\nright",
        ),
    ],
)
def test_storage_snippets(body, expected):
    assert "\n\n".join(s.text for s in parse_storage(body)) == expected


def test_heading_stack_pops_to_the_right_level():
    body = "<h1>A</h1><p>a</p><h2>B</h2><p>b</p><h3>C</h3><p>c</p><h2>D</h2><p>d</p><h1>E</h1><p>e</p>"
    assert [(s.heading_path, s.text) for s in parse_storage(body)] == [
        (("A",), "a"),
        (("A", "B"), "b"),
        (("A", "B", "C"), "c"),
        (("A", "D"), "d"),
        (("E",), "e"),
    ]


@pytest.mark.parametrize("body", ["<p>unclosed", "<p><b>x</p></b>", "<p>a</p></div>", "<p a=1>x</p>"])
def test_malformed_bodies_raise_parse_error(body):
    with pytest.raises(ParseError, match="not well-formed"):
        parse_storage(body)


def test_non_text_and_empty_bodies():
    with pytest.raises(ParseError, match="must be text"):
        parse_storage(b"<p>x</p>")  # type: ignore[arg-type]
    assert parse_storage("") == [] and parse_storage("<p> </p><hr />") == []


def test_parse_document_dispatches_confluence_with_the_page_title():
    doc = Document(DocRef("s:1", "1"), "confluence", "Runbook", "https://x/wiki/1", "<h2>Step</h2><p>go</p>", "h")
    parsed = parse_document(doc)
    assert parsed.title == "Runbook" and parsed.sections[0].heading_path == ("Step",)


@pytest.mark.parametrize("start, first", [("3", 3), ("²", 1), ("٣", 1), ("-2", -2), ("9" * 5000, 1), ("x", 1)])
def test_ol_start_takes_plain_numbers_only(start, first):
    [section] = parse_storage(f'<ol start="{start}"><li>a</li><li>b</li></ol>')
    assert section.text == f"{first}. a\n{first + 1}. b"


@pytest.mark.parametrize(
    "open_, close, levels",
    [
        ("<table><tbody><tr><td>", "</td></tr></tbody></table>", 300),
        ('<ac:structured-macro ac:name="info"><ac:rich-text-body>', "</ac:rich-text-body></ac:structured-macro>", 330),
        ("<ul><li>", "</li></ul>", 330),
        ("<blockquote>", "</blockquote>", 500),
        ("<span>", "</span>", 2000),
    ],
)
def test_pathological_nesting_is_a_parse_error_naming_the_page(open_, close, levels):
    body = open_ * levels + "<p>deep</p>" + close * levels
    with pytest.raises(ParseError, match="deep|depth"):
        parse_storage(body)
    doc = Document(DocRef("wiki:42", "42"), "confluence", "Nested page", "https://x/wiki/42", body, "h")
    with pytest.raises(ParseError, match=r"^wiki:42 \('Nested page'\): .*(deep|depth)"):
        parse_document(doc)


def test_nesting_within_the_bound_parses():
    levels = (MAX_DEPTH - 2) // 4  # table, tbody, tr, td per level; the wrapper root and <p> besides
    body = "<table><tbody><tr><td>" * levels + "<p>found</p>" + "</td></tr></tbody></table>" * levels
    assert [s.text for s in parse_storage(body)] == ["found"]


def test_a_lone_surrogate_becomes_a_replacement_character():
    [section] = parse_storage('<p>caf\ud800 <ac:link><ri:page ri:content-title="T\udfff"/></ac:link></p>')
    assert section.text == "caf\ufffd T\ufffd"

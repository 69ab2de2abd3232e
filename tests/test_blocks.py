"""Typed blocks from the parsers, carried through the chunker (pipeline.records.Block)."""

import pytest

from pipeline.chunk import Chunker
from pipeline.parse.blocks import Marks, code_spans
from pipeline.parse.confluence import parse_storage
from pipeline.parse.markdown import parse_markdown
from pipeline.records import BLOCK_KINDS, Block, Section, pack_blocks, unpack_blocks
from tests.conftest_confluence import STORAGE, storage_dir  # noqa: F401 (fixture)


def assert_well_formed(text: str, blocks: tuple[Block, ...]) -> None:
    """Blocks in order, apart, inside the text, tight to it; code spans inside their block."""
    end = 0
    for b in blocks:
        assert b.kind in BLOCK_KINDS
        assert end <= b.start < b.end <= len(text), (b, end, len(text))
        piece = text[b.start : b.end]
        assert piece == piece.strip(), f"block not tight: {piece!r}"
        for s, e in b.code:
            assert b.start <= s < e <= b.end and text[s:e].strip()
        end = b.end


def described(section: Section) -> list[tuple]:
    return [
        (b.kind, section.text[b.start : b.end], b.header, b.cells, [section.text[s:e] for s, e in b.code], b.lang)
        for b in section.blocks
    ]


MARKDOWN = """\
# Service

Set `timeout` to ``30 ` s`` here.

- restart with `systemctl restart app`
  - then check
- done

## Settings

| Setting | Default |
|---------|---------|
| `timeout` | 30s |
| retries | 3 |

Port
: The TCP port, `8443` by default.

!!! warning "Careful"
    Never edit the lock.

> [!NOTE]
> Logs rotate daily.

> Quoted advice.

```python title="x"
print(1)
```

    indented code

<div>raw html</div>
"""


def test_markdown_blocks():
    top, settings = parse_markdown(MARKDOWN).sections
    assert described(top) == [
        ("paragraph", "Set `timeout` to ``30 ` s`` here.", (), (), ["timeout", "30 ` s"], None),
        ("list_item", "- restart with `systemctl restart app`", (), (), ["systemctl restart app"], None),
        ("list_item", "- then check", (), (), [], None),
        ("list_item", "- done", (), (), [], None),
    ]
    assert described(settings) == [
        ("table_row", "| `timeout` | 30s |", ("Setting", "Default"), ("`timeout`", "30s"), ["timeout"], None),
        ("table_row", "| retries | 3 |", ("Setting", "Default"), ("retries", "3"), [], None),
        ("term", "Port", (), (), [], None),
        ("definition", ": The TCP port, `8443` by default.", (), (), ["8443"], None),
        ("note", '!!! warning "Careful"', (), (), [], None),
        ("note", "Never edit the lock.", (), (), [], None),
        ("note", "> [!NOTE]\n> Logs rotate daily.", (), (), [], None),
        ("quote", "> Quoted advice.", (), (), [], None),
        ("code", "print(1)", (), (), [], "python"),
        ("code", "indented code", (), (), [], None),
        ("paragraph", "<div>raw html</div>", (), (), [], None),
    ]
    for s in (top, settings):
        assert_well_formed(s.text, s.blocks)


def test_markdown_blocks_keep_the_section_text_and_front_matter_offsets():
    text = "---\ntitle: T\n---\nintro `x`\n\n# H\n\n```\nunclosed fence\nstill code"
    parsed = parse_markdown(text)
    assert parsed.title == "T"
    intro, h = parsed.sections
    assert described(intro) == [("paragraph", "intro `x`", (), (), ["x"], None)]
    assert described(h) == [("code", "unclosed fence\nstill code", (), (), [], None)]


def test_code_spans_follow_commonmark():
    text = "a `b` c ``d`e`` \\`not` f ``` g"
    assert [text[s:e] for s, e in code_spans(text)] == ["b", "d`e"]
    assert code_spans("no ` closer") == ()


def test_blocks_pack_compactly_and_back():
    blocks = (
        Block("paragraph", 0, 5),
        Block("table_row", 6, 20, ("A", "B"), ("1", "2"), ((8, 9),)),
        Block("code", 21, 30, lang="sh"),
    )
    packed = pack_blocks(blocks)
    assert packed[0] == ["paragraph", 0, 5] and packed[2] == ["code", 21, 30, [], [], [], "sh"]
    assert unpack_blocks(packed) == blocks and unpack_blocks(None) == ()


STORAGE_PAGE = """\
<h1>Config</h1><p>Set <code>timeout</code> to 30.</p>
<table><tbody><tr><th>Setting</th><th>Default</th></tr>
<tr><td><code>timeout</code></td><td>30s</td></tr><tr><td>retries</td><td></td></tr></tbody></table>
<ac:structured-macro ac:name="code"><ac:parameter ac:name="language">bash</ac:parameter>
<ac:parameter ac:name="title">Restart</ac:parameter>
<ac:plain-text-body><![CDATA[systemctl restart app]]></ac:plain-text-body></ac:structured-macro>
<ac:structured-macro ac:name="warning"><ac:rich-text-body><p>Do not <code>rm</code> it.</p>
<ul><li>not even once</li></ul></ac:rich-text-body></ac:structured-macro>
<ul><li>a <code>b</code><ul><li>nested</li></ul></li><li>c</li></ul>
<blockquote><p>quoted</p></blockquote><pre>raw\npre</pre>
<table><tr><td>no</td><td>header</td></tr></table>
"""


def test_confluence_blocks():
    (section,) = parse_storage(STORAGE_PAGE)
    assert described(section) == [
        ("paragraph", "Set `timeout` to 30.", (), (), ["timeout"], None),
        (
            "table_row",
            "Setting: `timeout` | Default: 30s",
            ("Setting", "Default"),
            ("`timeout`", "30s"),
            ["timeout"],
            None,
        ),
        ("table_row", "Setting: retries", ("Setting", "Default"), ("retries", ""), [], None),
        ("paragraph", "Restart", (), (), [], None),
        ("code", "systemctl restart app", (), (), [], "bash"),
        ("note", "Warning:\nDo not `rm` it.", (), (), ["rm"], None),
        ("list_item", "- not even once", (), (), [], None),
        ("list_item", "- a `b`", (), (), ["b"], None),
        ("list_item", "- nested", (), (), [], None),
        ("list_item", "- c", (), (), [], None),
        ("quote", "quoted", (), (), [], None),
        ("code", "raw\npre", (), (), [], None),
        ("table_row", "no | header", (), ("no", "header"), [], None),
    ]
    assert_well_formed(section.text, section.blocks)


def test_confluence_marks_in_a_source_are_not_read_as_marks():
    (section,) = parse_storage("<p>odd \ufdd0 1\ufdd1 chars\ufdd2 here</p>")
    assert "\ufdd0" not in section.text and section.blocks[0].kind == "paragraph"
    assert section.text[section.blocks[0].start : section.blocks[0].end] == section.text


def test_html_through_the_confluence_walk_has_blocks_and_no_stray_marks():
    from pipeline.parse.html import parse_html

    page = "<h1>T</h1><p>odd \ufdd2 <code>z</code></p><table><tr><th>A</th><th>B</th></tr><tr><td>1</td></tr></table>"
    (section,) = parse_html(f"<html><body>{page}</body></html>").sections
    assert described(section) == [
        ("paragraph", "odd \ufdd2 `z`", (), (), ["z"], None),
        ("table_row", "A | B", (), ("A", "B"), [], None),
        ("table_row", "A: 1", ("A", "B"), ("1",), [], None),
    ]


def test_html_definition_lists_and_code_languages_from_classes():
    from pipeline.parse.html import parse_html

    page = (
        "<h1>T</h1><dl><dt><code>--verbose</code></dt><dd><p>Say more.</p><p>Much more.</p></dd>"
        "<dt>-q</dt><dd>Quiet</dd></dl><div class='highlight-python'><div class='highlight'><pre>print(1)</pre>"
        "</div></div><pre><code class='language-sh'>ls</code></pre>"
    )
    # A page with no heading below its title is cut at its terms (a reader sees them as headings)
    first, second = parse_html(f"<html><body>{page}</body></html>").sections
    assert (first.heading_path, second.heading_path) == (("T", "--verbose"), ("T", "-q"))
    assert described(first) == [
        ("definition", "Say more.", (), (), [], None),
        ("definition", "Much more.", (), (), [], None),
    ]
    assert described(second) == [
        ("definition", "Quiet", (), (), [], None),
        ("code", "print(1)", (), (), [], "python"),
        ("code", "ls", (), (), [], "sh"),
    ]
    assert "```python\nprint(1)\n```" in second.text


def test_marks_nest_and_hold():
    m = Marks()
    inner = m.block("paragraph", "item " + Marks.code("x"))
    nested = m.block("list_item", "- sub")
    text, blocks = m.read(m.block("list_item", f"- {inner}\n  {nested}") + "\n\n" + m.block("code", "a\n\nb"))
    assert text == "- item `x`\n  - sub\n\na\n\nb"
    assert [(b.kind, text[b.start : b.end], [text[s:e] for s, e in b.code]) for b in blocks] == [
        ("list_item", "- item `x`", ["x"]),
        ("list_item", "- sub", []),
        ("code", "a\n\nb", []),
    ]


@pytest.mark.parametrize("name", sorted(p.name for p in STORAGE.glob("*.xhtml")) if STORAGE.is_dir() else [])
def test_shared_confluence_pages_have_well_formed_blocks(name, storage_dir):
    for s in parse_storage((storage_dir / name).read_text(encoding="utf-8")):
        assert s.blocks, f"{name}: a section without blocks: {s.text[:80]!r}"
        assert_well_formed(s.text, s.blocks)
        assert "\ufdd0" not in s.text and "\ufdd3" not in s.text, "marks leaked into the text"


def _blocks_of(name: str) -> list[tuple[str, Block]]:
    return [(s.text, b) for s in parse_storage((STORAGE / name).read_text(encoding="utf-8")) for b in s.blocks]


def test_shared_confluence_pages_blocks_carry_headers_languages_and_notes(storage_dir):
    rows = [(t, b) for t, b in _blocks_of("md2conf-table.xhtml") if b.kind == "table_row"]
    assert ("Arabic", "Roman") in {b.header for _, b in rows}
    row = next(t[b.start : b.end] for t, b in rows if b.cells == ("1986", "MCMLXXXVI"))
    assert row == "Arabic: 1986 | Roman: MCMLXXXVI"
    langs = {b.lang for _, b in _blocks_of("md2conf-code.xhtml") if b.kind == "code"}
    assert {"py", "java"} <= langs and None in langs
    notes = [t[b.start : b.end] for t, b in _blocks_of("querypie-panels.xhtml") if b.kind == "note"]
    assert "Warning:\nThis is an error panel." in notes


@pytest.fixture(scope="module")
def small_chunker():
    from pipeline.config import EmbeddingConfig
    from pipeline.embed import Embedder

    return Chunker(Embedder(EmbeddingConfig()).tokenizer, 48)  # a small window: sections pack and split


def _rendered(sections: list[Section]) -> list[str]:
    return [s.text[b.start : b.end] for s in sections for b in s.blocks]


@pytest.mark.parametrize("source", ["markdown", "confluence"])
def test_chunks_carry_their_blocks_rebased_and_clipped(small_chunker, source):
    sections = parse_markdown(MARKDOWN).sections if source == "markdown" else parse_storage(STORAGE_PAGE)
    chunks = small_chunker.chunk("Service", sections)
    rendered = _rendered(sections)
    seen = []
    for c in chunks:
        assert_well_formed(c.text, c.blocks)
        for b in c.blocks:
            piece = c.text[b.start : b.end]
            assert any(piece in r for r in rendered), f"{piece!r} is no block's text"
            seen.append(piece)
    for r in rendered:  # every block is in a chunk, whole or cut into pieces
        assert r in seen or any(p in r for p in seen if p != r), f"lost block {r!r}"
    whole = [p for p in seen if p in rendered]
    assert len(whole) >= len(rendered) // 2, "most blocks fit a chunk whole"
    assert any(b.header == ("Setting", "Default") for c in chunks for b in c.blocks)


def test_long_sections_are_cut_between_blocks(small_chunker):
    items = "\n".join(f"- step {i} runs the `tool-{i}` command on every host" for i in range(12))
    (section,) = parse_markdown(items).sections
    chunks = small_chunker.chunk("", [section])
    assert len(chunks) > 2
    items_text = _rendered([section])
    for c in chunks:
        assert_well_formed(c.text, c.blocks)
        assert [c.text[b.start : b.end] for b in c.blocks] == [ln for ln in c.text.split("\n")]
        assert all(c.text[b.start : b.end] in items_text for b in c.blocks), "no item cut in two"
        assert all(c.text[s:e].startswith("tool-") for b in c.blocks for s, e in b.code)


def test_packed_sections_shift_blocks_past_heading_lines():
    from pipeline.config import EmbeddingConfig
    from pipeline.embed import Embedder

    chunker = Chunker(Embedder(EmbeddingConfig()).tokenizer, 256)
    sections = parse_markdown(MARKDOWN).sections
    (chunk,) = chunker.chunk("Service", sections)
    assert "\n\nSettings\n" in chunk.text and "#" not in chunk.text  # a packed section's heading, no marker
    assert [chunk.text[b.start : b.end] for b in chunk.blocks] == _rendered(sections)
    assert_well_formed(chunk.text, chunk.blocks)


def test_shared_confluence_pages_chunk_with_their_blocks(small_chunker, storage_dir):
    for path in sorted(storage_dir.glob("*.xhtml")):
        sections = parse_storage(path.read_text(encoding="utf-8"))
        rendered = _rendered(sections)
        for c in small_chunker.chunk(path.stem, sections):
            assert_well_formed(c.text, c.blocks)
            assert all(any(c.text[b.start : b.end] in r for r in rendered) for b in c.blocks), path.name

"""Typed blocks from the parsers of plain text, reStructuredText, AsciiDoc, code, data, PDF and Word."""

from pathlib import Path

import pytest

from pipeline.parse.asciidoc import parse_asciidoc
from pipeline.parse.binary import extract, load
from pipeline.parse.code import parse_code
from pipeline.parse.data import parse_data
from pipeline.parse.plain import parse_rst, parse_text
from pipeline.records import Section
from tests.doc_files import make_docx, make_pdf
from tests.test_blocks import assert_well_formed


def described(sections: list[Section]) -> list[tuple]:
    out = []
    for s in sections:
        assert_well_formed(s.text, s.blocks)
        out += [(b.kind, s.text[b.start : b.end], b.lang) for b in s.blocks]
    return out


def test_plain_text_paragraphs_lists_and_indented_code():
    text = (
        "Install\n\nRun the installer, then `make check`.\n\nSteps:\n- one\n  still one\n2. two\n\n    make install\n"
    )
    assert described(parse_text(text).sections) == [
        ("paragraph", "Install", None),
        ("paragraph", "Run the installer, then `make check`.", None),
        ("paragraph", "Steps:", None),
        ("list_item", "- one\n  still one", None),
        ("list_item", "2. two", None),
        ("code", "make install", None),
    ]
    (run,) = [s for s in parse_text(text).sections if "installer" in s.text]
    assert [run.text[a:b] for a, b in run.blocks[0].code] == ["make check"]


def test_rst_literal_blocks_directives_and_quotes():
    text = """Title
=====

Run this::

    make check

.. code-block:: python

    print(1)

.. note::
   Rotate the keys.

.. warning:: Never by hand.

    Not even once.

A paragraph.

    A block quote.
"""
    assert described(parse_rst(text).sections) == [
        ("paragraph", "Run this::", None),
        ("code", "make check", None),
        ("paragraph", ".. code-block:: python", None),
        ("code", "print(1)", "python"),
        ("note", ".. note::\n   Rotate the keys.", None),
        ("note", ".. warning:: Never by hand.", None),
        ("note", "Not even once.", None),
        ("paragraph", "A paragraph.", None),
        ("quote", "A block quote.", None),
    ]


def test_asciidoc_listings_admonitions_and_definition_lists():
    text = """= Manual

== Options

--verbose::
-v::
\tSay more.

\tAlso logs each step.

--quiet:: Say nothing.

NOTE: Options go before the command.

[source,python]
----
print(1)

print(2)
----

After the listing.
"""
    assert described(parse_asciidoc(text).sections) == [
        ("term", "--verbose::\n-v", None),
        ("definition", "Say more.", None),
        ("definition", "Also logs each step.", None),
        ("term", "--quiet", None),
        ("definition", "Say nothing.", None),
        ("note", "NOTE: Options go before the command.", None),
        ("code", "print(1)", "python"),
        ("code", "print(2)", "python"),
        ("paragraph", "After the listing.", None),
    ]


def test_asciidoc_manual_from_debian_has_terms_with_code_spans():
    path = Path("/usr/share/doc/git-doc/git-commit.txt")
    if not path.is_file():
        pytest.skip("needs Debian's git-doc")
    sections = parse_asciidoc(path.read_text(encoding="utf-8")).sections
    described(sections)
    terms = [s.text[b.start : b.end] for s in sections for b in s.blocks if b.kind == "term"]
    assert "-a::\n--all" in terms and len(terms) > 30
    assert any(b.code for s in sections for b in s.blocks if b.kind == "definition")


def test_code_and_data_files_are_code_blocks_in_their_language():
    code = parse_code("import os\n\n\ndef f():\n    return 1\n", "python", "m.py").sections
    assert {b.kind for s in code for b in s.blocks} == {"code"}
    assert {b.lang for s in code for b in s.blocks} == {"python"}
    data = parse_data("a: 1\nb:\n  c: 2\n", "yaml", "x.yaml").sections
    assert described(data) == [("code", "a: 1", "yaml"), ("code", "b:\n  c: 2", "yaml")]


def test_word_lists_quotes_and_tables_with_a_header_row():
    data = make_docx(
        [
            ("h1", "Setup"),
            ("p", "Intro text."),
            ("list", "first step"),
            ("quote", "a quote"),
            ("header-table", "Setting|Default\ntimeout|30s\nretries|3"),
            ("table", "plain|row"),
        ]
    )
    (section,) = load(extract("docx", data)).sections
    assert described([section]) == [
        ("paragraph", "Intro text.", None),
        ("list_item", "first step", None),
        ("quote", "a quote", None),
        ("table_row", "Setting: timeout | Default: 30s", None),
        ("table_row", "Setting: retries | Default: 3", None),
        ("table_row", "plain | row", None),
    ]
    rows = [b for b in section.blocks if b.kind == "table_row"]
    assert rows[0].header == ("Setting", "Default") and rows[0].cells == ("timeout", "30s")
    assert rows[2].header == () and rows[2].cells == ("plain", "row")


def test_pdf_pages_are_paragraphs():
    data = make_pdf([["First page line one", "line two"], ["Second page"]])
    sections = load(extract("pdf", data)).sections
    kinds = described(sections)
    assert [s.page for s in sections] == [1, 2] and {k for k, _, _ in kinds} == {"paragraph"}
    assert "Second page" in kinds[-1][1]

"""AsciiDoc sections (pipeline.parse.asciidoc) and plain text's title (pipeline.parse.plain)."""

from __future__ import annotations

from pipeline.parse import parse_document
from pipeline.parse.asciidoc import looks_like_asciidoc, parse_asciidoc
from pipeline.parse.plain import parse_text
from pipeline.records import DocRef, Document


def paths(parsed) -> list[tuple[tuple[str, ...], str]]:
    return [(s.heading_path, s.text.split("\n")[0]) for s in parsed.sections]


def test_both_title_styles_blocks_and_levels():
    doc = """= Operator Manual
:toc:

Intro.

== Install

Run it.

----
== inside a listing, not a title
----

=== Deeper

Deep text.

Old Style
---------

Setext text.

Sub Style
~~~~~~~~~

Sub text.
"""
    parsed = parse_asciidoc(doc)
    assert parsed.title == "Operator Manual" and not parsed.pack  # every chunk names its own section
    assert paths(parsed) == [
        (("Operator Manual",), ":toc:"),
        (("Operator Manual",), "Intro."),
        (("Operator Manual", "Install"), "Run it."),
        (("Operator Manual", "Install"), "----"),
        (("Operator Manual", "Install", "Deeper"), "Deep text."),
        (("Operator Manual", "Old Style"), "Setext text."),
        (("Operator Manual", "Old Style", "Sub Style"), "Sub text."),
    ]


def test_a_git_manual_page_and_an_unclosed_fence():
    page = """git-add(1)
==========

NAME
----
git-add - Add file contents to the index

SYNOPSIS
--------
[verse]
'git add' [--verbose | -v]

DESCRIPTION
-----------
Updates the index.

....
never closed: text, and the titles after it still count

OPTIONS
-------
-n:: Dry run.
"""
    parsed = parse_asciidoc(page)
    assert parsed.title == "git-add(1)"
    assert [p[-1] for p, _ in paths(parsed)] == ["NAME", "SYNOPSIS", "DESCRIPTION", "DESCRIPTION", "OPTIONS"]


def test_a_txt_file_is_asciidoc_only_when_it_has_titles():
    assert looks_like_asciidoc("Title\n=====\n\nText.\n") and looks_like_asciidoc("= T\n\ntext\n")
    assert not looks_like_asciidoc("Just prose.\n\n--\nA signature\n")
    assert not looks_like_asciidoc("a = b\nc == d\n")  # an equation is no title: not after a blank line
    ref = DocRef("s:notes.txt", "notes.txt", None, 0, 0, {})
    txt = Document(ref, "text", "notes.txt", "file:///notes.txt", "Guide\n=====\n\nSetup\n-----\n\nDo it.\n", "h")
    assert parse_document(txt).title == "Guide" and parse_document(txt).sections[0].heading_path == ("Guide", "Setup")


def test_plain_text_takes_a_standalone_short_first_line_as_its_title():
    assert parse_text("Widget Service\n\nRenders invoices.\n").title == "Widget Service"
    assert parse_text("This is a sentence that ends.\n\nMore.\n").title == ""
    assert parse_text("Only one paragraph\n").title == ""
    assert parse_text("Format: https://example.org/x\n\nMore.\n").title == ""

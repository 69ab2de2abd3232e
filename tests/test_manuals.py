"""Manuals in the shape their reader sees (issue 47): entries as sections, man pages as man pages,
furniture left out, deep links; and edits that re-chunk only what they touch (issue 49)."""

from __future__ import annotations

import pytest

from pipeline.chunk import Chunker
from pipeline.config import EmbeddingConfig, load_settings
from pipeline.embed import Embedder
from pipeline.ingest import IngestContext, ingest_source
from pipeline.parse.asciidoc import parse_asciidoc
from pipeline.parse.furniture import repeated, strip
from pipeline.parse.html import parse_html
from pipeline.parse.manpage import looks_like_man, parse_man_text
from pipeline.query import Searcher
from pipeline.query.hits import deep_url
from tests.helpers import write_files

FILLER = "The value is read when the server starts and applies to every listener it opens. "


def reference_page(n: int = 12) -> str:
    """A configuration reference: one heading, then `n` parameters as definition-list entries."""
    entries = "".join(
        f'<dt><b><a name="param_{i}">param_{i}</a> (default: {1000 + i})</b></dt>'
        f"<dd><p>Sets the limit number {i}. {FILLER * 2}</p></dd>"
        for i in range(n)
    )
    head = "<html><head><title>Parameters</title></head><body><h1>Parameters</h1><h2>Format</h2>"
    return f"{head}<dl>{entries}</dl></body></html>"


def test_definition_entries_of_a_long_section_are_its_sub_sections_with_anchors():
    parsed = parse_html(reference_page())
    entries = [s for s in parsed.sections if len(s.heading_path) == 3]
    assert len(entries) == 12
    first = entries[0]
    assert first.heading_path == ("Parameters", "Format", "param_0") and first.anchor == "param_0"
    assert first.text.startswith("param_0 (default: 1000)\n")  # the rest of the term: the entry's first line


def test_a_bold_lead_in_with_its_value_keeps_the_name_on_the_entry_s_first_line():
    # groff's HTML sets a configuration file's options as "<p><b>name:</b> value</p>", the text after it
    entries = "".join(
        f'<p style="margin-left:15%"><b>opt_{i}:</b> {i if i % 2 else "&lt;none&gt;"}</p>'
        f'<p style="margin-left:22%">Sets the limit number {i}. {FILLER * 2}</p>'
        for i in range(12)
    )
    page = f"<html><body><h1>FROB.CONF</h1><h2>FIELD DESCRIPTIONS</h2>{entries}</body></html>"
    entries_ = [s for s in parse_html(page).sections if len(s.heading_path) == 3]
    assert len(entries_) == 12
    assert entries_[1].heading_path[-1] == "opt_1" and entries_[1].text.startswith("opt_1: 1\n")
    assert entries_[2].text.startswith("opt_2: <none>\n")  # not a bare "1" or "<none>" a reader cannot place
    # a lead-in before a sentence stays its heading alone: the sentence reads without it
    note = f"<p><b>Note:</b> The daemon reads it once.</p><p>{FILLER * 3}</p>"
    page = f"<html><body><h1>Guide</h1><h2>Start</h2>{note * 6}</body></html>"
    assert not any(s.text.startswith("Note:") for s in parse_html(page).sections)


def test_a_short_definition_list_under_a_heading_stays_text():
    page = (
        "<html><body><h1>Guide</h1><h2>Words</h2><p>Intro.</p><dl><dt>alpha</dt><dd>first</dd>"
        "<dt>beta</dt><dd>second</dd><dt>gamma</dt><dd>third</dd></dl><h2>More</h2><p>x</p></body></html>"
    )
    paths = [s.heading_path for s in parse_html(page).sections]
    assert ("Guide", "Words") in paths and not any(len(p) > 2 for p in paths)


MAN_TEXT = """\
FROB.CONF(5)                  File Formats                  FROB.CONF(5)

NAME
       frob.conf - frobnicator configuration file

SYNOPSIS
       frob -c file [-v]

DESCRIPTION
       The frobnicator reads its settings from this file when it starts.
       Each line holds one directive; values are comma- or whitespace-sepa‐
       rated and the address of the site's postmaster is required: a postmas-
       ter address receives every report, and the delta-transfer mode sends
       only what changed, as every delta-transfer does for all of its delta-
       transfer runs in each of the configured modes of operation here.

   Limits
       maxconn number
              The most connections served at once. The default is 100,
              and a value of 0 means there is no limit at all for it.

       Example:

              maxconn 200
              timeout 5s

frob 1.0                       2024-01-01                  FROB.CONF(5)
"""


def test_man_text_sections_are_headings_and_prose_is_prose():
    assert looks_like_man(MAN_TEXT)
    parsed = parse_man_text(MAN_TEXT)
    assert parsed.title == "frob.conf - frobnicator configuration file"
    by_path = {s.heading_path: s for s in parsed.sections}
    assert ("SYNOPSIS",) in by_path and by_path[("SYNOPSIS",)].blocks[0].kind == "code"
    text = by_path[("DESCRIPTION",)].text
    assert "comma- or whitespace-separated" in text and "a postmaster address receives" in text
    assert "its delta-transfer runs" in text and "\n" not in text  # joined into one paragraph
    assert all("```" not in s.text and "FROB.CONF(5)" not in s.text for s in parsed.sections)
    limits = by_path[("DESCRIPTION", "Limits")]
    assert "maxconn 200" in limits.text and any(b.kind == "code" for b in limits.blocks)


def test_a_man_page_in_a_pre_with_bold_section_names_reads_as_a_man_page():
    body = MAN_TEXT.replace("\nNAME\n", "\n<b>NAME</b>\n").replace("\nDESCRIPTION\n", "\n<b>DESCRIPTION</b>\n")
    body = body.replace("\nSYNOPSIS\n", "\n<b>SYNOPSIS</b>\n")
    parsed = parse_html(f"<html><body><pre>{body}</pre></body></html>")
    paths = {s.heading_path[:1] for s in parsed.sections}
    assert {("NAME",), ("SYNOPSIS",), ("DESCRIPTION",)} <= paths
    assert not any("```" in s.text for s in parsed.sections)


def page_with_furniture(i: int) -> str:
    return (
        f"<html><body><p>Small. Fast. Reliable. Choose any three.</p><h1>Page {i}</h1>"
        f"<p>Content of page {i} about topic {i * 7}.</p></body></html>"
    )


def test_furniture_is_what_most_pages_repeat():
    pages = [parse_html(page_with_furniture(i)).sections for i in range(4)]
    found = repeated(pages)
    assert len(found) == 1
    kept = [s for p in pages for s in strip(p, found)]
    assert all("Choose any three" not in s.text for s in kept)
    assert all(any(f"Content of page {i}" in s.text for s in strip(p, found)) for i, p in enumerate(pages))
    assert repeated(pages[:2]) == set()  # two pages say nothing about a site


def test_deep_url():
    assert deep_url("file:///d/c.html", "maxconn (Global)") == "file:///d/c.html#maxconn%20(Global)"
    assert deep_url("https://x/p", None) == "https://x/p" and deep_url("https://x/p#a", "b") == "https://x/p#a"


@pytest.fixture(scope="module")
def chunker():
    emb = Embedder(EmbeddingConfig())
    return Chunker(emb.tokenizer, emb.document_window)


def test_a_sentence_added_re_chunks_only_the_chunks_it_touches(chunker):
    parsed = parse_html(reference_page(40))
    before = [c.embed_text for c in chunker.chunk(parsed.title, parsed.sections)]
    edited = reference_page(40).replace("Sets the limit number 20.", "Sets the limit number 20. It was new.")
    after = parse_html(edited)
    new = [c.embed_text for c in chunker.chunk(after.title, after.sections) if c.embed_text not in before]
    assert len(new) == 1 and "It was new." in new[0]


def test_ingest_cites_the_entry_with_its_anchor_and_leaves_furniture_out(
    tmp_path, write_config, database_url, embedder
):
    pages = {f"p{i}.html": page_with_furniture(i) for i in range(4)}
    write_files(tmp_path / "site", {**pages, "ref.html": reference_page()})
    config = write_config([{"name": "site", "type": "directory", "path": str(tmp_path / "site")}])
    ingest_source(IngestContext(load_settings(config), url=database_url, embedder=embedder), "site")
    searcher = Searcher(load_settings(config), url=database_url, embedder=embedder)
    hit = searcher.search("param_7 default", limit=3, mode="keyword")[0]
    assert hit.section.endswith("param_7") and hit.url.endswith("ref.html#param_7") and hit.anchor == "param_7"
    assert not searcher.search("Choose any three", limit=5, mode="keyword")


def test_an_asciidoc_labelled_list_of_options_is_the_section_s_entries():
    options = "".join(f"-{c}::\n--long-{c}::\n\tMakes the tool do thing {c}. {FILLER * 3}\n\n" for c in "abcd")
    parsed = parse_asciidoc(f"= tool(1)\n\nOPTIONS\n-------\n{options}")
    entries = [s for s in parsed.sections if len(s.heading_path) == 3]
    assert [s.heading_path[-1] for s in entries] == [f"-{c} / --long-{c}" for c in "abcd"]
    assert all(s.alone and s.text.startswith(f"-{c}::") for s, c in zip(entries, "abcd", strict=True))

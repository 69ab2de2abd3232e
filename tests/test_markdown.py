"""Markdown sectioning: heading paths, fences, front matter."""

from pipeline.parse.markdown import parse_markdown


def paths(text):
    return [(s.heading_path, s.text.strip()) for s in parse_markdown(text).sections]


def test_heading_paths_nest_and_pop():
    doc = "# Guide\nintro\n## Install\n### Linux\napt\n### Mac\nbrew\n## Use\nrun it\n"
    assert paths(doc) == [
        (("Guide",), "intro"),
        (("Guide", "Install", "Linux"), "apt"),
        (("Guide", "Install", "Mac"), "brew"),
        (("Guide", "Use"), "run it"),
    ]
    assert parse_markdown(doc).title == "Guide"


def test_headings_inside_code_fences_are_code():
    doc = "# Script\n```bash\n# not a heading\necho hi\n```\n~~~\n## nor this\n~~~\n"
    (path, text), = paths(doc)
    assert path == ("Script",) and "# not a heading" in text and "## nor this" in text


def test_setext_headings_and_preamble():
    doc = "preamble line\n\nTitle\n=====\nbody\n\nPart\n----\nmore\n"
    assert paths(doc) == [((), "preamble line"), (("Title",), "body"), (("Title", "Part"), "more")]


def test_front_matter_title_and_no_bogus_heading():
    doc = "---\ntitle: Runbook\nowner: ops\n---\n## Steps\ndo it\n"
    parsed = parse_markdown(doc)
    assert parsed.title == "Runbook"
    assert [(s.heading_path, s.text.strip()) for s in parsed.sections] == [(("Steps",), "do it")]


def test_no_h1_means_no_title():
    # A title taken from the file name would make renamed files' vectors unreusable.
    assert parse_markdown("## Summary\ntext\n").title == ""

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
    ((path, text),) = paths(doc)
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


def test_line_ends_are_markdown_its():
    # CR LF and lone CR end lines; U+2028, form feed & co are characters inside a line.
    expected = [(("A",), "alpha"), (("A", "B"), "beta \u2028 gamma")]
    assert paths("# A\r\nalpha\r\n## B\rbeta \u2028 gamma\x0c\n") == expected
    assert paths("intro \u2028 x\n\n# H\ntext\n") == [((), "intro \u2028 x"), (("H",), "text")]


def test_a_rule_opening_prose_is_not_front_matter():
    doc = "---\n\nFirst paragraph.\n\nSecond\n---\nafter\n"
    assert [text for _, text in paths(doc)][0].startswith("---\n\nFirst paragraph.")
    assert parse_markdown("---\ntitle: T\n---\nbody\n").title == "T"
    assert paths("---\r\ntitle: T\r\n---\r\nbody\r\n") == [((), "body")]


def test_lone_surrogates_are_replaced():
    parsed = parse_markdown("# Ti\ud800tle\n\nbo\udfffdy\n")
    assert parsed.title == "Ti\ufffdtle" and parsed.sections[0].text.strip() == "bo\ufffddy"

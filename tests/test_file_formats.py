"""Parsing by format: code by symbol (tree-sitter), data by top-level key, PDF by page, Word by heading,
HTML through the Confluence walk, rst and text by paragraph; pages kept through the chunker."""

from __future__ import annotations

import pytest

from pipeline.chunk import Chunker
from pipeline.errors import ParseError
from pipeline.parse import formats, parse_document
from pipeline.parse.binary import extract, load
from pipeline.parse.code import parse_code
from pipeline.parse.data import parse_data
from pipeline.parse.docx import parse_docx
from pipeline.parse.html import parse_html
from pipeline.parse.pdf import parse_pdf
from pipeline.parse.plain import parse_rst, parse_text
from pipeline.query.hits import cite_label
from pipeline.records import DocRef, Document, Section
from tests.doc_files import make_docx, make_pdf


def paths(parsed) -> list[str]:
    return [" › ".join(s.heading_path) for s in parsed.sections]


def test_formats_come_from_names():
    assert [
        formats.detect(p)
        for p in (
            "a/b.py",
            "x.TS",
            "Dockerfile",
            "README",
            "guide.pdf",
            "notes.rst",
            "c.yml",
            "page.html",
            "blob.xyz",
            ".gitignore",
        )
    ] == ["python", "typescript", "dockerfile", "text", "pdf", "rst", "yaml", "html", None, None]
    assert formats.is_binary_name("logo.PNG") and formats.is_binary_name("a.tar.gz")
    assert not formats.is_binary_name("guide.pdf")  # a document, extracted at fetch


PYTHON = '''"""Module doc."""
import os


# Packs sections into chunks.
@dataclass
class Chunker:
    """Doc."""

    limit = 3

    def chunk(self, sections):
        def inner():
            pass
        return sections


def helper():
    return 1
'''


def test_python_symbols_nest_module_class_method():
    parsed = parse_code(PYTHON, "python", "pipeline/chunk.py")
    assert paths(parsed) == [
        "pipeline.chunk",
        "pipeline.chunk › Chunker",
        "pipeline.chunk › Chunker › chunk",
        "pipeline.chunk › helper",
    ]
    chunker_head = parsed.sections[1].text
    assert chunker_head.startswith("# Packs sections") and "@dataclass" in chunker_head  # comments, decorators
    assert "def inner" in parsed.sections[2].text  # a nested function stays in its function


@pytest.mark.parametrize(
    ("fmt", "path", "source", "expected"),
    [
        (
            "go",
            "srv/main.go",
            'package p\n\nimport "fmt"\n\n// S holds.\ntype S struct{ a int }\n\n'
            "func (s *S) Serve() error {\n\treturn nil\n}\n\nfunc main() {\n\tfmt.Println()\n}\n",
            ["main.go", "main.go › S", "main.go › S › Serve", "main.go › main"],
        ),
        (
            "typescript",
            "web/app.ts",
            "import x from 'y';\n\nexport class Api {\n  base = '';\n  get(p: string) {\n"
            "    return p;\n  }\n}\n\nexport const handler = (e: Event) => e;\n\ninterface Opts { a: number }\n",
            ["app.ts", "app.ts › Api", "app.ts › Api › get", "app.ts › handler", "app.ts › Opts"],
        ),
        (
            "rust",
            "src/lib.rs",
            "use std::fmt;\n\nstruct S;\n\nimpl fmt::Display for S {\n    fn fmt(&self) {}\n}\n",
            ["lib.rs", "lib.rs › S", "lib.rs › S", "lib.rs › S › fmt"],
        ),  # an impl is named by its type
        (
            "java",
            "A.java",
            "package a;\n\npublic class A {\n  int x;\n  void run() {\n  }\n}\n",
            ["A.java", "A.java › A", "A.java › A › run"],
        ),
        ("c", "a.c", "#include <stdio.h>\n\nstatic int *make(int n) {\n  return 0;\n}\n", ["a.c", "a.c › make"]),
        (
            "cpp",
            "a.cpp",
            "namespace ns {\nclass C {\n  int f() { return 1; }\n};\n}\n",
            ["a.cpp › ns", "a.cpp › ns › C", "a.cpp › ns › C › f"],
        ),
        ("shell", "run.sh", "#!/bin/sh\nset -e\n\ndeploy() {\n  echo go\n}\n", ["run.sh", "run.sh › deploy"]),
        ("sql", "s.sql", "CREATE TABLE users (id int);\nSELECT 1;\n", ["s.sql › table users", "s.sql"]),
    ],
)
def test_languages_split_at_symbols(fmt, path, source, expected):
    parsed = parse_code(source, fmt, path)
    assert paths(parsed) == expected and not parsed.pack  # a chunk names one symbol


def test_rust_impl_is_named_by_its_type():
    parsed = parse_code("struct S;\nimpl<T> Wrapper<T> {\n    fn new() {}\n}\n", "rust", "w.rs")
    assert "w.rs › Wrapper › new" in paths(parsed)


def test_unknown_languages_and_symbol_less_scripts_fall_back_to_lines():
    assert paths(parse_code("def a\nend\n\ndef b\nend\n", "ruby", "x.rb")) == ["x.rb", "x.rb"]
    assert paths(parse_code("x = 1\n\ny = 2\n", "python", "s.py")) == ["s", "s"]


def test_code_never_exceeds_the_window(embedder):
    body = "\n".join(f"    total += compute_value_{i}(argument_{i}) * factor" for i in range(400))
    source = f"def huge(argument):\n    total = 0\n{body}\n    return total\n"
    parsed = parse_code(source, "python", "m.py")
    chunker = Chunker(embedder.tokenizer, embedder.max_seq_length, 128)
    chunks = chunker.chunk(parsed.title, parsed.sections)
    assert len(chunks) > 5 and all(c.token_count <= 128 for c in chunks)
    assert {c.heading_path for c in chunks} == {("m", "huge")}
    assert all(c.text.count("\n") >= 1 for c in chunks[:-1])  # cut at lines, not mid-line


def test_data_files_split_by_top_level_keys():
    yaml_text = "# service\nname: api\n\nservices:\n  web:\n    image: x\n# the db\ndatabase:\n  url: pg\n"
    assert paths(parse_data(yaml_text, "yaml", "conf/app.yml")) == [
        "app.yml › name",
        "app.yml › services",
        "app.yml › database",
    ]
    assert parse_data(yaml_text, "yaml", "app.yml").sections[2].text.startswith("# the db")
    toml_text = 'title = "x"\n\n[project]\nname = "d"\n\n[tool.ruff]\nline-length = 1\n'
    assert paths(parse_data(toml_text, "toml", "pyproject.toml")) == [
        "pyproject.toml",
        "pyproject.toml › project",
        "pyproject.toml › tool.ruff",
    ]
    parsed = parse_data('{"scripts": {"build": "tsc"}, "deps": [1, 2]}', "json", "package.json")
    assert paths(parsed) == ["package.json › scripts", "package.json › deps"]
    assert '"build": "tsc"' in parsed.sections[0].text
    assert paths(parse_data("[1, 2]", "json", "a.json")) == ["a.json"]  # not an object: by lines


def test_rst_titles_and_text_paragraphs():
    rst = "=====\nGuide\n=====\n\nIntro para.\n\nInstall\n-------\n\nStep one.\n\nStep two.\n\nUse\n---\n\nGo.\n"
    parsed = parse_rst(rst)
    assert parsed.title == "Guide"
    assert [(s.heading_path, s.text) for s in parsed.sections] == [
        (("Guide",), "Intro para."),
        (("Guide", "Install"), "Step one."),
        (("Guide", "Install"), "Step two."),
        (("Guide", "Use"), "Go."),
    ]
    assert [s.text for s in parse_text("one\ntwo\n\n\nthree\n").sections] == ["one\ntwo", "three"]


def test_html_goes_through_the_confluence_walk():
    parsed = parse_html(
        "<html><head><title>Ops</title><script>evil()</script></head><body><nav>menu</nav>"
        "<main><h1>Runbook</h1><p>Start.</p><article><h2>Restart</h2><ul><li>stop</li>"
        "<li>start</li></ul></article></main></body></html>"
    )
    assert parsed.title == "Ops"
    assert [(s.heading_path, s.text) for s in parsed.sections] == [
        (("Runbook",), "Start."),
        (("Runbook", "Restart"), "- stop\n- start"),
    ]
    with pytest.raises(ParseError, match="nests"):
        parse_html("<div>" * 300 + "x" + "</div>" * 300)


GUIDE = [
    ["Welcome to the guide."],
    ["Setup", "Install the flux capacitor before the first run."],
    ["Usage", "Turn the dial to 88."],
]


def test_pdf_sections_carry_pages_and_outline_headings():
    pdf = make_pdf(GUIDE, title="Guide", outline=[("Setup", 1, 1), ("Usage", 2, 1)])
    parsed = parse_pdf(pdf)
    assert parsed.title == "Guide"
    assert [(s.page, s.heading_path) for s in parsed.sections] == [(1, ()), (2, ("Setup",)), (3, ("Usage",))]
    assert "flux capacitor" in parsed.sections[1].text and "Setup" not in parsed.sections[1].text
    assert [(s.page, s.heading_path) for s in parse_pdf(make_pdf(GUIDE)).sections] == [(1, ()), (2, ()), (3, ())]


def test_unreadable_pdfs_and_docx_are_parse_errors():
    with pytest.raises(ParseError, match="encrypted"):
        parse_pdf(make_pdf(GUIDE, password="s3cret"))
    with pytest.raises(ParseError, match="not a readable PDF"):
        parse_pdf(make_pdf(GUIDE)[:300])
    with pytest.raises(ParseError, match="no extractable text"):
        extract("pdf", make_pdf([[]]))
    with pytest.raises(ParseError, match="encrypted"):
        parse_docx(b"\xd0\xcf\x11\xe0" + b"\0" * 100)
    with pytest.raises(ParseError, match="not a readable Word"):
        parse_docx(b"PK\x03\x04 broken")


def test_docx_headings_are_sections():
    parsed = parse_docx(
        make_docx(
            [
                ("h1", "Intro"),
                ("p", "Hello."),
                ("h2", "Limits"),
                ("p", "Ten per day."),
                ("table", "plan|quota\nfree|10"),
                ("h1", "Other"),
                ("p", "Bye."),
            ],
            title="Policy",
        )
    )
    assert parsed.title == "Policy"
    assert [(s.heading_path, s.text) for s in parsed.sections] == [
        (("Intro",), "Hello."),
        (("Intro", "Limits"), "Ten per day.\n\nplan | quota\nfree | 10"),
        (("Other",), "Bye."),
    ]


def test_binary_documents_round_trip_as_text_and_chunk_per_page(embedder):
    content = extract("pdf", make_pdf(GUIDE, outline=[("Setup", 1, 1)]))
    doc = Document(DocRef("s:guide.pdf", "guide.pdf"), "pdf", "guide.pdf", "file:///guide.pdf", content, "h")
    parsed = parse_document(doc)
    assert parsed == load(content)
    chunks = Chunker(embedder.tokenizer, embedder.max_seq_length).chunk(parsed.title, parsed.sections)
    assert [(c.ordinal, c.page) for c in chunks] == [(0, 1), (1, 2), (2, 3)]  # short pages are never packed
    assert cite_label("guide.pdf", chunks[1].page, " > ".join(chunks[1].heading_path)) == "guide.pdf, page 2, Setup"


def test_sections_without_pages_still_pack():
    from pipeline.records import Chunk

    secs = [Section(("A",), "one"), Section(("A",), "two")]
    assert all(s.page is None for s in secs)
    assert Chunk(0, (), "t", "t", 1).page is None
    assert cite_label("Guide", None, "Guide > Setup > Install") == "Guide, Setup › Install"


def test_one_title_section_label_for_the_cli_the_answer_prompts_and_the_page():
    """A top heading that repeats the title is shown once, nested sections joined by ›, everywhere."""
    from pipeline.answers.model import Evidence
    from pipeline.answers.prompts import evidence_blocks
    from pipeline.query.hits import where

    title, section = "Third-party services", "Third-party services > Hugging Face support > Tokens"
    assert where(title, section) == "Third-party services › Hugging Face support › Tokens"
    assert where(title, title) == where(title, "") == title
    assert where("", "A > B") == "A › B"
    ev = Evidence("E1", "id", "c1", "x", title, section, "https://example.org", "docs:a.md", "docs", 0, 1.0)
    assert evidence_blocks([ev]).splitlines()[0] == "[E1] " + where(title, section)


def test_hostile_inputs_are_refused_or_read_in_linear_time(monkeypatch):
    import pipeline.parse.docx as docx_module

    monkeypatch.setattr(docx_module, "MAX_INFLATED_BYTES", 1000)  # a zip bomb, scaled down
    with pytest.raises(ParseError, match="inflates to"):
        parse_docx(make_docx([("p", "x" * 5000)]))
    spaces = " " * 200_000  # a line no key regex may backtrack over quadratically
    assert paths(parse_data(f"a{spaces}\nkey: 1\n", "yaml", "x.yml")) == ["x.yml", "x.yml › key"]
    assert paths(parse_data(f"[{spaces}\n[t]\n", "toml", "x.toml")) == ["x.toml", "x.toml › t"]
    assert (
        paths(
            parse_code(
                "class A:\n" + "".join("    " * (i + 1) + f"class C{i}:\n" for i in range(60)) + "    " * 61 + "pass\n",
                "python",
                "deep.py",
            )
        )[-1].count("›")
        <= 9
    )

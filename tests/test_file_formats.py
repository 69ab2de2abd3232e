"""Parsing by format: code by symbol (tree-sitter), data by top-level key, PDF by page, Word by heading,
HTML by its main content's headings and blocks, rst and text by paragraph; pages kept through the chunker."""

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


def test_html_reads_its_main_content_in_typed_blocks():
    parsed = parse_html(
        "<html><head><title>Ops runbook</title><script>evil()</script></head><body><nav>menu</nav>"
        "<main><h1>Runbook</h1><p>Start <code>x = 1</code> now.</p><article><h2>Restart</h2><ul><li>stop</li>"
        "<li>start</li></ul></article></main></body></html>"
    )
    assert parsed.title == "Ops runbook"
    assert [(s.heading_path, s.text) for s in parsed.sections] == [
        (("Runbook",), "Start `x = 1` now."),
        (("Runbook", "Restart"), "- stop\n- start"),
    ]
    start = parsed.sections[0]
    assert [(b.kind, start.text[b.start : b.end]) for b in start.blocks] == [("paragraph", "Start `x = 1` now.")]
    assert [start.text[a:b] for a, b in start.blocks[0].code] == ["x = 1"]  # the span inside the backticks
    assert [b.kind for b in parsed.sections[1].blocks] == ["list_item", "list_item"]
    with pytest.raises(ParseError, match="nests"):
        parse_html("<div>" * 300 + "x" + "</div>" * 300)


def test_html_tables_code_notes_and_terms_are_blocks():
    parsed = parse_html(
        '<?xml version="1.0" encoding="UTF-8"?><html><body><h1>Ref</h1><h2>Types</h2>'
        "<table><tr><th>Name</th><th>Size</th></tr><tr><td><code>int</code></td><td>4</td></tr></table>"
        "<pre class='language-sql'>SELECT 1;\nSELECT 2;</pre><div class='note'><h3>Note</h3><p>Mind it.</p></div>"
        "<dl><dt>work_mem</dt><dd><p>Memory per sort.</p></dd></dl><blockquote>Said.</blockquote></body></html>"
    )
    (types,) = parsed.sections  # an XML declaration is read; a note's heading opens no section
    text = types.text
    got = [(b.kind, text[b.start : b.end], b.header, b.lang) for b in types.blocks]
    assert got == [
        ("table_row", "Name | Size", (), None),
        ("table_row", "Name: `int` | Size: 4", ("Name", "Size"), None),
        ("code", "SELECT 1;\nSELECT 2;", (), "sql"),
        ("note", "Note", (), None),
        ("note", "Mind it.", (), None),
        ("term", "work_mem", (), None),
        ("definition", "Memory per sort.", (), None),
        ("quote", "Said.", (), None),
    ]
    assert "```sql\nSELECT 1;\nSELECT 2;\n```" in text and types.blocks[1].cells == ("`int`", "4")
    assert [text[a:b] for a, b in types.blocks[1].code] == ["int"]


def test_html_drops_the_sites_chrome():
    parsed = parse_html(
        "<html><body><div class='navheader'><table><tr><td><a href=p>Prev</a></td><th>Chapter 5</th>"
        "<td><a href=n>Next</a></td></tr></table></div><div id='page-header'><p>Site name</p></div>"
        "<div><a href='/'>Home</a> - <a href='/m'>Menu</a> - <a href='/a'>About</a> - <a href='/d'>Download</a></div>"
        "<div role='navigation'>Contents</div><header><h1>Backups</h1></header><div><p>Languages: <a>en</a> |"
        " <a hreflang=fr href=f>fr</a> | <a hreflang=ja href=j>ja</a></p></div><p>Copy the <a href=d>data</a>"
        " directory while the server is stopped.<a href='#x'>§</a></p><div class='top'><a href='#top'>top</a></div>"
        "<div class='sphinxsidebar'>Quick search</div><footer>Copyright</footer></body></html>"
    )
    assert parsed.title == "Backups"
    assert [(s.heading_path, s.text) for s in parsed.sections] == [
        (("Backups",), "Copy the data directory while the server is stopped.")
    ]


def test_html_a_wrapper_named_for_the_menu_beside_it_is_the_page():
    parsed = parse_html(
        "<html><body class='wy-body-for-nav'><div class='wy-grid-for-nav'><nav class='wy-nav-side'>"
        "<a href='a.html'>Introduction</a> <a href='b.html'>Configuration</a></nav>"
        "<div class='wy-nav-content'><section id='intro'><h1>Introduction<a class='headerlink' href='#intro'>"
        "\uf0c1</a></h1><p>The resolver caches answers for the time their records allow.</p></section>"
        "</div></div></body></html>"
    )
    assert [(s.heading_path, s.text) for s in parsed.sections] == [
        (("Introduction",), "The resolver caches answers for the time their records allow.")
    ]


def test_html_sections_from_visible_structure_when_it_has_no_headings():
    faq = parse_html(
        "<html><head><title>No Title</title></head><body><h1>Frequently Asked Questions</h1>"
        "<dl><dt>How do I add a column?</dt><dd><p>Use ALTER TABLE.</p></dd><dt>Is it safe?</dt><dd>Yes.</dd></dl>"
        "<p><b>Maximum length of a string:</b> one billion bytes.</p>"
        "<ul><li><strong>Maximum columns</strong> 2000 by default.</li></ul>"
        "<p>Syntax:</p><svg><text>ALTER</text><text>TABLE</text><text>table-name</text></svg></body></html>"
    )
    assert faq.title == "Frequently Asked Questions"  # "No Title" shares no word with the page's headings
    assert [(s.heading_path[1:], s.text) for s in faq.sections] == [
        (("How do I add a column?",), "Use ALTER TABLE."),
        (("Is it safe?",), "Yes."),
        (("Maximum length of a string",), "one billion bytes."),
        (("Maximum columns",), "2000 by default.\n\nSyntax:\n\nALTER TABLE table-name"),
    ]


def test_html_stubs_are_no_documents():
    from pipeline.parse.html import skip_reason

    stub = '<html><head><meta http-equiv="refresh" content="0; url=./cli.html"></head><body>Redirect</body></html>'
    assert skip_reason(stub) == "a redirect stub (to ./cli.html): not indexed"
    assert parse_html(stub).sections == []
    script = "<html><body><script src=app.js></script><h1>JavaScript Required</h1><p>Enable it.</p></body></html>"
    assert skip_reason(script) and "JavaScript" in skip_reason(script)
    page = "<html><body><script>track()</script><h1>Tiny</h1><p>Short but real.</p></body></html>"
    assert skip_reason(page) is None and parse_html(page).sections


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


def test_a_reference_page_named_by_its_first_heading_holds_its_sections():
    parsed = parse_html(
        "<html><head><title>pg_dump</title></head><body><h2>pg_dump</h2><p>pg_dump — extract a database.</p>"
        "<h2>Synopsis</h2><pre>pg_dump [option...]</pre><h2>Options</h2><h3>-a</h3><p>Data only.</p></body></html>"
    )
    assert [s.heading_path for s in parsed.sections] == [
        ("pg_dump",),
        ("pg_dump", "Synopsis"),
        ("pg_dump", "Options", "-a"),
    ]


STORAGE_PAGE = """<h1>Ledger deploy</h1><p>Run <code>deploy.sh -SkipChecks</code> only in a freeze.</p>
<ac:structured-macro ac:name="code"><ac:parameter ac:name="language">bash</ac:parameter>
<ac:plain-text-body><![CDATA[systemctl restart ledger.service]]></ac:plain-text-body></ac:structured-macro>
<h2>Settings</h2><table><tbody><tr><th>Key</th><th>Default</th></tr>
<tr><td><code>timeout</code></td><td>30</td></tr></tbody></table>"""


def test_a_storage_page_kept_as_an_xml_file_is_read_as_a_wiki_page():
    def doc(name: str, content: str) -> Document:
        return Document(DocRef(f"s:{name}", name), formats.detect(name) or "", name, f"file:///{name}", content, "h")

    parsed = parse_document(doc("deploy.xml", STORAGE_PAGE))
    assert parsed.title == "Ledger deploy"  # its first level-1 heading, as in Markdown
    assert [s.heading_path for s in parsed.sections] == [("Ledger deploy",), ("Ledger deploy", "Settings")]
    first, settings = parsed.sections
    assert [(b.kind, b.lang) for b in first.blocks] == [("paragraph", None), ("code", "bash")]
    assert "`deploy.sh -SkipChecks`" in first.text
    row = settings.blocks[-1]
    assert (row.kind, row.header, settings.text[row.start : row.end]) == (
        "table_row",
        ("Key", "Default"),
        "Key: `timeout` | Default: 30",
    )
    # XML data, or XML declaring those prefixes itself, is still split as data.
    data = '<config xmlns:ac="urn:x"><ac:item name="a"/></config>'
    assert parse_document(doc("app.xml", data)).pack is False
    assert parse_document(doc("pom.xml", "<project><name>x</name></project>")).pack is False

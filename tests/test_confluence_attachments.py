"""Confluence attachments: a page's PDF and Word attachments, through the API double, indexed as child documents
cited with the page, the attachment and the PDF page; incremental by attachment version; gone with their page."""

from __future__ import annotations

import pytest

from pipeline.config import load_settings
from pipeline.ingest import IngestContext, ingest_source
from pipeline.query import Searcher
from tests.confluence_double import ConfluenceDouble
from tests.conftest_confluence import TOKEN, confluence_double, confluence_env  # noqa: F401
from tests.doc_files import make_docx, make_pdf

RUNBOOK = [
    ["Incident runbook."],
    ["Escalation", "Page the duty manager when the outage passes thirty minutes."],
    ["Postmortem", "Write the postmortem within five working days."],
]


@pytest.fixture
def wiki(confluence_double: ConfluenceDouble, write_config):
    d = confluence_double
    d.add_page("100", "Operations", "<h1>Operations</h1><p>How operations work.</p>")
    d.add_page("200", "Handbook", "<p>The team handbook.</p>")
    d.add_attachment("100", "runbook.pdf", make_pdf(RUNBOOK, outline=[("Escalation", 1, 1)]))
    d.add_attachment("100", "diagram.png", b"\x89PNG\x00", media_type="image/png")
    d.add_attachment("100", "huge.pdf", b"%PDF-1.4", size=10**9)
    d.add_attachment(
        "200",
        "leave.docx",
        make_docx([("h1", "Leave"), ("p", "Sabbaticals last three months.")]),
        media_type="application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    )
    d.add_attachment("200", "locked.pdf", make_pdf([["hidden"]], password="pw"))
    cfg = write_config(
        [
            {
                "name": "wiki",
                "type": "confluence",
                "base_url": d.base_url,
                "space": "DOCS",
                "attachments": True,
                "max_attachment_bytes": 10**6,
            }
        ]
    )
    return d, cfg


def test_attachments_are_child_documents_with_pages(wiki, database_url, embedder):
    d, cfg = wiki
    settings = load_settings(cfg)
    run = lambda: ingest_source(IngestContext(settings, url=database_url, embedder=embedder), "wiki")  # noqa: E731
    first = run()
    assert first.languages == {"confluence": 2, "pdf": 2, "docx": 1}
    assert (first.files_added, first.files_failed) == (4, 1)
    assert [f.key for f in first.failures] == ["wiki:200/attachments/att20002"]
    assert "encrypted" in first.failures[0].error
    assert [(s.path, "over max_attachment_bytes" in s.reason) for s in first.skipped_files] == [
        ("Operations/huge.pdf", True)
    ]
    assert d.downloads() == 2 + 1  # runbook, leave, locked; never the image or the oversized file
    assert TOKEN not in str(first.as_dict())

    with Searcher(settings, url=database_url, embedder=embedder, reranker=None) as s:
        hit = s.search("when do we page the duty manager during an outage?", 3)[0]
        assert (hit.doc_key, hit.page, hit.title) == ("wiki:100/attachments/att10001", 2, "Operations › runbook.pdf")
        assert hit.label() == "Operations › runbook.pdf, page 2, Escalation"
        assert s.search("how long is a sabbatical", 3)[0].doc_key == "wiki:200/attachments/att20001"

    assert run().files_unchanged == 4 and d.downloads() == 3 + 1  # only the failed one is tried again
    d.pages["100"].attachments[0].data = make_pdf([["Incident runbook, v2."], *RUNBOOK[1:]])
    d.pages["100"].attachments[0].version = 2
    third = run()
    assert (third.files_updated, third.files_unchanged) == (1, 3)

    d.delete("100")  # the page goes to the trash: its attachment goes with it
    fourth = run()
    assert fourth.files_deleted == 2
    with Searcher(settings, url=database_url, embedder=embedder, reranker=None) as s:
        assert all(not h.doc_key.startswith("wiki:100") for h in s.search("duty manager outage", 10))

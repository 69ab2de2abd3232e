"""The runbook wikis of bench/sets (Confluence storage pages written for docforge) read as a directory
source reads them, and their labelled sets hold true of the pages: every answer phrase and every
claim's evidence quote is in the parsed text (so a typo in a page or a set fails here, not in a bench)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from pipeline.config import load_settings
from pipeline.parse import formats, parse_document
from pipeline.records import DocRef, Document
from pipeline.sources import open_source

SETS = Path(__file__).resolve().parents[1] / "bench" / "sets"
WIKIS = ("runbooks-a", "runbooks-b")


def parsed_text(name: str) -> dict[str, str]:
    """{page file: its sections' text, backticks and whitespace removed}."""
    out, kinds = {}, set()
    for page in sorted((SETS / name / "pages").glob("*.xml")):
        doc = Document(
            DocRef(f"{name}:{page.name}", page.name),
            formats.detect(page.name) or "",
            page.name,
            page.as_uri(),
            page.read_text(encoding="utf-8"),
            "h",
        )
        parsed = parse_document(doc)
        assert parsed.title and parsed.title != page.name, page.name  # its <h1>, not its file name
        kinds.update(b.kind for s in parsed.sections for b in s.blocks)
        out[page.name] = _flat(" ".join(" ".join(s.heading_path) + " " + s.text for s in parsed.sections))
    assert {"paragraph", "list_item", "table_row", "code", "note"} <= kinds  # the storage markup the pages use
    return out


def _flat(text: str) -> str:
    """Without whitespace, backticks and list markers: a quote may run across list items."""
    return re.sub(r"\s+|`", "", re.sub(r"(?m)^\s*(?:[-*]|[0-9]+\.)\s+", "", text))


@pytest.mark.parametrize("name", WIKIS)
def test_answer_phrases_and_evidence_quotes_are_in_the_parsed_pages(name):
    pages = parsed_text(name)
    assert 8 <= len(pages) <= 10
    whole = "".join(pages.values())
    rows = [json.loads(line) for line in (SETS / name / "questions.jsonl").read_text().splitlines()]
    assert sum(r["phrases"] is not None for r in rows) >= 40 and sum(r["phrases"] is None for r in rows) >= 8
    for r in rows:
        if r["phrases"] is not None:
            assert any(_flat(p) in whole for p in r["phrases"]), r["question"]
    claims = [json.loads(line) for line in (SETS / name / "claims.jsonl").read_text().splitlines()]
    assert len(claims) >= 50 and {c["label"] for c in claims} == {"supported", "unsupported"}
    for c in claims:
        page = pages[Path(c["source"]).name]
        # a table row is quoted as the parser writes it ("Header: cell | ..."): each cell is on the page
        for part in re.split(r" \| |: ", c["evidence"]) if " | " in c["evidence"] else [c["evidence"]]:
            assert _flat(part) in page, c["id"]


def test_a_directory_source_reads_the_pages_with_their_titles(write_config):
    config = write_config([{"name": "wiki", "type": "directory", "path": str(SETS / "runbooks-b" / "pages")}])
    settings = load_settings(config)
    src = open_source(settings, settings.source("wiki"))
    refs = src.list_refs()
    assert {r.meta["format"] for r in refs} == {"xml"} and not src.skipped
    docs = [d for d in src.fetch(refs) if isinstance(d, Document)]
    titles = {d.ref.path: parse_document(d).title for d in docs}
    assert len(titles) == len(refs)
    assert titles["edge-gateway-tls.xml"] == "Edge gateway and TLS"
    assert titles["dispatcher-config.xml"] == "courier dispatcher.xml reference"

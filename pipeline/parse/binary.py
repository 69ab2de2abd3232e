"""Binary documents (PDF, Word): extracted to text when fetched, parsed from that text when chunked.

`Document.content` is text, and so is everything staged between the ingest
stages. A PDF or .docx is therefore turned into text once, at fetch: `extract`
parses the bytes into sections (with their pages) and writes them as a small
JSON text; `load` reads that back into sections in the chunk stage. Binary bytes
never reach the store, the content hash is the hash of what is indexed (a file
re-saved with the same text is not re-embedded), and a file that cannot be read
(encrypted, corrupt) fails at fetch, where the listing's other files go on.
"""

from __future__ import annotations

import json

from pipeline.errors import ParseError
from pipeline.parse.parsed import Parsed
from pipeline.records import Section, pack_blocks, unpack_blocks

FORMAT_VERSION = 2  # 2: blocks; of the JSON below; bump it with CHUNKER_VERSION if its meaning changes


def extract(kind: str, data: bytes) -> str:
    """The document's sections as the JSON text `load` reads; ParseError when the bytes cannot be read."""
    if kind == "pdf":
        from pipeline.parse.pdf import parse_pdf

        parsed = parse_pdf(data)
    elif kind == "docx":
        from pipeline.parse.docx import parse_docx

        parsed = parse_docx(data)
    else:
        raise ParseError(f"no extractor for binary format {kind!r}")
    if not any(s.text.strip() for s in parsed.sections):
        raise ParseError(f"the {kind.upper()} holds no extractable text (a scan without OCR?): skipped")
    return dump(parsed)


def dump(parsed: Parsed) -> str:
    sections = [
        {"path": list(s.heading_path), "page": s.page, "text": s.text, "blocks": pack_blocks(s.blocks)}
        for s in parsed.sections
    ]
    return json.dumps({"v": FORMAT_VERSION, "title": parsed.title, "sections": sections}, ensure_ascii=False)


def load(content: str) -> Parsed:
    try:
        data = json.loads(content)
        sections = [
            Section(
                tuple(str(h) for h in s["path"]),
                str(s["text"]),
                int(s["page"]) if s.get("page") is not None else None,
                unpack_blocks(s.get("blocks")),
            )
            for s in data["sections"]
        ]
        return Parsed(str(data.get("title") or ""), sections)
    except (ValueError, KeyError, TypeError) as e:
        raise ParseError(f"extracted document text is damaged ({type(e).__name__}: {e})") from None

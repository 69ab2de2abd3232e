"""The lines an extractive answer may quote: whole sentences, list items, table rows and code blocks.

A chunk's typed blocks (pipeline.records.Block, from its parser) say what each piece of its text is: a
paragraph or note is split into sentences, a list item, a table row (with its table's header), a term
or definition and a code block are one line each, whole — an answer never quotes a fragment, and a code
answer keeps its whole statement. A chunk stored before blocks existed has none: its text is split into
paragraphs at blank lines, and a paragraph that is fenced or indented is one code block.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from pipeline.answers import words as tx
from pipeline.answers.model import Evidence

MAX_WORDS = 80  # a longer list item or definition is split into its sentences
MAX_CODE_LINES = 12  # a longer code block is no answer line (a reader would not read it as one)
# The plain-text fallback's few shapes: a fence, a list marker, a table row and its rule, a heading line.
_FENCE = re.compile(r"^\s*(```|~~~)")
_ITEM = re.compile(r"^\s*(?:[-*+•]|\d{1,3}[.)])\s+")
_ROW = re.compile(r"^\s*\|.*\|\s*$")
_RULE = re.compile(r"^[\s|:\-+]+$")
_HEADING = re.compile(r"^#{1,6}\s")


@dataclass(frozen=True)
class Unit:
    """One quotable line of a chunk and what it is."""

    text: str  # verbatim text of the chunk
    kind: str  # a records.BLOCK_KINDS kind; "sentence" for a sentence of a paragraph or note
    evidence: Evidence
    position: int  # 1-based, within its chunk
    code: tuple[str, ...] = ()  # its inline code spans (the whole text for a code block)
    header: tuple[str, ...] = ()  # a table row: its table's header cells
    block: int = -1  # the block (paragraph, item, entry line) it is of, numbered in its chunk: its passage
    # the unit before it in its chunk (a definition's term), even when only this one is a candidate
    previous: Unit | None = field(default=None, compare=False, repr=False)
    heading: str = ""  # where a chunk packs several sections: the heading line of the one it is in (verbatim)

    @property
    def before(self) -> str:
        """The text of the unit before it in its chunk (a code block's introduction), or ""."""
        return self.previous.text if self.previous is not None else ""


def units(e: Evidence) -> list[Unit]:
    """The quotable lines of one evidence chunk, in order."""
    pieces = _from_blocks(e) if e.blocks else [(n, p, "") for n, p in _from_text(e.text)]
    out: list[Unit] = []
    for block, (kind, text, code, header), heading in pieces:
        if not tx.words(text) or _title(kind, text):
            continue
        out.append(Unit(text, kind, e, len(out) + 1, code, header, block, out[-1] if out else None, heading))
    return out


Piece = tuple[str, str, tuple[str, ...], tuple[str, ...]]  # kind, text, code spans, header


def _title(kind: str, text: str) -> bool:
    """A note's title alone ("Note", "Warning:"): a label, not a line that could answer anything; shown
    as one, a reply opened on "Note" marked as a claim."""
    return kind == "note" and len(text.split()) == 1


# A chunk packing several sections holds each one's heading as a line of its own, outside every block
# (pipeline.chunk): text between two blocks that is one line with a letter, a blank line after it (a list
# marker or a code fence left between blocks is not).
_PACKED_HEADING = re.compile(r"(?:^|\n\n)[ \t]*([^\n]*[^\W\d_][^\n]*?)[ \t]*\n\n\s*$")


def _from_blocks(e: Evidence) -> list[tuple[int, Piece, str]]:
    out: list[tuple[int, Piece, str]] = []
    heading, at = "", 0
    for n, b in enumerate(e.blocks):
        if (m := _PACKED_HEADING.search(e.text[at : b.start])) and not _FENCE.match(m.group(1)):
            heading = m.group(1)
        at = max(at, b.end)
        text = e.text[b.start : b.end].strip()
        if not text:
            continue
        spans = tuple(e.text[s:t] for s, t in b.code if b.start <= s < t <= b.end)
        if b.kind == "code":
            if text.count("\n") < MAX_CODE_LINES:
                out.append((n, ("code", text, (text,), ()), heading))
        elif b.kind == "table_row":
            out.append((n, ("table_row", text, spans or tuple(b.cells), tuple(b.header)), heading))
        elif b.kind in ("paragraph", "note", "quote") or len(tx.words(text)) > MAX_WORDS:
            out.extend((n, p, heading) for p in _sentences(text, b.kind, spans))
        else:  # list item, term, definition: whole
            out.append((n, (b.kind, text, spans, ()), heading))
    return out


def _sentences(text: str, kind: str, spans: tuple[str, ...]) -> list[Piece]:
    sents = tx.split_sentences(" ".join(text.split()))
    lone = kind if len(sents) == 1 and kind != "paragraph" else "sentence"
    return [(lone, s, tuple(c for c in spans if " ".join(c.split()) in s), ()) for s in sents]


def _from_text(text: str) -> list[tuple[int, Piece]]:
    """Blocks of a chunk without typed blocks: paragraphs at blank lines, fenced or indented code."""
    out: list[tuple[int, Piece]] = []
    for para in _paragraphs(text):
        n = len(out) and out[-1][0] + 1
        lines = para.splitlines()
        if _FENCE.match(lines[0]):
            body = "\n".join(ln for ln in lines[1:] if not _FENCE.match(ln)).strip()
            if body and body.count("\n") < MAX_CODE_LINES:
                out.append((n, ("code", body, (body,), ())))
        elif all(ln.startswith(("    ", "\t")) for ln in lines):
            body = "\n".join(ln.strip() for ln in lines)
            if body.count("\n") < MAX_CODE_LINES:
                out.append((n, ("code", body, (body,), ())))
        elif all(_ROW.match(ln) for ln in lines):
            rows = [ln for ln in lines if not _RULE.match(ln)]
            out += [(n + i, ("table_row", ln.strip(), _spans(ln), ())) for i, ln in enumerate(rows)]
        else:
            for i, item in enumerate(_items(lines)):
                flat = " ".join(item.split())
                if _ITEM.match(item) and len(tx.words(flat)) <= MAX_WORDS:
                    out.append((n + i, ("list_item", flat, _spans(flat), ())))
                else:
                    out.extend((n + i, p) for p in _sentences(flat, "paragraph", _spans(flat)))
    return out


def _items(lines: list[str]) -> list[str]:
    """A paragraph's list items (a line that opens with a marker starts one), or the paragraph whole;
    heading lines left out (they are the heading path's, not the chunk's)."""
    out: list[str] = []
    for ln in lines:
        if _HEADING.match(ln):
            continue
        if _ITEM.match(ln) or not out:
            out.append(ln)
        else:
            out[-1] += "\n" + ln
    return out


def _spans(text: str) -> tuple[str, ...]:
    return tuple(re.findall(r"`([^`]+)`", text))


def _paragraphs(text: str) -> list[str]:
    """Blank-line separated paragraphs; a fenced block is one paragraph even with blank lines inside."""
    out: list[str] = []
    cur: list[str] = []
    fenced = False
    for line in text.splitlines():
        if _FENCE.match(line):
            if fenced:
                cur.append(line)
                out.append("\n".join(cur))
                cur, fenced = [], False
                continue
            if cur:
                out.append("\n".join(cur))
            cur, fenced = [line], True
            continue
        if not fenced and not line.strip():
            if cur:
                out.append("\n".join(cur))
            cur = []
            continue
        cur.append(line)
    if cur:
        out.append("\n".join(cur))
    return out

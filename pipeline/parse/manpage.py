"""Man pages as their reader reads them, however they arrive: `man -l` text, or a `<pre>` of it in HTML.

A typeset man page is lines of text: section names at the left margin (`NAME`, `DESCRIPTION`;
in HTML bold), sub-section names a little in (`   Time sources`), the body indented under
them. Here section names are headings; a tagged paragraph (an option or directive on its own
line, its description indented deeper) is an entry (pipeline.parse.events: a sub-section where
entries structure a long section); a paragraph filled to the page's width is prose, joined into
one line; a ragged one that does not read as sentences is code, and so is the synopsis.
Indentation alone is never code: the whole body is indented.

Words the typesetter broke across lines are joined: at a hyphenation mark (U+2010, as groff
writes one in UTF-8) always; at an ASCII hyphen, as the document itself writes the word
elsewhere (`postmaster`, `delta-transfer`), a fragment it never writes alone is part of the word,
and a hyphen before one of the document's most frequent words stays a hyphen followed by a space
("comma- or whitespace-separated").

The running header and footer (`CHRONY.CONF(5)   Configuration Files   CHRONY.CONF(5)`) are left out.
"""

from __future__ import annotations

import itertools
import re
from collections import Counter
from collections.abc import Iterator

from pipeline.parse.events import Entry, Event, Piece, Rich, resolve, sections
from pipeline.parse.parsed import Parsed
from pipeline.parse.text import scrub

_OVERSTRIKE = re.compile(r".\x08")
_RUNNING = re.compile(r"^(\S+\([0-9][\w]*\)).*\s\1\s*$")  # NAME(5) ... NAME(5): the page's running header
_FOOTER = re.compile(r"^\S.*\s{2,}\S.*\s{2,}(\S+\([0-9][\w]*\))\s*$")  # "chrony 4.3   2022-08-29   NAME(5)"
_SECTION = re.compile(r"^[A-Z][A-Z0-9 ,/&()'-]*$")  # a section name as man(7) sets it: capitals
_WORD = re.compile(r"[^\W\d_][\w'-]*")  # a word with its hyphens, as typeset: the two halves of a broken word
_PART = re.compile(r"[^\W\d_]+")  # a word, hyphenated ones in parts
_COMPOUND = re.compile(r"[^\W\d_]+(?:-[^\W\d_]+)+")  # a hyphenated word, whole
_PLAIN = re.compile(r"[^\W\d]\w*(?:[.'\u2019-]\w+)*")  # a word as prose writes it ("chrony.conf", "don't")
_BULLET = re.compile(r"^(?:[\u2022\u00b7*o-]|[0-9]{1,2}[.)])\s+\S")
_SYNOPSIS = re.compile(r"^SYNOPSIS$", re.I)  # man(7)'s name of the section that shows how a command is called
_FILLED = 0.7  # a line at ≥ 70 % of the body's widest line is filled (set to the page width): prose
_WIDTH_RANK = 0.9  # the page's width: its lines' 90th percentile (a few lines run past the margin)
_COMMON = 20  # a document's most frequent words: a hyphen before one of them is a hyphen and a space
_SENTENCE_END = re.compile(r"(?:[^.]\.|,)\s*$")  # a line ending a sentence (not an ellipsis) or mid-sentence
_TERM_GAP = re.compile(r"\S(\s{2,})\S")  # a tag and its description on one line, two spaces or more apart


def looks_like_man(text: str) -> bool:
    """A `man` page as text: its running header first, or capitals at the margin over an indented body."""
    lines = [ln for ln in _OVERSTRIKE.sub("", text[:20000]).split("\n") if ln.strip()]
    if not lines:
        return False
    if _RUNNING.match(lines[0].strip()):
        return True
    heads = [ln for ln in lines if not ln[0].isspace() and _SECTION.match(ln.strip())]
    indented = sum(ln[0].isspace() for ln in lines)
    return len(heads) >= 3 and indented >= 0.6 * len(lines) and not lines[0][0].isspace()


def parse_man_text(text: str) -> Parsed:
    """A rendered man page's text → sections."""
    text = _OVERSTRIKE.sub("", scrub(text)).replace("\r\n", "\n").expandtabs()
    lines = text.split("\n")
    title = ""
    while lines and not lines[0].strip():
        lines.pop(0)
    if lines and (m := _RUNNING.match(lines[0].strip())):
        title = m.group(1)
        lines.pop(0)
    lines = [ln for ln in lines if not _FOOTER.match(ln)]
    heads = {ln.strip() for ln in lines if ln.strip() and not ln[0].isspace()}
    events = list(man_events(lines, heads, 1))
    found = sections(resolve(events))
    name = next((s.text for s in found if s.heading_path[:1] == ("NAME",) and len(s.text) < 200), "")
    return Parsed(" ".join(name.split()) or title, found)


def pre_events(text: str, bold: set[str], lang: str | None, top: bool) -> Iterator[Event]:
    """A `<pre>`'s events: a man page's (bold section names at its margin), prose paragraphs (a pre of
    filled text), else one code block."""
    lines = text.expandtabs().split("\n")
    margin = {ln.strip() for ln in lines if ln.strip() and not ln[0].isspace()}
    heads = {b for b in bold if b in margin and _SECTION.match(b)}
    if top and len(heads) >= 2:
        yield from man_events(
            [ln for ln in lines if not _RUNNING.match(ln.strip()) and not _FOOTER.match(ln)], heads, 2
        )
    elif lang is None and _mostly_prose(lines):
        yield from _body(lines, _Vocabulary(lines), False, entries=False)
    else:
        yield Piece("code", Rich(text), lang=lang)


def man_events(lines: list[str], heads: set[str], level: int) -> Iterator[Event]:
    """The events of a man page's lines: `heads` the section names at the margin (level `level`); a short
    line a little in, over deeper text, a sub-section (level + 1)."""
    vocab = _Vocabulary(lines)
    body: list[str] = []
    synopsis = False
    for i, line in enumerate(lines):
        name = line.strip()
        margin = bool(name) and not line[0].isspace()
        sub = (
            bool(name)
            and 0 < _indent(line) < 5
            and len(name) < 60
            and i + 1 < len(lines)
            and _indent(lines[i + 1]) > _indent(line)
            and bool(lines[i + 1].strip())
        )
        if (margin and name in heads) or sub:
            yield from _body(body, vocab, synopsis)
            body = []
            if margin:
                synopsis = bool(_SYNOPSIS.match(name))
            yield (level if margin else level + 1), name
            continue
        body.append(line)
    yield from _body(body, vocab, synopsis)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" ")) if line.strip() else 10**6


class _Vocabulary:
    """The words a document writes whole, and its most frequent ones: how a broken word is joined."""

    def __init__(self, lines: list[str]):
        counts = Counter(w.lower() for ln in lines for w in _PART.findall(ln))
        self.words = set(counts)
        self.compounds = {w.lower() for ln in lines for w in _COMPOUND.findall(ln)}
        self.common = {w for w, _ in counts.most_common(_COMMON)}

    def join(self, head: str, tail: str) -> str:
        """`head` ending in a hyphen, then the next line's `tail`."""
        if head.endswith("\u2010"):
            return head[:-1] + tail
        a = _WORD.findall(head[-40:])
        b = _WORD.match(tail)
        if not a or not b or not head[-2:-1].isalpha():
            return f"{head} {tail}"
        left, right = a[-1].rstrip("-").lower(), b.group(0).lower()
        if f"{left}-{right}" in self.compounds:
            return head + tail  # "delta-" "transfer": a hyphenated word broken at its hyphen
        if right in self.common:
            return f"{head} {tail}"  # "comma- or": a hyphen the author wrote before a space
        if (left + right) in self.words or right not in self.words:
            return head[:-1] + tail  # "postmas-" "ter": a word the typesetter broke
        return head + tail


def _paragraphs(lines: list[str]) -> Iterator[list[str]]:
    para: list[str] = []
    for ln in [*lines, ""]:
        if ln.strip():
            para.append(ln.rstrip())
        elif para:
            yield para
            para = []


def _mostly_prose(lines: list[str]) -> bool:
    """Most of a `<pre>`'s paragraphs read as prose (text set in a fixed font, not code)."""
    paras = list(_paragraphs(lines))
    width = max((len(ln.rstrip()) for ln in lines), default=0)
    return bool(paras) and sum(_reads_as_prose(p, width) for p in paras) > len(paras) / 2


def _body(lines: list[str], vocab: _Vocabulary, code: bool, entries: bool = True) -> Iterator[Event]:
    """A section's body: tagged paragraphs as entries, prose joined, code kept as it is set."""
    paras = list(_paragraphs(lines))
    widths = sorted(len(ln) for p in paras for ln in p)
    width = widths[int(_WIDTH_RANK * (len(widths) - 1))] if widths else 0  # one long URL or table row aside
    for para in paras:
        base = min(_indent(ln) for ln in para)
        text = "\n".join(ln[base:] for ln in para)
        if code:
            yield Piece("code", Rich(_unbroken(text, vocab)), fenced=False)
            continue
        term, rest = _tagged(para) if entries else ("", para)
        if term and _BULLET_MARK.fullmatch(term.strip() + " "):  # a bulleted item set as a tagged paragraph
            text = _joined([ln.strip() for ln in rest], vocab)
            yield Piece("list_item", Rich(text), "\n", "- ")
            continue
        if term:
            name = " ".join(term.split())
            yield Entry(name[:200], [], [Piece("term", Rich(name))])
            if not rest:
                continue
            para = rest
        yield from _prose_or_code(para, width, vocab, len(paras) == 1)


def _tagged(para: list[str]) -> tuple[str, list[str]]:
    """A tagged paragraph's tag and its description lines, or ("", para): the tag alone on its first line
    over deeper lines, or set before the description on that line (`-f     file …`)."""
    if len(para) < 2:
        return "", para
    first, deeper = _indent(para[0]), min(_indent(ln) for ln in para[1:])
    if deeper <= first:
        return "", para
    line = para[0]
    if len(line) > deeper and (m := _TERM_GAP.search(line, first)) and m.end(1) == deeper:
        return line[first : m.start(1) + 1], [" " * deeper + line[deeper:], *para[1:]]
    if len(line.strip()) > 80 or _SENTENCE_END.search(line):
        return "", para
    return line.strip(), para[1:]


def _prose_or_code(para: list[str], width: int, vocab: _Vocabulary, alone: bool) -> Iterator[Piece]:
    base = min(_indent(ln) for ln in para)
    if not _reads_as_prose(para, width, alone):
        yield Piece("code", Rich(_unbroken("\n".join(ln[base:] for ln in para), vocab)), fenced=False)
        return
    items: list[list[str]] = [[]]
    for ln in para:
        if _BULLET.match(ln.strip()) and items[-1]:
            items.append([])
        items[-1].append(ln.strip())
    for i, item in enumerate(items):
        text = _joined(item, vocab)
        if len(items) > 1 and _BULLET.match(text):
            yield Piece("list_item", Rich(_BULLET_MARK.sub("", text)), "\n\n" if i == 0 else "\n", "- ")
        else:
            yield Piece("paragraph", Rich(text))


_BULLET_MARK = re.compile(r"^(?:[\u2022\u00b7*o-]|[0-9]{1,2}[.)])\s+")


def _unbroken(text: str, vocab: _Vocabulary) -> str:
    """Set text with the words the typesetter broke joined, kept as set otherwise: at a hyphenation mark
    (U+2010, never code's), or at a hyphen where the document writes the joined word elsewhere."""

    def join(m: re.Match[str]) -> str:
        whole = m.group(1) + m.group(3)
        return whole if m.group(2) == "\u2010" or whole.lower() in vocab.words else m.group(0)

    return _HYPHENATED.sub(join, text)


_HYPHENATED = re.compile(r"([^\W\d_]+)([-\u2010])\n[ \t]*([^\W\d_]+)")
_BROKEN_AT_END = re.compile(r"[^\W\d_]{2}[-\u2010]$")


def _joined(lines: list[str], vocab: _Vocabulary) -> str:
    out = ""
    for ln in lines:
        ln = " ".join(ln.split())  # justified text: the spaces the typesetter stretched, one again
        if not out:
            out = ln
        elif out.endswith(("-", "\u2010")):
            out = vocab.join(out, ln)
        else:
            out = f"{out} {ln}"
    return out


def _reads_as_prose(para: list[str], width: int | None = None, alone: bool = False) -> bool:
    """Filled lines (all but the last at ≥ _FILLED of the widest), or one line of words that ends a sentence
    (or is all its section says: `name - what it is`)."""
    lines = [ln.rstrip() for ln in para if ln.strip()]
    if not lines:
        return False
    width = width or max(len(ln) for ln in lines)
    words = [w for ln in lines for w in ln.split()]
    wordy = sum(bool(_PLAIN.fullmatch(w.strip(".,;:()\"'"))) for w in words) >= 0.7 * max(1, len(words))
    if len(lines) >= 2:  # filled, or hyphenated: a typesetter breaks words only in text it fills
        broken = any(_BROKEN_AT_END.search(a) and b.lstrip()[:1].islower() for a, b in itertools.pairwise(lines))
        return wordy and (broken or all(len(ln) >= _FILLED * width for ln in lines[:-1]))
    return wordy and (lines[0].rstrip().endswith((".", ":", ";", ",", "!", "?", ")")) or alone)

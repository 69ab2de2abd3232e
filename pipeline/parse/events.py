"""What a rendering parser (HTML, man pages) emits while it reads, and the sections made of it.

A parser that renders a page walks it in order and yields events: a heading `(level, text)`,
a piece of text (`Piece`: a paragraph, list item, table row, code …), an `Anchor` (an `id` or
`<a name>` a link can land on), and an `Entry`: a place where the page's visible structure
offers a sub-section (a definition term, an option's keyword line, a bold lead-in). Whether an
entry becomes a sub-section is decided from the measured structure of the section it sits in
(`resolve`): a long section read as a list of entries is a reference (a configuration file's
parameters, a command's options); a short one, or one where entries are a small part, is not.

`sections` turns the events into `Section`s: each heading closes the section before it, each
block gets its offsets, and each section the nearest anchor above its start.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from pipeline.records import Block, Section

DERIVED = 8  # a derived heading's level: below every real one (a nested page's h6 reads 7), under the current section
# A section whose entries become sub-sections: at least MIN_ENTRIES of them, the section longer than one chunk
# holds (LONG_SECTION characters: 256 tokens at ~4 characters a token, the default model's window), and most of its
# text inside entries (ENTRY_SHARE). Shorter sections are cited whole anyway; a few bold words in a long
# essay are emphasis, not a reference's entries. Fitted by hand on the fit manuals' reference pages (PostgreSQL
# runtime-config-*, Exim's main options, HAProxy's keywords: 10-900 entries each, ≥ 0.8 of their text in entries)
# and their essays (≤ 0.3).
MIN_ENTRIES = 3
LONG_SECTION = 1000
ENTRY_SHARE = 0.5


@dataclass
class Rich:
    """Text with the spans of inline code in it."""

    text: str = ""
    code: list[tuple[int, int]] = field(default_factory=list)

    def indent(self, pad: str) -> Rich:
        """Every line after the first indented by `pad` (a list item's continuation lines)."""
        starts = [i for i, c in enumerate(self.text) if c == "\n"]

        def at(i: int) -> int:
            return i + len(pad) * sum(1 for s in starts if s < i)

        return Rich(self.text.replace("\n", "\n" + pad), [(at(a), at(b)) for a, b in self.code])


def join(parts: list[Rich], sep: str) -> Rich:
    out = Rich()
    for p in parts:
        if not p.text:
            continue
        if out.text:
            out.text += sep
        out.code += [(a + len(out.text), b + len(out.text)) for a, b in p.code]
        out.text += p.text
    return out


@dataclass
class Piece:
    kind: str
    rich: Rich
    sep: str = "\n\n"  # what comes before it in the section text
    marker: str = ""  # "- " before a list item: in the text, outside the block
    header: tuple[str, ...] = ()
    cells: tuple[str, ...] = ()
    lang: str | None = None
    fenced: bool = True  # a code block between fence lines; False: as the page sets it (a man page's examples)


@dataclass(frozen=True)
class Anchor:
    """A place a link can land on (`id`, `<a name>`), where the walk met it."""

    name: str


@dataclass
class Entry:
    """A possible sub-section: `heading` (the term) over `kept` when it becomes one, else `plain`."""

    heading: str
    kept: list[Piece]
    plain: list[Piece]
    anchor: str | None = None


Event = tuple[int, str] | Piece | Anchor | Entry


def resolve(events: Iterable[Event], always: bool = False) -> Iterator[Event]:
    """Entries as sub-sections where they structure a long section (see the module docstring), else as
    plain text; `always`: every entry is one (a page without headings, whose structure is its entries)."""
    group: list[Event] = []
    for ev in [*events, (0, "")]:
        if isinstance(ev, tuple) and ev[0] < DERIVED:
            yield from _settle(group, always)
            group = []
            if ev[1]:
                yield ev
            continue
        group.append(ev)


def _settle(group: list[Event], always: bool) -> Iterator[Event]:
    entries = [e for e in group if isinstance(e, Entry)]
    keep = always and bool(entries)
    if not keep and len(entries) >= MIN_ENTRIES:
        total, inside, within = 0, 0, False
        for ev in group:
            if isinstance(ev, Entry):
                within = True
                size = sum(len(p.rich.text) for p in ev.kept) + len(ev.heading)
                total, inside = total + size, inside + size
            elif isinstance(ev, Piece):
                total += len(ev.rich.text)
                inside += len(ev.rich.text) if within else 0
        keep = total >= LONG_SECTION and inside >= ENTRY_SHARE * total
    for ev in group:
        if not isinstance(ev, Entry):
            yield ev
        elif keep:
            if ev.anchor:
                yield Anchor(ev.anchor)
            yield DERIVED, ev.heading
            yield from ev.kept
        else:
            yield from ev.plain


def sections(events: Iterable[Event]) -> list[Section]:
    """Events → sections: each heading closes the section before it; blocks get their offsets; a section's
    anchor is the last one met before its heading, or before its first piece where it has none."""
    out: list[Section] = []
    stack: list[tuple[int, str]] = []
    pieces: list[Piece] = []
    anchor: str | None = None  # the last anchor met
    here: str | None = None  # the current section's
    for ev in [*events, (0, "")]:  # the sentinel heading flushes the last section
        if isinstance(ev, Anchor):
            anchor = ev.name
            continue
        if isinstance(ev, Entry):  # not resolved: plain text
            pieces += ev.plain
            continue
        if isinstance(ev, Piece):
            if not pieces and here is None:
                here = anchor
            pieces.append(ev)
            continue
        if pieces:
            entry = bool(stack) and stack[-1][0] >= DERIVED
            out.append(_section(tuple(h for _, h in stack if h), pieces, here, entry))
        pieces, here = [], anchor
        while stack and stack[-1][0] >= ev[0]:
            stack.pop()
        stack.append(ev)
    return out


def _section(path: tuple[str, ...], pieces: list[Piece], anchor: str | None, entry: bool) -> Section:
    text, blocks = "", []
    for p in pieces:
        if text:
            text += p.sep
        if p.kind == "code" and not p.fenced:
            blocks.append(Block("code", len(text), len(text) + len(p.rich.text), lang=p.lang))
            text += p.rich.text
            continue
        if p.kind == "code":
            fence = "````" if "```" in p.rich.text else "```"
            text += f"{fence}{p.lang or ''}\n"
            start = len(text)
            text += p.rich.text
            blocks.append(Block("code", start, len(text), lang=p.lang))
            text += f"\n{fence}"
            continue
        text += p.marker
        start = len(text)
        text += p.rich.text
        code = tuple((start + a, start + b) for a, b in p.rich.code if b > a)
        blocks.append(Block(p.kind, start, len(text), header=p.header, cells=p.cells, code=code))
    return Section(path, text, blocks=tuple(blocks), anchor=anchor, alone=entry)

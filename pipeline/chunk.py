"""Sections → chunks that fit the embedding model's window, exactly.

Section bodies are tokenised once, in a batch, with character offsets, by the
model's own tokenizer. A section longer than the budget is cut between blocks,
else at a paragraph break, line break, sentence end or word boundary; runs of
consecutive whole sections are packed into chunks that fit (each keeps its heading,
as plain text, on a line of its own; the chunk's heading path is their common
prefix): short chunks waste the model's time and lose context. Where both kinds of
cut fall is anchored to the text around them (pipeline.cuts), not to the text
before them, so an edit re-chunks only the pieces it touches.
A chunk never spans part of a section, and an entry of a reference (`Section.alone`) is never
packed with another. A chunk carries its first section's anchor. The embedded text is
"<title> > <heading path>" plus the chunk. A section's blocks (pipeline.records.Block)
go with its text: a cut falls between two blocks where the budget allows (at a
paragraph break between them, else a line break, before the patterns above), and
each chunk carries the blocks of its text, offsets re-based onto it (heading lines
of packed sections included) and clipped at its cuts. Offsets only estimate: a cut inside
a word or a join can tokenise to more tokens. So every embedded text is counted
afresh, special tokens included, and one over the window is cut again by its
measured overshoot until it fits: no chunk ever exceeds `max_seq_length` (the
model would silently truncate it), and `token_count` is exact.

Bump CHUNKER_VERSION when the output for the same input changes: the ledger
re-chunks every document whose stored chunker `fingerprint` differs.
"""

from __future__ import annotations

import bisect
import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from tokenizers import Tokenizer

from pipeline import cuts
from pipeline.cuts import BREAKS
from pipeline.cuts import strip_span as _strip_span
from pipeline.parse.parsed import PARSER_VERSION
from pipeline.parse.text import scrub
from pipeline.records import Block, Chunk, Section

# 6: cuts anchored to the content (pipeline.cuts), anchors; parsers of PARSER_VERSION (in the fingerprint)
# 5: a code block cut across chunks is closed and re-opened with its own fence line in each
# 4: blocks, packed headings without "#" markers; 3: pages; code, data, HTML, rst and text files parsed by format
CHUNKER_VERSION = "6"
_FENCE = re.compile(r"^(`{3,}|~{3,})([^\n`]*)$", re.M)  # a fenced code block's opening or closing line
_Blocks = tuple[Block, ...]
_CONTEXT = 48  # characters of each side of a cut between sections its anchor reads
_MAX_HEADER_SHARE = 0.25  # a heading path may take at most this share of the window
_MAX_FENCE_SHARE = 0.25  # fences re-opened and closed may take at most this share of a piece's budget


def window(max_seq_length: int, max_tokens: int | None = None) -> int:
    """Tokens a chunk may hold: the configured budget, never more than the model reads."""
    return min(max_tokens or max_seq_length, max_seq_length)


def fingerprint(tokenizer_id: str, max_seq_length: int, max_tokens: int | None, overlap_tokens: int) -> str:
    """The chunker as the ledger records it: any change re-chunks every document. Built from
    settings alone, so a run that skips every document never loads the tokenizer."""
    return f"{CHUNKER_VERSION}.{PARSER_VERSION}:{tokenizer_id}:{window(max_seq_length, max_tokens)}:{overlap_tokens}"


def make_header(title: str, path: Sequence[str]) -> str:
    parts = [p for p in path if p]
    if title and (not parts or parts[0] != title):
        parts.insert(0, title)
    return " > ".join(parts)


def _join(header: str, text: str) -> str:
    return f"{header}\n\n{text}" if header else text


def _within(blocks: _Blocks, text: str, start: int, end: int) -> _Blocks:
    """The blocks of text[start:end], clipped to it and re-based onto it, tight to their text."""
    out = []
    for b in blocks:
        if b.end <= start or b.start >= end:
            continue
        c = b.clipped(start, end)
        if c is None:
            continue
        s, e = _strip_span(text, c.start, c.end)
        if (c := c.clipped(s, e)) is not None:
            out.append(c.shifted(-start))
    return tuple(out)


def _between(body: str, blocks: _Blocks) -> tuple[list[int], list[int]]:
    """Where a cut may fall between two blocks: (at a paragraph break, at a line break), as the
    offset of the next block's start."""
    paras: list[int] = []
    lines: list[int] = []
    for a, b in itertools.pairwise(blocks):
        gap = body[a.end : b.start]
        if BREAKS[0].search(gap):
            paras.append(b.start)
        elif "\n" in gap:
            lines.append(b.start)
    return paras, lines


def _common(a: tuple[str, ...], b: tuple[str, ...]) -> tuple[str, ...]:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return a[:n]


@dataclass
class _Unit:
    path: tuple[str, ...]
    text: str
    tokens: int  # of text alone
    whole: bool  # may be packed with neighbours: a whole section or a long one's tail
    tail: bool = False  # the last piece of a long section: its heading is already spent
    blocks: _Blocks = ()  # offsets into text
    anchor: str | None = None  # its section's nearest anchor


_Piece = tuple[tuple[str, ...], str, int, _Blocks, str | None]  # path, text, estimated tokens, blocks, anchor


class Chunker:
    """Token-aware, section-respecting chunker for one tokenizer and window."""

    def __init__(
        self, tokenizer: Tokenizer, max_seq_length: int, max_tokens: int | None = None, overlap_tokens: int = 0
    ):
        self.tok = tokenizer
        self.tok.no_truncation()
        self.tok.no_padding()
        self.limit = window(max_seq_length, max_tokens)
        self._counts: dict[str, int] = {}
        self.specials = len(self.tok.encode("", add_special_tokens=True).ids)
        self.sep = self._n("\n\n")
        self.overlap = overlap_tokens
        self._headers: dict[str, tuple[str, int]] = {}

    def _n(self, text: str) -> int:
        # Cached: packing re-costs a growing group, so the same heading lines are counted many times.
        n = self._counts.get(text)
        if n is None:
            n = self._counts[text] = len(self.tok.encode(text, add_special_tokens=False).ids)
        return n

    def count(self, texts: list[str]) -> list[int]:
        """Tokens per text, special tokens included: what the model will see."""
        return [len(e.ids) for e in self.tok.encode_batch(texts, add_special_tokens=True)]

    def chunk(self, title: str, sections: Sequence[Section], pack: bool = True) -> list[Chunk]:
        """The chunks of a document's sections, numbered in order. Sections of different pages never
        share a chunk, so each chunk cites the one page it is on; with `pack` off (code, data files)
        neither do sections of different heading paths, so each chunk names its one symbol."""
        if pack and all(s.page is None for s in sections):
            return self._chunk(title, sections)
        out: list[Chunk] = []
        for (page, _), group in itertools.groupby(sections, key=lambda s: (s.page, pack or s.heading_path)):
            out += [replace(c, ordinal=len(out) + i, page=page) for i, c in enumerate(self._chunk(title, list(group)))]
        return out

    def _chunk(self, title: str, sections: Sequence[Section]) -> list[Chunk]:
        title = scrub(title)  # a lone surrogate cannot be tokenised (nor stored)
        secs = []
        for sec in sections:
            text = scrub(sec.text)  # one character for one: offsets hold
            s, e = _strip_span(text, 0, len(text))
            if s < e:
                path = tuple(scrub(h) for h in sec.heading_path)
                secs.append((path, text[s:e], _within(sec.blocks, text, s, e), sec.anchor, sec.alone))
        encs = self.tok.encode_batch([b for _, b, _, _, _ in secs], add_special_tokens=False)
        units: list[_Unit] = []
        for (path, body, blocks, anchor, alone), enc in zip(secs, encs, strict=True):
            budget = max(1, self.limit - self.specials - self._header(title, path)[1])
            if len(enc.ids) <= budget:
                units.append(_Unit(path, body, len(enc.ids), not alone, blocks=blocks, anchor=anchor))
            else:
                fences = list(_FENCE.finditer(body))  # read once: every piece's edges are looked up in it
                reserve = 2 * max((self._n(f.group(0)) + 1 for f in fences), default=0)  # one re-opened, one closed
                if reserve > _MAX_FENCE_SHARE * budget:  # a window so small that cuts split words: no fences
                    fences, reserve = [], 0
                pieces = self._split(body, enc.offsets, budget - reserve, between=_between(body, blocks))
                # The tail of a long section may share a chunk with the sections after it.
                for i, (s, e, n) in enumerate(pieces):
                    text, extra, inner = self._fenced(body, blocks, s, e, fences)
                    units.append(_Unit(path, text, n + extra, i == len(pieces) - 1 and not alone, i > 0, inner, anchor))
        return self._verify(title, self._pack(title, units))

    def _fenced(
        self, body: str, blocks: _Blocks, s: int, e: int, fences: list[re.Match[str]]
    ) -> tuple[str, int, _Blocks]:
        """The text of the piece body[s:e], the tokens it adds, and its blocks. A code block the piece
        starts or ends inside is re-opened with its own fence line (language kept) or closed, so each chunk
        reads as code where it is code and a comment line ("# apt-get update") never reads as a heading.
        `fences`: the body's fence lines (none: no fences added)."""
        opening, closing = _open_fence(fences, s), _open_fence(fences, e)
        if opening and (m := _FENCE.match(body, s)) and _closes(m, opening) and m.end() < e:
            opening, s = None, _strip_span(body, m.end(), e)[0]  # the fence the piece before has closed
        head = f"{opening}\n" if opening else ""
        foot = f"\n{_marker(closing)}" if closing else ""
        extra = (self._n(head) if head else 0) + (self._n(foot) if foot else 0)
        return head + body[s:e] + foot, extra, tuple(b.shifted(len(head)) for b in _within(blocks, body, s, e))

    def _header(self, title: str, path: tuple[str, ...]) -> tuple[str, int]:
        """The header text for a path and its token cost (separator included), cached."""
        key = make_header(title, path)
        if key not in self._headers:
            enc = self.tok.encode(key, add_special_tokens=False)
            cap = max(1, int(self.limit * _MAX_HEADER_SHARE))
            text = key if len(enc.ids) <= cap else key[: enc.offsets[cap - 1][1]] + "…"
            self._headers[key] = (text, (self._n(text) + self.sep) if text else 0)
        return self._headers[key]

    def _pack(self, title: str, units: list[_Unit]) -> list[_Piece]:
        """Merge runs of consecutive whole sections into chunks that fit, cut where pipeline.cuts
        anchors them: between sections of different headings first (the higher the heading, the
        better), then where the text around the cut hashes highest."""
        out: list[_Piece] = []
        run: list[_Unit] = []
        for u in [*units, None]:
            if u is not None and u.whole and (not run or run[-1].whole):
                run.append(u)
                continue
            out += [self._merge(title, run[lo:hi]) for lo, hi in self._runs(title, run)]
            run = [u] if u is not None else []
        return out

    def _runs(self, title: str, run: list[_Unit]) -> list[tuple[int, int]]:
        if len(run) <= 1 or self._cost(title, run) <= self.limit:
            return [(0, len(run))] if run else []
        weights = [u.tokens + self.sep + self._n(" › ".join(u.path)) for u in run]
        budget = max(1, self.limit - self.specials - self._header(title, ())[1])

        def rank(j: int) -> tuple[int, int]:
            a, b = run[j - 1], run[j]
            near = a.text[-_CONTEXT:] + "\x00" + " › ".join(b.path) + "\x00" + b.text[:_CONTEXT]
            return -len(_common(a.path, b.path)), cuts.mark(near, len(near) // 2)

        return cuts.partition(weights, budget, rank, lambda lo, hi: self._cost(title, run[lo:hi]) <= self.limit)

    def _cost(self, title: str, group: list[_Unit]) -> int:
        """Tokens of the merged chunk's embedded text, special tokens included."""
        path = group[0].path
        for u in group[1:]:
            path = _common(path, u.path)
        lines = [self._heading_line(u, path) for u in group]
        body = sum(u.tokens for u in group) + sum(self.sep + self._n(ln) for ln in lines[1:] if ln)
        if lines[0] and len(group) > 1:
            body += self.sep + self._n(lines[0])
        return self.specials + self._header(title, path)[1] + body

    @staticmethod
    def _heading_line(u: _Unit, common: tuple[str, ...]) -> str:
        if u.tail:
            return ""
        # A packed section's heading as a reader sees it, its path below the chunk's own joined by " › ":
        # never a markup marker ("## "), which a reader never sees on the page (issue 38)
        return " › ".join(u.path[len(common) :])

    def _merge(self, title: str, group: list[_Unit]) -> _Piece:
        path = group[0].path
        for u in group[1:]:
            path = _common(path, u.path)
        parts: list[str] = []
        blocks: list[Block] = []
        at = 0
        for i, u in enumerate(group):
            line = self._heading_line(u, path) if i or len(group) > 1 else ""
            head = _join(line, "")  # the heading line and its separator, before the unit's text
            blocks += [b.shifted(at + len(head)) for b in u.blocks]
            parts.append(head + u.text)
            at += len(parts[-1]) + 2  # "\n\n" joins the parts
        return path, "\n\n".join(parts), self._cost(title, group), tuple(blocks), group[0].anchor

    def _split(
        self,
        body: str,
        offsets: list[tuple[int, int]],
        budget: int,
        overlap: int | None = None,
        between: tuple[list[int], list[int]] = ([], []),
    ) -> list[tuple[int, int, int]]:
        """Cut a body into stripped pieces of at most `budget` tokens (as offsets count them): (start, end,
        count) of each. `between`: where a cut falls between blocks (`_between`), preferred. Without overlap
        the cuts are anchored to the text around them (pipeline.cuts); with it, each piece is filled greedily
        from where the one before ends, less the overlap."""
        overlap = self.overlap if overlap is None else overlap
        starts = [o[0] for o in offsets]
        if overlap:
            out = cuts.greedy(body, offsets, budget, overlap, between)
        else:
            out = cuts.anchored(body, starts, budget, between)
        return [(s, e, bisect.bisect_left(starts, e) - bisect.bisect_left(starts, s)) for s, e in out if e > s]

    def _verify(self, title: str, pieces: list[_Piece]) -> list[Chunk]:
        """Count every embedded text afresh, exactly; cut again any piece the estimate let past the window.

        The estimates come from token offsets of whole sections, and a cut inside a word or
        a join can re-tokenise to more tokens (WordPiece continuations of long joined
        identifiers and base64, Hangul decomposed by the normaliser): only a fresh count of
        the final text is a guarantee.
        """
        texts = [_join(self._header(title, p)[0], t) for p, t, _, _, _ in pieces]
        counts = self.count(texts) if texts else []
        out: list[tuple[tuple[str, ...], str, str, int, _Blocks, str | None]] = []
        for (path, text, _, blocks, anchor), embed_text, n in zip(pieces, texts, counts, strict=True):
            if n <= self.limit:
                out.append((path, text, embed_text, n, blocks, anchor))
            else:
                for s, e, fit_embed, fit_n in self._fit(self._header(title, path)[0], text, n, _between(text, blocks)):
                    out.append((path, text[s:e], fit_embed, fit_n, _within(blocks, text, s, e), anchor))
        return [
            Chunk(i, path, text, embed_text, n, blocks=blocks, anchor=anchor)
            for i, (path, text, embed_text, n, blocks, anchor) in enumerate(out)
        ]

    def _fit(
        self, header: str, text: str, n: int, between: tuple[list[int], list[int]] = ([], [])
    ) -> list[tuple[int, int, str, int]]:
        """(start, end, embedded text, exact count) of the pieces of an over-window text, in order, each
        within the window.

        Each round cuts by the measured overshoot and re-counts; every piece is strictly
        shorter than the text it came from, so the loop ends (no recursion, whatever the window).
        """
        full = text
        out: list[tuple[int, int, str, int]] = []
        todo = [(0, len(full), n)]  # a stack: the last item comes next in text order
        while todo:
            at, end, n = todo.pop()
            text = full[at:end]
            if n <= self.limit:
                out.append((at, end, _join(header, text), n))
                continue
            enc = self.tok.encode(text, add_special_tokens=False)
            budget = min(len(enc.ids) - 1, len(enc.ids) - (n - self.limit))
            inside = ([c - at for c in between[0] if at < c < end], [c - at for c in between[1] if at < c < end])
            spans = (
                [(s, e) for s, e, _ in self._split(text, enc.offsets, max(1, budget), 0, inside)] if budget >= 1 else []
            )
            if len(spans) < 2 or max(e - s for s, e in spans) >= len(text):
                spans = cuts.halve(text, enc.offsets)
            if not spans:  # one character the header leaves no room for: embed it bare
                out.append((at, end, text, self.count([text])[0]))
                continue
            counts = self.count([_join(header, text[s:e]) for s, e in spans])
            todo += reversed([(at + s, at + e, c) for (s, e), c in zip(spans, counts, strict=True)])
        return out


def _open_fence(fences: list[re.Match[str]], at: int) -> str | None:
    """The opening fence line of the code block offset `at` is inside, or None (outside every block);
    `fences`: the text's fence lines, in order."""
    opening = None
    for m in fences:
        if m.start() >= at:
            break
        if opening is None:
            opening = m.group(0)
        elif _closes(m, opening):
            opening = None
    return opening


def _closes(m: re.Match[str], opening: str) -> bool:
    """Whether fence line `m` closes the block `opening` opened: bare, of the same kind, at least as long."""
    return not m.group(2).strip() and m.group(1)[0] == opening[0] and len(m.group(1)) >= len(_marker(opening))


def _marker(fence: str) -> str:
    """The fence's backticks or tildes, without the language after them."""
    return fence[: len(fence) - len(fence.lstrip(fence[0]))]

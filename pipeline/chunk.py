"""Sections → chunks that fit the embedding model's window, exactly.

Section bodies are tokenised once, in a batch, with character offsets, by the
model's own tokenizer. A section longer than the budget is cut at the last
paragraph break, else line break, else sentence end, else word boundary inside
the budget. Consecutive whole sections that fit together are packed into one
chunk (each keeps its heading line in the text; the chunk's heading path is
their common prefix): short chunks waste the model's time and lose context.
A chunk never spans part of a section. The embedded text is
"<title> > <heading path>" plus the chunk, re-counted with special tokens, so
no chunk ever exceeds `max_seq_length` (the model would silently truncate it).

Bump CHUNKER_VERSION when the output for the same input changes: the ledger
re-chunks every document whose stored chunker fingerprint differs.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence
from dataclasses import dataclass

from tokenizers import Tokenizer

from pipeline.records import Chunk, Section

CHUNKER_VERSION = "2"
_BREAKS = (re.compile(r"\n[ \t]*\n"), re.compile(r"\n"), re.compile(r"[.!?;:][)\"']?\s"), re.compile(r"\s"))
_MIN_FILL = 0.4  # never cut before 40% of the budget: no runt chunks
_MAX_HEADER_SHARE = 0.25  # a heading path may take at most this share of the window


def make_header(title: str, path: Sequence[str]) -> str:
    parts = [p for p in path if p]
    if title and (not parts or parts[0] != title):
        parts.insert(0, title)
    return " > ".join(parts)


def _join(header: str, text: str) -> str:
    return f"{header}\n\n{text}" if header else text


def _spans(body: str, pieces: list[str]) -> list[tuple[int, int]]:
    """Character spans of consecutive (possibly overlapping) pieces, stripped."""
    spans, pos = [], 0
    for p in pieces:
        start = body.index(p, max(0, pos - len(p))) if p else pos
        lead = len(p) - len(p.lstrip())
        spans.append((start + lead, start + len(p.rstrip())))
        pos = start + len(p)
    return spans


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


class Chunker:
    """Token-aware, section-respecting chunker for one tokenizer and window."""

    def __init__(self, tokenizer: Tokenizer, max_seq_length: int, max_tokens: int | None = None,
                 overlap_tokens: int = 0, tokenizer_id: str = ""):
        self.tok = tokenizer
        self.tok.no_truncation()
        self.tok.no_padding()
        self.limit = min(max_tokens or max_seq_length, max_seq_length)
        self._counts: dict[str, int] = {}
        self.specials = len(self.tok.encode("", add_special_tokens=True).ids)
        self.sep = self._n("\n\n")
        self.overlap = overlap_tokens
        self.version = f"{CHUNKER_VERSION}:{tokenizer_id}:{self.limit}:{overlap_tokens}"
        self._headers: dict[str, tuple[str, int]] = {}
        pre = type(self.tok.pre_tokenizer).__name__ if self.tok.pre_tokenizer else ""
        self.additive = pre in ("BertPreTokenizer", "Whitespace", "WhitespaceSplit")

    def _n(self, text: str) -> int:
        # Cached: packing re-costs a growing group, so the same heading lines are counted many times.
        n = self._counts.get(text)
        if n is None:
            n = self._counts[text] = len(self.tok.encode(text, add_special_tokens=False).ids)
        return n

    def count(self, texts: list[str]) -> list[int]:
        """Tokens per text, special tokens included: what the model will see."""
        return [len(e.ids) for e in self.tok.encode_batch(texts, add_special_tokens=True)]

    def chunk(self, title: str, sections: Sequence[Section]) -> list[Chunk]:
        secs = [(s.heading_path, s.text.strip()) for s in sections if s.text.strip()]
        encs = self.tok.encode_batch([b for _, b in secs], add_special_tokens=False)
        units: list[_Unit] = []
        for (path, body), enc in zip(secs, encs):
            budget = self.limit - self.specials - self._header(title, path)[1]
            if len(enc.ids) <= budget:
                units.append(_Unit(path, body, len(enc.ids), True))
            else:
                pieces = self._split(body, enc.offsets, budget)
                # The tail of a long section may share a chunk with the sections after it.
                units += [_Unit(path, t, n, i == len(pieces) - 1, i > 0) for i, (t, n) in enumerate(pieces)]
        return self._verify(title, self._pack(title, units))

    def _header(self, title: str, path: tuple[str, ...]) -> tuple[str, int]:
        """The header text for a path and its token cost (separator included), cached."""
        key = make_header(title, path)
        if key not in self._headers:
            enc = self.tok.encode(key, add_special_tokens=False)
            cap = int(self.limit * _MAX_HEADER_SHARE)
            text = key if len(enc.ids) <= cap else key[: enc.offsets[cap - 1][1]] + "…"
            self._headers[key] = (text, (min(len(enc.ids), cap + 1) + self.sep) if text else 0)
        return self._headers[key]

    def _pack(self, title: str, units: list[_Unit]) -> list[tuple[tuple[str, ...], str, int]]:
        """Greedily merge consecutive whole sections while they fit together."""
        out: list[tuple[tuple[str, ...], str, int]] = []
        group: list[_Unit] = []
        for u in units:
            if group and u.whole and group[-1].whole and self._cost(title, group + [u]) <= self.limit:
                group.append(u)
                continue
            if group:
                out.append((*self._merge(group), self._cost(title, group)))
            group = [u]
        if group:
            out.append((*self._merge(group), self._cost(title, group)))
        return out

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
        rest = u.path[len(common) :]
        return "\n".join("#" * (len(common) + i + 1) + " " + h for i, h in enumerate(rest))

    def _merge(self, group: list[_Unit]) -> tuple[tuple[str, ...], str]:
        path = group[0].path
        for u in group[1:]:
            path = _common(path, u.path)
        first = self._heading_line(group[0], path) if len(group) > 1 else ""
        parts = [_join(first, group[0].text)]
        parts += [_join(self._heading_line(u, path), u.text) for u in group[1:]]
        return path, "\n\n".join(parts)

    def _split(self, body: str, offsets: list[tuple[int, int]], budget: int) -> list[tuple[str, int]]:
        """Cut a body into stripped pieces of at most `budget` tokens, with their token counts."""
        starts = [o[0] for o in offsets]
        out, pos, ti = [], 0, 0
        while ti < len(offsets):
            if len(offsets) - ti <= budget:
                out.append(body[pos:])
                break
            cut = self._cut(body, pos, offsets[ti + budget - 1][1])
            out.append(body[pos:cut])
            next_ti = max(ti + 1, bisect.bisect_left(starts, cut))
            if self.overlap:
                next_ti = max(ti + 1, next_ti - self.overlap)
            pos, ti = min(cut, starts[next_ti]) if next_ti < len(starts) else cut, next_ti
        counts = [bisect.bisect_left(starts, e) - bisect.bisect_left(starts, s) for s, e in _spans(body, out)]
        return [(t.strip(), n) for t, n in zip(out, counts) if t.strip()]

    @staticmethod
    def _cut(body: str, pos: int, end_char: int) -> int:
        """Where to end a chunk that may not reach past end_char."""
        floor = pos + int((end_char - pos) * _MIN_FILL)
        window = body[floor:end_char]
        for pattern in _BREAKS:
            last = None
            for last in pattern.finditer(window):
                pass
            if last is not None:
                return floor + last.end()
        return end_char  # one long run without spaces: cut at the token boundary

    def _verify(self, title: str, pieces: list[tuple[tuple[str, ...], str, int]]) -> list[Chunk]:
        """Count what the model will see; re-split the rare piece a tokenizer merged past the limit.

        For whitespace-splitting tokenizers (BERT WordPiece) counts add up exactly
        across our joins, so the estimate is the count and no second pass is needed.
        """
        texts = [_join(self._header(title, p)[0], t) for p, t, _ in pieces]
        counts = [n for _, _, n in pieces] if self.additive else (self.count(texts) if texts else [])
        chunks: list[Chunk] = []
        for (path, text, _), embed_text, n in zip(pieces, texts, counts):
            if n > self.limit:
                enc = self.tok.encode(text, add_special_tokens=False)
                budget = len(enc.ids) - (n - self.limit) - 1
                sub = [(path, t, self.count([_join(self._header(title, path)[0], t)])[0])
                       for t, _ in self._split(text, enc.offsets, budget)]
                chunks += self._verify(title, sub)
            else:
                chunks.append(Chunk(0, path, text, embed_text, n))
        return [Chunk(i, c.heading_path, c.text, c.embed_text, c.token_count) for i, c in enumerate(chunks)]

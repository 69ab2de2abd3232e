"""How a hit or a citation reads in a terminal, at 80 columns as at 200.

    1  0.412  Install Guide › Setup
       docs/install.adoc
       … run `make demo` to **install** the embedded Postgres, then …

The heading line (rank, score, title › section), then the citation on a line of
its own and never cut (the path from the source's root, with its page; or the
URL of a page), as a terminal hyperlink to the document where the terminal
shows them (rich writes OSC 8 only to a terminal), then the part of the text
around the query's terms, each term in bold. Every name and excerpt is a rich
`Text`, never markup: `[/x]` in a file name prints as is; and each passes
`pipeline.printable` first, so a control character in a name or a text shows as
`\\x1b` and never reaches the terminal as one (nor the hyperlink's target).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from rich.cells import cell_len
from rich.console import Console, Group, RenderableType
from rich.padding import Padding
from rich.style import Style
from rich.table import Table
from rich.text import Text

from pipeline.printable import printable

EXCERPT_CHARS = 240  # about three lines at 80 columns
# What a hit marks, as the web page's app.js marks it (terms(), STOP; tests/test_web.py holds them equal): a
# rule a browser can run, so not the answer layer's tokeniser (folding, stems) nor its claim stopwords.
_WORD = re.compile(r"[^\W_]{2,}|\d+", re.U)
_STOP = frozenset(  # the commonest question words: marked everywhere, they would mark nothing
    "the and for are was how what who why with from that this not you can does do is in of to on a an".split()
)


def terms(query: str) -> list[str]:
    """The query's words worth marking, longest first (a longer term wins where two overlap)."""
    words = {w.lower() for w in _WORD.findall(query)} - _STOP
    return sorted(words, key=lambda w: (-len(w), w))


def excerpt(text: str, words: Iterable[str], size: int = EXCERPT_CHARS) -> Text:
    """The window of `size` characters holding most whole-word matches, the matches in bold."""
    flat = " ".join(printable(text).split())
    pattern = _pattern(words)
    spans = [m.span() for m in pattern.finditer(flat)] if pattern else []
    start = 0
    if spans and len(flat) > size:
        best = max(range(len(spans)), key=lambda i: sum(1 for s, _ in spans[i:] if s < spans[i][0] + size - 40))
        start = max(0, spans[best][0] - 40)  # a little context before the first match
        start = min(start, len(flat) - size)
        if start > 0 and (space := flat.find(" ", start)) != -1 and space - start < 20:
            start = space + 1  # begin on a word
    end = min(len(flat), start + size)
    if end < len(flat) and (space := flat.rfind(" ", start, end)) > start + size // 2:
        end = space  # end on a word
    out = Text("… " if start > 0 else "")
    piece = Text(flat[start:end])
    for s, e in spans:
        if s >= start and e <= end:
            piece.stylize("bold", s - start, e - start)
    out.append_text(piece)
    if end < len(flat):
        out.append(" …")
    return out


def _pattern(words: Iterable[str]) -> re.Pattern | None:
    words = [w for w in words if w]
    if not words:
        return None
    return re.compile(r"(?<![\w])(?:" + "|".join(re.escape(w) for w in words) + r")(?![\w])", re.I | re.U)


def citation(doc_key: str, source: str, url: str, page: int | None) -> Text:
    """The cited place in full: a file's path from its source's root (with its page), else the URL;
    a hyperlink to `url`."""
    prefix = f"{source}:"
    path = doc_key[len(prefix) :] if doc_key.startswith(prefix) and _is_file(url) else ""
    shown = path + ("#" + url.partition("#")[2] if path and "#" in url else "") or url or doc_key  # its anchor too
    shown = printable(shown)
    if page is not None:
        shown += f", page {page}"
    link = url.startswith(("http://", "https://", "file://")) and url.isprintable()  # a control ends OSC 8 early
    return Text(shown, style=Style(link=url) if link else "")


def _is_file(url: str) -> bool:
    """A file of a tree (git, a directory): its key holds its path. A Confluence page is cited by URL."""
    return not url.startswith(("http://", "https://")) or "/blob/" in url or "/-/blob/" in url or "/src/" in url


def path_lines(text: Text, width: int) -> Text:
    """A path or URL too long for `width` columns broken after a `/` (rich would cut it mid-name);
    a single name longer than the width is left to the column to fold."""
    plain = text.plain
    if cell_len(plain) <= width or width < 8:
        return text
    lines, line = [], ""
    for part in re.findall(r"[^/]*/|[^/]+$", plain):
        if line and cell_len(line + part) > width:
            lines.append(line)
            line = ""
        line += part
    lines.append(line)
    return Text("\n".join(lines), style=text.style)


def block(
    rank: str, score: str, head: Text, cite: Text, body: Text | None = None, width: int | None = None
) -> RenderableType:
    """One result: `rank score` in a column of its own; beside it, with a hanging indent however they
    wrap, the heading, the citation (broken after a `/` to fit `width`, the console's) and the excerpt."""
    if width is not None:
        cite = path_lines(cite, width - cell_len(rank) - cell_len(score) - 2)
    grid = Table.grid(padding=(0, 1))
    grid.add_column(no_wrap=True)
    grid.add_column(overflow="fold")  # a long path folds onto the next line, never loses its end
    grid.add_row(Text.assemble((rank, "bold"), " ", (score, "dim")), Group(head, cite, *([body] if body else [])))
    return Padding(grid, (0, 0, 1, 0))


def emit(console: Console, renderable: RenderableType) -> None:
    """Print; into a pipe or a file, without the spaces rich pads an indented block's lines with."""
    if console.is_terminal:
        console.print(renderable)
        return
    with console.capture() as cap:
        console.print(renderable)
    console.file.write("".join(line.rstrip() + "\n" for line in cap.get().splitlines()))


def heading(title: str, extra: str = "") -> Text:
    """`title › section` in bold, then what else the reader asked to see (rerank, ranks), dim."""
    return Text.assemble((printable(title), "bold"), (f" {printable(extra)}" if extra else "", "dim"))

"""Text from documents is data, never control (issue 48): the one function that makes any string
safe to write to a terminal.

A file name, a page title, a question or an error message may hold terminal controls: ESC starts
an escape sequence (colours, a window title, a hyperlink, a cursor jump), BEL ends one, a carriage
return rewrites the line, a newline splits a citation in two, a right-to-left override turns a name
around. `printable` shows every such character as what it is, `\\x1b`, `\\x07`, `\\u202e`, so a
reader sees the name the document really has and its terminal obeys none of it; whitespace
controls (newline, tab, carriage return, form feed and the Unicode line separators) are folded to
one space, or with `lines=True` newlines kept (a log message of several lines).

Every CLI renderer (search, ask citations, gaps, status, sources, ingest progress and summaries,
error messages, the log lines on stderr) passes what it did not write itself through it. The web
page and MCP escape for their own formats (HTML, JSON) and need nothing more.
"""

from __future__ import annotations

import re
import unicodedata

# C0 and C1 controls, DEL; and the invisible format characters that reorder or hide text (bidi
# embeddings, overrides and isolates, zero-width joiners, the BOM), Unicode category Cf.
_FOLD = re.compile(r"[\t\n\v\f\r\u0085\u2028\u2029]+")
_FOLD_KEEP_LINES = re.compile(r"\r\n|[\t\v\f\r\u0085\u2028\u2029]+")


def printable(text: object, lines: bool = False) -> str:
    """`text` (made a string) with every control or format character shown as an escape (`\\x1b`,
    `\\u202e`), whitespace controls folded to a space (`lines`: newlines kept, one per line)."""
    s = str(text)
    if s.isprintable():  # the common case: nothing to do (a space is printable, a newline is not)
        return s
    s = (_FOLD_KEEP_LINES if lines else _FOLD).sub(lambda m: "\n" if m.group(0) == "\r\n" else " ", s)
    return "".join(_shown(c) if c != "\n" or not lines else c for c in s)


def _shown(c: str) -> str:
    if c == "\n":
        return " "
    if c.isprintable() or c == " ":
        return c
    code = ord(c)
    if code < 0x20 or 0x7F <= code <= 0x9F:
        return f"\\x{code:02x}"
    if unicodedata.category(c) in ("Zs",):
        return " "  # a space of another width: harmless
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"

"""JSON as the standard has it, for input from outside (request bodies, webhooks, MCP lines, `docforge verify`
lines), bounded before it is decoded.

Python's `json` reads `NaN`, `Infinity` and `-Infinity` (and turns `1e400` into
infinity): none is JSON, and a value that holds one cannot be written back as
JSON. It also recurses once per nesting level, so a line of 100,000 `[` raises
RecursionError out of whoever called it. `loads` first measures the text (its size and
its nesting depth, counted without recursion) and refuses one past the bounds, then
refuses the non-finite numbers: every refusal a JSONDecodeError (a ValueError) that
says which.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

# The deepest JSON docforge takes is a filter expression: search.filter_max_depth (8) levels of
# and/or/not, two JSON levels each, inside a request object and its `filters` key, about 20 in all.
# 128 lets a filter far past that budget (50 levels: ~100 of JSON) reach the filter's own, clearer
# refusal, holds any webhook payload (GitHub's and GitLab's nest under 10), and stays below where
# pydantic-core stops (200) and far below where Python's parser recurses out (about 1,000).
MAX_DEPTH = 128
# The largest body any docforge server accepts (the model services' default, DOCFORGE_SERVICE_MAX_BODY_BYTES):
# an input larger than it is refused by every reader before it is decoded. Callers with a tighter limit
# (the API's 1 MiB, the webhooks' 1 MiB) pass it.
MAX_BYTES = 8 * 1024 * 1024

# A string literal (escapes included), unrolled so long strings cost one pass: its brackets are no nesting.
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_STRING_B = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_NOT_BRACKET_B = re.compile(rb"[^\[\]{}]+")


def depth(data: bytes | str) -> int:
    """The text's deepest nesting of arrays and objects (brackets inside strings do not count)."""
    if isinstance(data, bytes):
        brackets = _NOT_BRACKET_B.sub(b"", _STRING_B.sub(b"", data)).decode("ascii")
    else:
        brackets = _NOT_BRACKET.sub("", _STRING.sub("", data))
    level = deepest = 0
    for c in brackets:
        level += 1 if c in "[{" else -1
        deepest = max(deepest, level)
    return deepest


def check(data: bytes | str, max_bytes: int = MAX_BYTES, max_depth: int = MAX_DEPTH) -> None:
    """Refuse a text larger than `max_bytes` or nested deeper than `max_depth` (JSONDecodeError), undecoded."""
    size = len(data) if isinstance(data, bytes) else len(data.encode("utf-8", "surrogatepass"))
    if size > max_bytes:
        raise json.JSONDecodeError(f"{size} bytes is too large (the limit is {max_bytes})", "", 0)
    if (d := depth(data)) > max_depth:
        raise json.JSONDecodeError(f"nested {d} levels deep (the limit is {max_depth})", "", 0)


def _no_constant(name: str) -> Any:
    raise json.JSONDecodeError(f"{name} is not a JSON number (non-finite numbers are refused)", name, 0)


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise json.JSONDecodeError(f"{text} is too large for a number (non-finite numbers are refused)", text, 0)
    return value


def loads(data: bytes | str, max_bytes: int = MAX_BYTES, max_depth: int = MAX_DEPTH) -> Any:
    """`json.loads` of a text within the bounds (`check`), refusing non-finite numbers (JSONDecodeError)."""
    check(data, max_bytes, max_depth)
    try:
        return json.loads(data, parse_constant=_no_constant, parse_float=_finite)
    except RecursionError:  # not reached within MAX_DEPTH; kept so no caller ever sees one
        raise json.JSONDecodeError("nested too deeply", "", 0) from None

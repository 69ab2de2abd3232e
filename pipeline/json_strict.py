"""JSON as the standard has it, for input from outside (request bodies, `docforge verify` lines).

Python's `json` reads `NaN`, `Infinity` and `-Infinity` (and turns `1e400` into
infinity): none is JSON, and a value that holds one cannot be written back as
JSON. `loads` refuses them, and a text nested past the parser's depth, with a
JSONDecodeError that says which.
"""

from __future__ import annotations

import json
import math
from typing import Any


def _no_constant(name: str) -> Any:
    raise json.JSONDecodeError(f"{name} is not a JSON number (non-finite numbers are refused)", name, 0)


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise json.JSONDecodeError(f"{text} is too large for a number (non-finite numbers are refused)", text, 0)
    return value


def loads(data: bytes | str) -> Any:
    """`json.loads` that refuses non-finite numbers and nesting past the parser's depth (JSONDecodeError)."""
    try:
        return json.loads(data, parse_constant=_no_constant, parse_float=_finite)
    except RecursionError:
        raise json.JSONDecodeError("nested too deeply", "", 0) from None

"""Text hygiene where text enters the parsers and the chunker."""

from __future__ import annotations

import re

_SURROGATE = re.compile("[\ud800-\udfff]")  # in a str, any of these is unpaired: it has no UTF-8 form


def scrub(text: str) -> str:
    """The text with every lone surrogate replaced by U+FFFD, so it can be encoded, tokenised and stored."""
    return _SURROGATE.sub("\ufffd", text) if _SURROGATE.search(text) else text


def first_surrogate(text: str) -> int | None:
    """Index of the first lone surrogate, or None when the text is valid Unicode."""
    m = _SURROGATE.search(text)
    return m.start() if m else None

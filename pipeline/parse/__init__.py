"""Documents → sections. One parser per document kind, chosen by `Document.kind`
(pipeline.parse.dispatch); each returns `Parsed` (pipeline.parse.parsed)."""

from __future__ import annotations

from pipeline.parse.dispatch import parse_document
from pipeline.parse.parsed import Parsed

__all__ = ["Parsed", "parse_document"]

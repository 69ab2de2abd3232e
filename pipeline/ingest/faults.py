"""Per-document fault isolation: whatever one document raises becomes its Failure, and the rest go on.

A lost store connection is not one document's fault: it is re-raised so the stage
stops (and resumes on the next run) instead of failing every remaining document.
"""

from __future__ import annotations

import psycopg

from pipeline.parse.text import first_surrogate, scrub
from pipeline.records import Document, Failure
from pipeline.redact import redact

MAX_ERROR_CHARS = 500  # a failure message says what went wrong, it does not carry the document


def store_lost(error: BaseException) -> bool:
    """True when the error is the connection's, not the document's."""
    return isinstance(error, (psycopg.OperationalError, psycopg.InterfaceError))


def failure(key: str, stage: str, error: BaseException) -> Failure:
    # Redacted before it is cut (pipeline.redact): a secret split by the cut would survive.
    return Failure(key, stage, redact(storable(f"{type(error).__name__}: {error}"), MAX_ERROR_CHARS))


def storable(text: str) -> str:
    """Text Postgres accepts: lone surrogates become U+FFFD, NUL an escape."""
    return scrub(text).replace("\x00", "\\x00")


def unstorable(doc: Document) -> str | None:
    """Why a fetched document's text cannot be indexed as it is, or None.

    A lone surrogate (e.g. from a JSON `\\ud800` escape) is no character at all, and
    Postgres text cannot hold NUL: the document is reported, not silently altered.
    """
    for field, text in (("content", doc.content), ("title", doc.title)):
        if (i := first_surrogate(text)) is not None:
            return f"the {field} is not valid Unicode (lone surrogate U+{ord(text[i]):04X} at character {i}): skipped"
        if (i := text.find("\x00")) >= 0:
            return f"the {field} holds a NUL character (at character {i}): skipped"
    return None

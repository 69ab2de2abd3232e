"""From bytes to a Document's text: shared by the sources, a leaf they import (never the package back)."""

from __future__ import annotations

import hashlib

from pipeline.errors import ParseError
from pipeline.parse.formats import BINARY_DOCUMENTS
from pipeline.records import DocRef, Document, Failure
from pipeline.sources.files import shown_path


def sha256_text(text: str) -> str:
    # surrogatepass: a text with a lone surrogate still gets a hash, so it reaches the check that reports it
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def decode_text(key: str, data: bytes) -> str | Failure:
    """UTF-8 text, or a Failure saying why the bytes are not a text document."""
    if b"\x00" in data:  # anywhere: Postgres text cannot hold NUL
        return Failure(key, "decode", "binary file (NUL byte found): skipped")
    try:
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as e:
        return Failure(key, "decode", f"not valid UTF-8 ({e.reason} at byte {e.start}): skipped")


def file_document(ref: DocRef, data: bytes, fmt: str, title: str, url: str) -> Document | Failure:
    """A file's Document: text decoded as UTF-8, a PDF or Word file extracted to its sections
    (pipeline.parse.binary); an undecodable, encrypted or corrupt file is a Failure for it alone.
    The one per-file fault boundary of the sources that read files: whatever else goes wrong with
    this file fails it alone, and the rest of the source goes on."""
    try:
        content = _content(ref.key, fmt, data)
    except ParseError as e:
        return Failure(ref.key, "parse", str(e))
    except Exception as e:  # this file alone, whatever failed: the rest of the source goes on
        return Failure(ref.key, "fetch", f"{shown_path(ref.path)}: {type(e).__name__}: {e}")
    if isinstance(content, Failure):
        return content
    return Document(ref, fmt, title, url, content, sha256_text(content))


def _content(key: str, fmt: str, data: bytes) -> str | Failure:
    if fmt in BINARY_DOCUMENTS:
        from pipeline.parse.binary import extract

        return extract(fmt, data)
    return decode_text(key, data)

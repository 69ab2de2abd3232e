"""Sources list documents cheaply, then fetch only what changed (pipeline.sources.source:
the `Source` protocol and `open_source`, the client for one configured source)."""

from __future__ import annotations

from pipeline.sources.content import decode_text, file_document, sha256_text
from pipeline.sources.source import Source, failed_by, open_source, skipped_by

__all__ = ["Source", "decode_text", "failed_by", "file_document", "open_source", "sha256_text", "skipped_by"]

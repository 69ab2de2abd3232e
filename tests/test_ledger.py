"""The ledger's rules (pipeline.ingest.ledger), pure: no Postgres, no model."""

from __future__ import annotations

import pytest

from pipeline.chunk import CHUNKER_VERSION, fingerprint, window
from pipeline.ingest.ledger import FetchOutcome, Fingerprint, LedgerRow, decide, plan, unwanted_staging
from pipeline.parse.parsed import PARSER_VERSION
from pipeline.records import DocRef

NOW = Fingerprint(chunker="2:m:256:0", model="m")


def row(
    key: str,
    *,
    version: str | None = None,
    mtime_ns: int | None = None,
    size: int | None = None,
    content_hash: str = "h",
    now: Fingerprint = NOW,
) -> LedgerRow:
    return LedgerRow(key, mtime_ns, size, version, content_hash, now.chunker, now.model)


def planned(refs: list[DocRef], rows: list[LedgerRow], now: Fingerprint = NOW) -> tuple:
    p = plan(refs, {r.doc_key: r for r in rows}, now)
    return p.skip, tuple(r.key for r in p.fetch), p.delete


def test_same_version_is_skipped_and_a_new_version_fetched():
    rows = [row("s:a", version="v1"), row("s:b", version="v1")]
    refs = [DocRef("s:a", "a", version="v1"), DocRef("s:b", "b", version="v2")]
    assert planned(refs, rows) == (("s:a",), ("s:b",), ())


def test_without_a_version_mtime_and_size_decide():
    rows = [row("s:a", mtime_ns=10, size=5), row("s:b", mtime_ns=10, size=5), row("s:c", mtime_ns=10, size=5)]
    refs = [
        DocRef("s:a", "a", mtime_ns=10, size=5),
        DocRef("s:b", "b", mtime_ns=11, size=5),
        DocRef("s:c", "c", mtime_ns=10, size=6),
    ]
    assert planned(refs, rows) == (("s:a",), ("s:b", "s:c"), ())


def test_a_listing_with_no_evidence_is_always_read():
    assert planned([DocRef("s:a", "a")], [row("s:a")]) == ((), ("s:a",), ())


def test_a_version_outranks_mtime():
    """A source that offers a version is judged by it alone: a touched file with the same blob is skipped."""
    rows = [row("s:a", version="v1", mtime_ns=10, size=5)]
    assert planned([DocRef("s:a", "a", version="v1", mtime_ns=99, size=5)], rows) == (("s:a",), (), ())


@pytest.mark.parametrize("built_with", [Fingerprint("1:m:256:0", "m"), Fingerprint("2:m:256:0", "other")])
def test_rows_of_another_chunker_or_model_count_for_nothing(built_with):
    rows = [row("s:a", version="v1", now=built_with)]
    refs = [DocRef("s:a", "a", version="v1")]
    assert planned(refs, rows) == ((), ("s:a",), ())
    assert decide("h", rows[0], NOW) is FetchOutcome.UPDATE  # same content, but chunked by another


def test_indexed_documents_no_longer_listed_are_deleted():
    rows = [row("s:a", version="v1"), row("s:gone", version="v1")]
    assert planned([DocRef("s:a", "a", version="v1"), DocRef("s:new", "new", version="v1")], rows) == (
        ("s:a",),
        ("s:new",),
        ("s:gone",),
    )


def test_an_empty_listing_deletes_everything_and_an_empty_ledger_fetches_everything():
    assert planned([], [row("s:a"), row("s:b")]) == ((), (), ("s:a", "s:b"))
    assert planned([DocRef("s:a", "a", version="v")], []) == ((), ("s:a",), ())


def test_decide_fetched_documents():
    indexed = row("s:a", content_hash="h1")
    assert decide("h1", indexed, NOW) is FetchOutcome.REFRESH  # touched, not changed
    assert decide("h2", indexed, NOW) is FetchOutcome.UPDATE
    assert decide("h1", None, NOW) is FetchOutcome.ADD


def test_unwanted_staging():
    staged = ["s:reverted", "s:vanished", "s:failing", "s:pending", "s:deleted"]
    assert unwanted_staging(
        staged,
        settled={"s:reverted"},
        listed={"s:reverted", "s:failing", "s:pending"},
        indexed={"s:reverted", "s:deleted"},
        failed={"s:failing"},
    ) == ["s:reverted", "s:vanished", "s:failing"]


def test_chunker_fingerprint_is_what_the_chunks_depend_on():
    base = fingerprint("m", 256, None, 0)
    assert base == f"{CHUNKER_VERSION}.{PARSER_VERSION}:m:256:0"
    assert fingerprint("m", 256, 1000, 0) == base  # a budget above the model's window is the window
    assert window(256, 1000) == window(256) == 256 and window(256, 128) == 128
    others = {
        fingerprint("other", 256, None, 0),
        fingerprint("m", 512, None, 0),
        fingerprint("m", 256, 128, 0),
        fingerprint("m", 256, None, 32),
    }
    assert len(others) == 4 and base not in others

"""The repeat discount on a real store: a long reference page is many entries, and the entry that answers
a question is often the page's second or third best chunk. Scored × 0.5 per chunk before it, it fell below
weaker pages' best chunks; the default (0.8, measured in docs/query.md) keeps a close second in place."""

from __future__ import annotations

import psycopg
import pytest

from pipeline.query import SearchConfig, Searcher
from tests.helpers import ingested_repo

QUERY = "how large may the log file grow before it is rotated, and how many rotated log files are kept?"
ENTRIES = {  # the two entries that answer are not neighbours, so they are two hits, not one passage
    "log-max-size": "the largest size a log file may grow to before the server rotates it",
    "listen-port": "the TCP port on which the server accepts client connections",
    "worker-threads": "how many threads serve client requests at once",
    "log-max-files": "how many rotated log files are kept after the log file grows large and is rotated",
    "cache-memory": "how much memory the response cache may hold",
    "tls-certificate": "the file holding the certificate the server presents to clients",
}


def _entry(name: str, what: str) -> str:
    """One option's entry, long enough to be a chunk of its own."""
    body = " ".join(
        f"The `{name}` option sets {what}; note {i}: operators review `{name}` when they tune the server."
        for i in range(5)
    )
    return f"## {name}\n\n{body}\n"


@pytest.fixture(scope="module")
def store(pg_server, embedder, tmp_path_factory):
    """A long page of option entries beside two short pages that touch the question's words."""
    url, _, settings = ingested_repo(
        pg_server,
        embedder,
        tmp_path_factory.mktemp("repeat"),
        "srv",
        {
            "docs/options.md": "# Server options\n\n" + "\n".join(_entry(n, w) for n, w in ENTRIES.items()),
            "docs/disk.md": "# Disk space\n\nWhen the disk fills up, the server stops writing its log file "
            "and says so once a minute until space is freed.\n",
            "docs/upgrade.md": "# Upgrading\n\nAn upgrade keeps the server's log files and its settings; "
            "read the release notes before you start.\n",
        },
    )
    with psycopg.connect(url) as conn:  # the premise: each entry is a chunk of its own
        n = conn.execute("SELECT count(*) FROM chunks WHERE doc_key = 'srv:docs/options.md'").fetchone()[0]
        assert n >= len(ENTRIES)
    return url, settings


def _sections(store, embedder, discount: float | None = None) -> list[str]:
    """The last heading of each hybrid hit, best first (None: the configured discount)."""
    url, settings = store
    cfg = SearchConfig(repeat_discount=discount) if discount is not None else None
    with Searcher(settings, url=url, embedder=embedder, reranker=None, config=cfg) as s:
        hits = s.search(QUERY, limit=5, mode="hybrid", per_doc=0)
    return [h.section.split(" > ")[-1] for h in hits]


def test_a_pages_close_second_entry_stays_above_weaker_pages(store, embedder):
    assert SearchConfig().repeat_discount == 0.8
    assert sorted(_sections(store, embedder)[:2]) == ["log-max-files", "log-max-size"]


def test_at_half_the_second_entry_fell_below_a_weaker_page(store, embedder):
    """What the default changed: × 0.5 put a page that merely mentions the log file between the two."""
    assert "Disk space" in _sections(store, embedder, 0.5)[:2]

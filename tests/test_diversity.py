"""Diverse results on a real store: at most `per_doc` chunks of one document in any result
list (every mode, the CLI, the HTTP API, the MCP tool), neighbours in reading order."""

from __future__ import annotations

import asyncio
import json
from collections import Counter

import httpx
import psycopg
import pytest
from click.testing import CliRunner

from docforge.cli import main
from docforge.servers import LocalSearch
from docforge.servers.api import create_app
from docforge.servers.auth import AuthConfig, Authenticator
from docforge.servers.mcp import build_mcp
from pipeline.query import MODES, SearchConfig, Searcher
from tests.helpers import ServerThread, ingested_repo

TOPICS = [
    "write amplification",
    "read amplification",
    "space amplification",
    "compaction threads",
    "level sizes",
    "tombstones",
    "bloom filters",
    "block cache",
]
QUERY = "how does compaction in the storage engine trade write amplification against reads?"


def _section(topic: str) -> str:
    """A section long enough to be a chunk of its own (the chunker packs short ones together)."""
    lines = [f"Compaction in the storage engine affects {topic} in several ways."]
    lines += [
        f"When compaction runs, {topic} changes as sorted runs are merged, step {i} of the cycle, and "
        f"operators watch {topic} on the storage dashboard before tuning the engine."
        for i in range(8)
    ]
    return f"## Compaction and {topic}\n\n" + " ".join(lines) + "\n"


@pytest.fixture(scope="module")
def store(pg_server, embedder, tmp_path_factory):
    """A long document about compaction (one chunk per section) beside two short ones."""
    url, config, settings = ingested_repo(
        pg_server,
        embedder,
        tmp_path_factory.mktemp("diversity"),
        "eng",
        {
            "docs/compaction.md": "# Compaction guide\n\n" + "\n".join(_section(t) for t in TOPICS),
            "docs/flush.md": "# Flushing memtables\n\nThe storage engine flushes a full memtable to a sorted run; "
            "compaction later merges those runs to bound read amplification.\n",
            "docs/backup.md": "# Backups\n\nSnapshots of the storage engine are taken nightly, after compaction, "
            "and copied to object storage.\n",
        },
    )
    with psycopg.connect(url) as conn:  # the premise: one document holds many chunks
        assert conn.execute("SELECT count(*) FROM chunks WHERE doc_key = 'eng:docs/compaction.md'").fetchone()[0] >= 6
    return url, config, settings


@pytest.fixture
def searcher(store, embedder):
    url, _, settings = store
    with Searcher(settings, url=url, embedder=embedder, reranker=None) as s:
        yield s


def per_doc_counts(hits) -> Counter:
    """Chunks of each document in a result list (a hit that joins neighbours holds each of them)."""
    counts: Counter = Counter()
    for h in hits:
        span = getattr(h, "span", None)
        counts[h.doc_key] += span[1] - span[0] + 1 if span else 1
    return counts


@pytest.mark.parametrize("mode", MODES)
def test_no_result_list_holds_more_chunks_of_a_document_than_the_cap(searcher, mode):
    default = SearchConfig().per_doc
    uncapped = searcher.search(QUERY, limit=20, mode=mode, per_doc=0)
    assert max(per_doc_counts(uncapped).values()) > 3  # without a cap, the long document floods the list
    for cap in (None, 1, 2, 3):
        hits = searcher.search(QUERY, limit=20, mode=mode, per_doc=cap)
        assert max(per_doc_counts(hits).values()) <= (default if cap is None else cap), (mode, cap)
        # every document the store holds still gets its chance: the cap reads deeper, it never starves
        chunks = sum(per_doc_counts(hits).values())
        assert chunks == min(20, sum(min(n, cap or default) for n in per_doc_counts(uncapped).values()))
    one = searcher.search(QUERY, limit=3, mode=mode, per_doc=1)
    assert len({h.doc_key for h in one}) == len(one) == 3


def test_the_cap_keeps_each_documents_best_chunks_in_dense_and_keyword(searcher):
    for mode in ("dense", "keyword"):
        uncapped = searcher.search(QUERY, limit=50, mode=mode, per_doc=0)
        capped = searcher.search(QUERY, limit=50, mode=mode, per_doc=2)
        want = [
            h.chunk_id for h in uncapped if sum(1 for g in uncapped[: uncapped.index(h)] if g.doc_key == h.doc_key) < 2
        ]
        assert [h.chunk_id for h in capped] == want
        assert [h.score for h in capped] == [h.score for h in uncapped if h.chunk_id in want]


def test_configured_cap_and_per_call_override(store, embedder):
    url, _, settings = store
    with Searcher(settings, url=url, embedder=embedder, reranker=None, config=SearchConfig(per_doc=4)) as s:
        assert max(per_doc_counts(s.search(QUERY, limit=20)).values()) == 4
        assert max(per_doc_counts(s.search(QUERY, limit=20, per_doc=1)).values()) == 1
    with pytest.raises(Exception, match="per_doc"):
        SearchConfig(per_doc=-1)


def test_a_documents_best_chunk_leads_and_its_neighbours_join_it(searcher):
    hits = searcher.search(QUERY, limit=20, mode="hybrid", per_doc=0)
    for doc in {h.doc_key for h in hits}:
        of_doc = [h for h in hits if h.doc_key == doc]
        assert of_doc[0].score == max(h.score for h in of_doc)  # never a weaker chunk above the best
    joined = [h for h in hits if h.span]
    assert joined  # the long document's sections are neighbours
    for h in joined:
        first, last = h.span
        assert first <= h.chunk_index <= last and last - first <= 2
        with searcher.connection() as conn:  # each chunk's text, in document order
            texts = conn.execute(
                "SELECT text FROM chunks WHERE doc_key = %s AND ordinal BETWEEN %s AND %s ORDER BY ordinal",
                (h.doc_key, first, last),
            ).fetchall()
        assert h.text == "\n\n".join(t for (t,) in texts)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_cli_per_doc_flag(store, monkeypatch):
    url, config, _ = store
    monkeypatch.setenv("DATABASE_URL", url)

    def run(*args):
        res = CliRunner().invoke(main, ["search", QUERY, "--config", str(config), "--json", "-n", "10", *args])
        return res.exit_code, res.output

    for args, cap in ((), SearchConfig().per_doc), (("--per-doc", "1"), 1), (("--per-doc", "3"), 3):
        code, out = run(*args)
        assert code == 0, out
        counts = per_doc_counts(type("H", (), {"doc_key": h["doc_key"]}) for h in json.loads(out))
        assert 1 <= max(counts.values()) <= cap  # a hit may join neighbouring chunks: hits ≤ chunks
    code, out = run("--per-doc", "-1")
    assert code == 2 and "--per-doc" in out


def test_api_and_mcp_take_per_doc(searcher):
    search = LocalSearch(searcher)
    auth = Authenticator(AuthConfig(api_tokens="tok"))
    with ServerThread(create_app(search, auth)) as api:

        def post(**extra):
            return httpx.post(
                f"{api.url}/search",
                headers={"Authorization": "Bearer tok"},
                json={"query": QUERY, "limit": 10, **extra},
                timeout=60,
            )

        for cap in (1, 3):
            resp = post(per_doc=cap)
            assert resp.status_code == 200, resp.text
            assert 1 <= max(Counter(h["doc_key"] for h in resp.json()["hits"]).values()) <= cap
        assert post(per_doc=-1).status_code == 422
    mcp = build_mcp(search)
    result = asyncio.run(
        mcp.call_tool(
            "search_documentation", {"query": QUERY, "user_name": "ada", "team_name": "storage", "per_doc": 1}
        )
    )
    hits = result.structured_content["hits"]
    assert hits and max(Counter(h["doc_key"] for h in hits).values()) == 1

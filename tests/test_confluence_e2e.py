"""End to end: a Confluence space served by the API double, ingested by `docforge ingest`
(Dagster materialisation of the source's partition), searched by `docforge search`,
with the real model and a real Postgres.

One scenario, in the order a user lives it: a first ingest through a 429 storm
and 5xx bursts with one forbidden and one corrupt page (partial failure, exit 1);
search finds text that only occurs in a code macro and in an info panel; then one
page is edited and one deleted, and the next ingest fetches one body, re-embeds
only that page's chunks and removes the deleted page's; a third ingest does nothing.
"""

from __future__ import annotations

import json
import re

import pytest

from tests.confluence_double import ConfluenceDouble
from tests.conftest_confluence import TOKEN, confluence_double, confluence_env, storage_dir  # noqa: F401
from tests.test_ingest_cli import docforge

PAGES = [
    "md2conf-code",
    "querypie-panels",
    "md2conf-collapsed",
    "md2conf-table",
    "mark-tasklists",
    "md2conf-status",
    "querypie-544381877",
]  # 7 pages; ids 910000.. for the generated ones
SECRETS = [TOKEN]


@pytest.fixture
def space(confluence_double: ConfluenceDouble, storage_dir, write_config, database_url):
    d = confluence_double
    pages = {p.title: p for p in d.add_storage_files([storage_dir / f"{n}.xhtml" for n in PAGES])}
    d.add_page("920001", "Locked", "<p>secret plans</p>", fail=403)
    d.add_page("920002", "Truncated", "<h2>Broken</h2><p>this body was cut off")
    d.add_page("920003", "Retired runbook", "<p>The zeppelin hangar procedure is obsolete.</p>")
    cfg = write_config(
        [
            {
                "name": "wiki",
                "type": "confluence",
                "base_url": d.base_url,
                "space": "DOCS",
                "tags": ["confluence"],
                "max_retry_after_s": 0.2,
                "retry_budget_s": 20,
            }
        ]
    )
    return d, pages, str(cfg)


def ingest(cfg: str, *flags: str) -> tuple[int, dict, str]:
    res = docforge(*flags, "ingest", "--config", cfg, "--json", check=False)
    for secret in SECRETS:
        assert secret not in res.stdout + res.stderr
    return res.returncode, json.loads(res.stdout)["sources"]["wiki"], res.stderr


def search(cfg: str, query: str, mode: str = "hybrid") -> list[dict]:
    res = docforge("search", query, "--config", cfg, "--json", "--mode", mode, "-n", "5")
    return json.loads(res.stdout)


def first_ingest_through_faults(d: ConfluenceDouble, cfg: str) -> None:
    d.inject(429, 4, retry_after="100000")  # absurd: clamped to 0.2 s
    d.inject(429, 3)  # no Retry-After: backoff, capped at 0.2 s
    d.inject(503, 3, endpoint="space_pages")
    d.inject(502, 2, endpoint="page")
    rc, report, log = ingest(cfg, "-vv")  # debug logging: every request and retry is logged, no secret is
    assert "429" in log and "Authorization" not in log
    assert rc == 1, "a forbidden and a corrupt page make the run a partial failure"
    assert not d.faults, "every fault was served and waited out"
    waits = [float(w) for w in re.findall(r"retrying in ([\d.]+)s", log)]
    assert len(waits) >= 12 and max(waits) <= 0.2  # one wait per fault, each within max_retry_after_s
    # 8 fetched and staged (the corrupt one fails later, at parse), 1 fetch failure
    assert report["files_added"] == 9 and report["files_failed"] == 2
    failures = {f["key"]: f for f in report["failures"]}
    assert failures["wiki:920001"]["stage"] == "fetch" and "403" in failures["wiki:920001"]["error"]
    assert failures["wiki:920002"]["stage"] == "parse" and "not well-formed" in failures["wiki:920002"]["error"]
    assert d.counts["space_pages"] >= 4  # 10 pages, at most 3 per cursor page
    assert report["chunks_embedded"] == report["chunks_indexed"] > 0


@pytest.mark.slow  # ~150 s on 2 cores: three `docforge ingest` runs through Dagster
def test_confluence_space_end_to_end(space):
    d, pages, cfg = space
    code, panels = pages["md2conf-code"], pages["querypie-panels"]
    first_ingest_through_faults(d, cfg)

    hits = search(cfg, 'System.out.println("Hello Java!")', "keyword")  # only inside a code macro
    assert hits[0]["doc_key"] == f"wiki:{code.id}" and "println" in hits[0]["text"]
    assert hits[0]["url"] == f"{d.base_url}/spaces/DOCS/pages/{code.id}" and hits[0]["title"] == code.title
    assert f"wiki:{panels.id}" in [h["doc_key"] for h in search(cfg, "This is an info panel")][:3]  # hybrid
    assert search(cfg, "zeppelin hangar procedure", "keyword")[0]["doc_key"] == "wiki:920003"

    d.bump(code.id, code.body.replace("Hello Java!", "Hello Kotlin coroutine world!"))
    d.delete("920003")
    d.pages["920001"].status = d.pages["920002"].status = "trashed"  # the failing pages go too
    d.log.clear()
    rc, report, _ = ingest(cfg)
    assert rc == 0
    assert d.body_fetches() == 1, "only the bumped page's body is fetched"
    assert (report["files_updated"], report["files_deleted"], report["files_unchanged"]) == (1, 1, 6)
    assert 0 < report["chunks_embedded"] <= 3, "only the edited page's changed chunks are embedded"
    assert "wiki:920003" not in [h["doc_key"] for h in search(cfg, "zeppelin hangar procedure", "keyword")]
    assert search(cfg, "Kotlin coroutine", "keyword")[0]["doc_key"] == f"wiki:{code.id}"

    d.log.clear()
    rc, report, _ = ingest(cfg)
    assert (rc, report["files_unchanged"], report["chunks_embedded"], d.body_fetches()) == (0, 7, 0, 0)

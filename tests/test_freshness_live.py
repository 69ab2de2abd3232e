"""Push to search through webhooks, for real: a repository served on 127.0.0.1, `dagster dev`, the API.

An unsigned and a wrongly signed delivery get 401 and start nothing; a signed GitHub delivery after a
push makes the new text searchable, through a run of the source's partition that Dagster's run history
shows. No wall-clock assertion: bench/freshness.py measures the time.
"""

from __future__ import annotations

import time

import psycopg
import pytest

from tests.live_stack import SOURCE, Stack, git

pytestmark = [pytest.mark.timeout(1500), pytest.mark.slow]


def test_signed_push_delivery_makes_the_change_searchable_through_a_dagster_run(tmp_path, database_url):
    with Stack(tmp_path, database_url) as live:
        head = git(live.work, "rev-parse", "HEAD").strip()
        before = {r["runId"] for r in live.runs({"dagster/partition": SOURCE})}
        for secret in (None, "not-the-secret"):
            res = live.deliver(head, secret=secret)
            assert res.status_code == 401, res.text
        with psycopg.connect(database_url) as conn:
            assert conn.execute("SELECT count(*) FROM deliveries").fetchone()[0] == 0
        time.sleep(12)  # a few sensor ticks: a refused delivery starts nothing
        assert {r["runId"] for r in live.runs({"dagster/partition": SOURCE})} == before

        commit = live.push("The quokka lever opens the hatch.")
        accepted = live.deliver(commit)
        assert accepted.status_code == 202 and accepted.json()["sources"] == [SOURCE]
        live.until_found("quokka", timeout=600)

        # One run of the partition for the commit: the webhook's (a poll landing first would carry the
        # same run key, and Dagster starts one run per key).
        (run,) = [r for r in live.runs({"dagster/partition": SOURCE}) if r["runId"] not in before]
        tags = {t["key"]: t["value"] for t in run["tags"]}
        assert tags["dagster/run_key"] == f"{SOURCE}@{commit}" and tags["docforge/commit"] == commit
        assert tags["docforge/trigger"] in ("webhook", "push")
        done = live.wait("the run to finish", lambda: live._runs_done({"dagster/partition": SOURCE}), 600)
        assert {r["status"] for r in done} == {"SUCCESS"}
        # The same push delivered again (a new delivery id, the same signed body) is a replay.
        assert live.deliver(commit).status_code == 401

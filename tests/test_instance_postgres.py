"""Dagster instance storage in Postgres (deploy/postgres/dagster.yaml + DAGSTER_PG_URL), for real."""

from __future__ import annotations

import uuid
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import psycopg
import pytest
import yaml
from dagster import DagsterInstance, materialize

from assets.checks import ingest_checks
from assets.ingest import ingest_assets
from orchestration.definitions import resources

ROOT = Path(__file__).resolve().parents[1]
PG_HOME = ROOT / "deploy" / "postgres"


@pytest.fixture
def dagster_pg_url(pg_server, monkeypatch, tmp_path) -> str:
    """A fresh database for Dagster's own storage, as a psycopg2 URL over the server's unix socket."""
    name = f"dagster_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(pg_server.get_uri(), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    socket_dir = parse_qs(urlparse(pg_server.get_uri()).query)["host"][0]
    url = f"postgresql+psycopg2://postgres@/{name}?host={socket_dir}"
    monkeypatch.setenv("DAGSTER_PG_URL", url)
    monkeypatch.chdir(tmp_path)  # artifacts and compute logs go to ./.docforge/dagster
    return pg_server.get_uri(name)


def test_the_postgres_yaml_differs_from_the_default_only_in_storage():
    default = yaml.safe_load((ROOT / "dagster.yaml").read_text())
    pg = yaml.safe_load((PG_HOME / "dagster.yaml").read_text())
    assert pg.pop("storage") == {"postgres": {"postgres_url": {"env": "DAGSTER_PG_URL"}}}
    assert default.pop("storage") == {"sqlite": {"base_dir": ".docforge/dagster"}}
    assert pg == default


def test_a_materialisation_lands_its_events_in_postgres(dagster_pg_url, database_url, make_repo, write_config):
    repo = make_repo({"README.md": "# Widget\n\nWidgets turn cranks.\n"})
    cfg = write_config([{"name": "docs", "type": "git", "repo": str(repo)}])
    instance = DagsterInstance.from_config(str(PG_HOME))
    try:
        assert type(instance.run_storage).__name__ == "PostgresRunStorage"
        instance.add_dynamic_partitions("sources", ["docs"])
        res = materialize(
            [*ingest_assets, *ingest_checks], partition_key="docs", instance=instance, resources=resources(str(cfg))
        )
        assert res.success
        checks = res.get_asset_check_evaluations()
        assert len(checks) == 4 and all(c.passed for c in checks)
    finally:
        instance.dispose()
    with psycopg.connect(dagster_pg_url) as conn:
        status = conn.execute("SELECT status FROM runs WHERE run_id = %s", (res.run_id,)).fetchone()
        kinds = {
            r[0] for r in conn.execute("SELECT dagster_event_type FROM event_logs WHERE run_id = %s", (res.run_id,))
        }
        partitions = [
            r[0] for r in conn.execute("SELECT partition FROM dynamic_partitions WHERE partitions_def_name = 'sources'")
        ]
        materialized = conn.execute(
            "SELECT count(*) FROM event_logs WHERE run_id = %s AND dagster_event_type = 'ASSET_MATERIALIZATION' "
            "AND partition = 'docs'",
            (res.run_id,),
        ).fetchone()[0]
    assert status == ("SUCCESS",)
    assert {"STEP_SUCCESS", "ASSET_MATERIALIZATION", "ASSET_CHECK_EVALUATION"} <= kinds
    assert materialized == 3 and partitions == ["docs"]

"""The wiring: definitions and workspace load, instance configs validate, deploy docs stay true."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import uuid
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import jsonschema
import psycopg
import pytest
import yaml
from dagster import AssetKey, BackfillPolicy, DagsterInstance, DefaultScheduleStatus, DefaultSensorStatus

from assets.ingest import embed_op_tags
from orchestration.definitions import defs
from orchestration.jobs import executor
from pipeline.errors import ConfigError

ROOT = Path(__file__).resolve().parents[1]
DEPLOY_MD = ROOT / "docs" / "deploy.md"
ASSETS = ["documents", "chunks", "chunk_embeddings"]
CHECKS = {"chunks_have_embeddings", "no_orphan_chunks", "ledger_matches_index", "chunks_fit_model_window"}


def test_definitions_wire_assets_checks_job_schedule_and_sensors():
    repo = defs.get_repository_def()
    graph = repo.asset_graph
    assert sorted(k.path[0] for k in graph.get_all_asset_keys()) == sorted(ASSETS)
    assert {k.name for k in graph.asset_check_keys} == CHECKS
    assert {k.asset_key for k in graph.asset_check_keys} == {AssetKey("chunk_embeddings")}
    job = defs.resolve_job_def("ingest")
    assert job.partitions_def.name == "sources"
    assert {s.name: s.default_status for s in repo.schedule_defs} == {"docforge_nightly": DefaultScheduleStatus.RUNNING}
    assert {s.name: s.default_status for s in repo.sensor_defs} == {
        "docforge_push": DefaultSensorStatus.RUNNING,
        "docforge_sources_sync": DefaultSensorStatus.RUNNING,
    }
    assert all(s.job_name == "ingest" for s in [*repo.schedule_defs, *repo.sensor_defs])


def test_backfills_run_one_partition_per_run_and_embedding_uses_the_gpu_pool():
    graph = defs.get_repository_def().asset_graph
    for name in ASSETS:
        node = graph.get(AssetKey(name))
        assert node.backfill_policy == BackfillPolicy.multi_run(1)
    nodes = {n.name: n for n in defs.resolve_job_def("ingest").graph.node_defs}
    assert nodes["chunk_embeddings"].pool == "gpu"
    assert nodes["documents"].pool is None and nodes["chunks"].pool is None


def test_workspace_yaml_loads_through_the_dagster_cli(tmp_path):
    env = {**os.environ, "DAGSTER_HOME": str(tmp_path), "DOCFORGE_CONFIG": str(ROOT / "sources.yml")}
    res = subprocess.run(
        [str(Path(sys.executable).parent / "dagster"), "definitions", "validate", "-w", str(ROOT / "workspace.yaml")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 0, res.stdout + res.stderr


def test_default_instance_keeps_sqlite_under_docforge_home_and_limits_the_pool(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # where `dagster dev` starts: the repository root in real use
    for var in ("DAGSTER_HOME", "DOCFORGE_DAGSTER_DIR", "DAGSTER_PG_URL"):  # none is needed
        monkeypatch.delenv(var, raising=False)
    instance = DagsterInstance.from_config(str(ROOT))
    try:
        assert type(instance.run_storage).__name__ == "SqliteRunStorage"
        assert instance.get_concurrency_config().pool_config.default_pool_limit == 1
    finally:
        instance.dispose()
    assert (tmp_path / ".docforge" / "dagster" / "history" / "runs.db").is_file()


def test_executor_is_dagsters_default_unless_chosen(monkeypatch):
    monkeypatch.delenv("DOCFORGE_EXECUTOR", raising=False)
    assert executor() is None
    monkeypatch.setenv("DOCFORGE_EXECUTOR", "in_process")
    assert executor().name == "in_process"
    monkeypatch.setenv("DOCFORGE_EXECUTOR", "celery")
    with pytest.raises(ConfigError, match="DOCFORGE_EXECUTOR='celery'"):
        executor()


# --- docs/deploy.md: every snippet parses, and the configs validate ---------------------------------


def blocks(lang: str) -> dict[str, str]:
    """Fenced blocks of `lang` in deploy.md, keyed by their first line (a `# what this is` comment)."""
    found = re.findall(rf"```{lang}\n(.*?)```", DEPLOY_MD.read_text(), flags=re.S)
    return {b.splitlines()[0]: b for b in found}


def block(prefix: str) -> dict:
    return yaml.safe_load(next(b for head, b in blocks("yaml").items() if head.startswith(prefix)))


def test_every_yaml_block_parses():
    assert len(blocks("yaml")) >= 3
    for text in blocks("yaml").values():
        assert isinstance(yaml.safe_load(text), dict)


def test_the_k8s_instance_config_loads_as_a_dagster_instance(tmp_path, pg_server, monkeypatch):
    """Dagster's own loader (the public DagsterInstance.from_config) validates the block against its schema
    and opens the instance; its Postgres storage is pointed at the test server, over its unix socket."""
    config = block("# dagster.yaml on Kubernetes")
    name = f"dagster_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(pg_server.get_uri(), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    uri = urlparse(pg_server.get_uri())
    db = config["storage"]["postgres"]["postgres_db"]
    assert db["db_name"] == "dagster" and db["password"] == {"env": "DAGSTER_PG_PASSWORD"}
    socket = parse_qs(uri.query)["host"][0]
    db.update(hostname="localhost", port=uri.port or 5432, username=uri.username, db_name=name, params={"host": socket})
    monkeypatch.setenv("DAGSTER_PG_PASSWORD", uri.password or "")
    (tmp_path / "dagster.yaml").write_text(yaml.safe_dump(config))
    instance = DagsterInstance.from_config(str(tmp_path))
    try:
        assert type(instance.run_storage).__name__ == "PostgresRunStorage"
        assert instance.get_ref().run_launcher_data.class_name == "K8sRunLauncher"
    finally:
        instance.dispose()


_OBJ = {"type": "object"}
_K8S_LAUNCHER_KEYS = [
    "image",
    "imagePullPolicy",
    "jobNamespace",
    "loadInclusterConfig",
    "kubeconfigFile",
    "envConfigMaps",
    "envSecrets",
    "envVars",
    "volumeMounts",
    "volumes",
    "labels",
    "failPodOnRunFailure",
    "resources",
    "schedulerName",
    "securityContext",
    "runK8sConfig",
]
HELM_SCHEMA = {  # the parts of the chart's values.schema.json this page uses, with no unknown keys allowed
    "type": "object",
    "required": ["dagster-user-deployments", "runLauncher", "postgresql", "concurrency"],
    "properties": {
        "dagster-user-deployments": {
            "type": "object",
            "required": ["enabled", "deployments"],
            "properties": {
                "deployments": {
                    "type": "array",
                    "minItems": 1,
                    "items": {
                        "type": "object",
                        "required": ["name", "image", "dagsterApiGrpcArgs", "port"],
                        "properties": {
                            "image": {"type": "object", "required": ["repository", "tag", "pullPolicy"]},
                            "env": {"type": "array", "items": {"type": "object", "required": ["name", "value"]}},
                            "envSecrets": {"type": "array", "items": {"type": "object", "required": ["name"]}},
                        },
                    },
                }
            },
        },
        "runLauncher": {
            "type": "object",
            "required": ["type", "config"],
            "properties": {
                "type": {"const": "K8sRunLauncher"},
                "config": {
                    "type": "object",
                    "required": ["k8sRunLauncher"],
                    "properties": {
                        "k8sRunLauncher": {
                            "type": "object",
                            "additionalProperties": False,
                            "properties": {k: {} for k in _K8S_LAUNCHER_KEYS},
                        }
                    },
                },
            },
        },
        "postgresql": {
            "type": "object",
            "required": ["enabled", "postgresqlHost", "postgresqlUsername", "postgresqlDatabase"],
        },
        "concurrency": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "enabled": {"type": "boolean"},
                "pools": {
                    "type": "object",
                    "additionalProperties": False,
                    "properties": {
                        "defaultLimit": {"type": "integer"},
                        "granularity": {"enum": ["op", "run"]},
                        "opGranularityRunBuffer": {"type": "integer"},
                    },
                },
                "runs": {
                    "type": "object",
                    "additionalProperties": False,
                    "properties": {"maxConcurrentRuns": {"type": "integer"}, "tagConcurrencyLimits": {"type": "array"}},
                },
            },
        },
    },
}


def test_the_helm_values_have_the_keys_the_chart_needs():
    values = block("# values.yaml")
    jsonschema.validate(values, HELM_SCHEMA)
    code = values["dagster-user-deployments"]["deployments"][0]
    assert code["dagsterApiGrpcArgs"] == ["--module-name", "orchestration.definitions"]
    assert {e["name"]: e["value"] for e in code["env"]}["DOCFORGE_EXECUTOR"] == "k8s"
    # The chart renders these pool/run limits into the instance config shown below it.
    rendered = block("# dagster.yaml on Kubernetes")["concurrency"]
    assert rendered["pools"]["default_limit"] == values["concurrency"]["pools"]["defaultLimit"]
    assert rendered["runs"]["max_concurrent_runs"] == values["concurrency"]["runs"]["maxConcurrentRuns"]


def test_the_gpu_op_tags_are_what_the_page_shows(monkeypatch):
    monkeypatch.delenv("DOCFORGE_EMBED_GPUS", raising=False)
    assert embed_op_tags() == {}
    monkeypatch.setenv("DOCFORGE_EMBED_GPUS", "1")
    assert embed_op_tags() == json.loads(next(iter(blocks("json").values())))
    monkeypatch.setenv("DOCFORGE_EMBED_NODE_SELECTOR", '{"cloud.google.com/gke-accelerator": "nvidia-l4"}')
    pod = embed_op_tags()["dagster-k8s/config"]["pod_spec_config"]
    assert pod["node_selector"] == {"cloud.google.com/gke-accelerator": "nvidia-l4"}


def test_k8s_configs_validate_against_dagster_k8s(monkeypatch):
    """Only where dagster-k8s is installed (the k8s image); it is not a docforge dependency."""
    dagster_k8s = pytest.importorskip("dagster_k8s")
    from dagster._config import validate_config
    from dagster_k8s.job import UserDefinedDagsterK8sConfig

    launcher = block("# dagster.yaml on Kubernetes")["run_launcher"]["config"]
    res = validate_config(dagster_k8s.K8sRunLauncher.config_type(), launcher)
    assert res.success, res.errors
    run_config = block("# run config")["execution"]["config"]
    res = validate_config(dagster_k8s.k8s_job_executor.config_schema.config_type, run_config)
    assert res.success, res.errors
    monkeypatch.setenv("DOCFORGE_EMBED_GPUS", "1")
    tag = embed_op_tags()["dagster-k8s/config"]
    cfg = UserDefinedDagsterK8sConfig.from_dict(tag)
    assert cfg.container_config["resources"]["limits"]["nvidia.com/gpu"] == "1"


def test_sources_yml_is_read_once_per_run_and_again_for_the_next(write_config):
    """Every asset and check of one run (one sensor tick) sees one reading of sources.yml; the next reads an edit."""
    from dagster import build_resources

    from resources import SourcesResource

    config = write_config([{"name": "a", "type": "directory", "path": "."}])
    resource = SourcesResource(config_path=str(config))
    with build_resources({"sources": resource}) as run:
        first = run.sources.settings()
        write_config([{"name": "b", "type": "directory", "path": "."}])
        assert run.sources.settings() is first and [s.name for s in first.sources] == ["a"]
    with build_resources({"sources": resource}) as run:
        assert [s.name for s in run.sources.settings().sources] == ["b"]

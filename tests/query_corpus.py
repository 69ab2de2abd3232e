"""A small real corpus for the query tests: two git sources of markdown,
ingested once per session (conftest.py) through the real pipeline (real model, real Postgres)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from pathlib import Path

import psycopg
import yaml

from pipeline.config import Settings, load_settings
from pipeline.ingest import IngestContext, ingest_source
from tests.helpers import commit_repo

HANDBOOK = {
    "README.md": "# Platform handbook\n\nHow the platform team works: deploys, secrets, onboarding.\n",
    "docs/deploy.md": (
        "# Deploying the service\n\n## Production rollout\n\nReleases go out with blue-green deployments through "
        "ArgoCD. Promote the green stack once the canary error rate stays under 0.1 percent.\n\n"
        "## Rolling back\n\nIf a release misbehaves, switch traffic back to the blue stack with "
        "`argocd app rollback web` and open an incident ticket.\n"
    ),
    "docs/credentials.md": (
        "# Rotating credentials\n\nSecrets live in Vault. The Postgres password of each service is rotated "
        "every 90 days: run `vault write database/rotate-root/app` and restart the pods so they pick up "
        "the new secret.\n"
    ),
    "docs/onboarding.md": (
        "# New hire onboarding\n\nOn your first day, collect your laptop from IT, join the #platform "
        "channel and pair with your buddy on a starter ticket.\n"
    ),
    "docs/testing.md": (
        "# Running the test suite\n\nRun `make test` from the repository root; it starts an embedded "
        "database and runs pytest with coverage.\n"
    ),
}
PAYMENTS = {
    "docs/refunds.md": (
        "# Issuing refunds\n\nA customer refund is issued from the payments console: find the charge, click "
        "refund, and pick full or partial. Refunds settle in five to ten business days.\n"
    ),
    "docs/ledger.md": (
        "# The payments ledger\n\nEvery charge and refund is a double-entry ledger row; balances are "
        "reconciled nightly against the bank statement.\n"
    ),
}


@dataclass(frozen=True)
class Corpus:
    url: str
    config: Path
    settings: Settings


def build_corpus(pg_server, embedder, root: Path) -> Corpus:
    """Fresh database + two ingested sources: `handbook` (tags platform, handbook) and `payments`."""
    name = f"q_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(pg_server.get_uri(), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    url = pg_server.get_uri(name)
    commit_repo(root / "handbook", HANDBOOK)
    commit_repo(root / "payments", PAYMENTS)
    config = root / "sources.yml"
    config.write_text(
        yaml.safe_dump(
            {
                "sources": [
                    {"name": "handbook", "type": "git", "repo": "handbook", "tags": ["platform", "handbook"]},
                    {"name": "payments", "type": "git", "repo": "payments", "tags": ["payments"]},
                ]
            }
        )
    )
    settings = load_settings(config)
    ctx = IngestContext(settings, url=url, embedder=embedder)
    for source in ("handbook", "payments"):
        stats = ingest_source(ctx, source)
        assert stats.files_failed == 0, stats.failures
    return Corpus(url, config, settings)

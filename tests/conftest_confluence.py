"""Pytest fixtures for the Confluence API double (import them into a conftest or test module)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.confluence_double import ConfluenceDouble

EMAIL, TOKEN = "bot@example.com", "double-api-token-s3cr3t"
DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "confluence"
STORAGE = DATA / "storage"


@pytest.fixture
def confluence_env(monkeypatch: pytest.MonkeyPatch) -> tuple[str, str]:
    """Basic-auth credentials in the environment, and no others."""
    for var in ("CONFLUENCE_BEARER_TOKEN", "CONFLUENCE_PAT"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("CONFLUENCE_EMAIL", EMAIL)
    monkeypatch.setenv("CONFLUENCE_API_TOKEN", TOKEN)
    return EMAIL, TOKEN


@pytest.fixture
def confluence_double(confluence_env: tuple[str, str]) -> Iterator[ConfluenceDouble]:
    """A running, empty double (page size 3) that accepts the `confluence_env` credentials."""
    with ConfluenceDouble(email=EMAIL, token=TOKEN) as double:
        yield double


@pytest.fixture
def storage_dir() -> Path:
    """The shared real and generated storage-format bodies; skips when ../shared/data is absent."""
    if not (STORAGE / "manifest.json").is_file():
        pytest.skip(f"shared Confluence samples not found at {STORAGE} (needs ../shared/data)")
    return STORAGE

"""Dagster resources: thin wrappers that hand the core its configured clients (resources.clients)."""

from __future__ import annotations

from resources.clients import EmbedderResource, PostgresResource, SourcesResource, ingest_context

__all__ = ["EmbedderResource", "PostgresResource", "SourcesResource", "ingest_context"]

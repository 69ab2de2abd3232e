"""The Dagster resources: thin wrappers that hand the core its configured clients."""

from __future__ import annotations

from functools import lru_cache

from dagster import ConfigurableResource, InitResourceContext
from pydantic import PrivateAttr

from pipeline.config import EmbeddingConfig, Settings, load_settings
from pipeline.embed import Embedder, query_embedder_loading
from pipeline.ingest import IngestContext
from pipeline.progress import report
from pipeline.store.db import store_url


class SourcesResource(ConfigurableResource):
    """sources.yml: the sources, model and chunking settings, read once per run (or sensor tick):
    every asset, check and sensor of one run sees the same settings, and an edit shows in the next."""

    config_path: str = "sources.yml"
    _settings: Settings | None = PrivateAttr(default=None)

    def setup_for_execution(self, context: InitResourceContext) -> None:
        self._settings = None  # Dagster sets up a fresh copy for each run: read the file again

    def settings(self, settled: bool = False) -> Settings:
        """The settings of this run; `settled` (a sensor's tick, while the file may be rewritten): the file
        read twice a moment apart and taken only when alike (load_settings), else a ConfigError."""
        if self._settings is None:
            self._settings = load_settings(self.config_path, settled=settled)
        return self._settings


class PostgresResource(ConfigurableResource):
    """The store: DATABASE_URL when given, else the embedded server under the settings' home."""

    database_url: str | None = None

    def url(self, settings: Settings) -> str:
        return store_url(settings, self.database_url)


@lru_cache(maxsize=2)
def _embedder(cfg_json: str) -> Embedder:
    return Embedder(EmbeddingConfig.model_validate_json(cfg_json))  # one model per process


@lru_cache(maxsize=2)
def _query_path_embedder(cfg_json: str) -> Embedder:
    return query_embedder_loading(EmbeddingConfig.model_validate_json(cfg_json))


class EmbedderResource(ConfigurableResource):
    """The embedding model named in sources.yml (loaded only when something needs embedding).

    `query_path`: load it as search does (`pipeline.embed.query_embedder`): on a CPU, ONNX Runtime
    with the same weights (the export is checked against torch), so torch is never imported, and in
    the background while the run lists and chunks. A push's run sets it (orchestration.sensors).
    """

    query_path: bool = False

    def get(self, settings: Settings) -> Embedder:
        load = _query_path_embedder if self.query_path else _embedder
        return load(settings.embedding.model_dump_json())


def ingest_context(
    sources: SourcesResource, store: PostgresResource, embedder: EmbedderResource, run_id: str
) -> IngestContext:
    settings = sources.settings()
    return IngestContext(
        settings, url=store.url(settings), embedder=embedder.get(settings), run_id=run_id, progress=report
    )  # a no-op unless the CLI installed a display

"""Which embedder serves a generation: a model in this process, or the embedder service.

Ingest and search follow the store's live generation (pipeline.store.generations),
whatever `embedding.model` says: after `docforge reindex --model B`, queries are
embedded by B although sources.yml still names A (a warning says so). The model
is found by id: the configured name (model or a fallback) that resolves to the
generation's model id here, else the name it was built from.

With `EMBEDDER_URL` set, search always embeds through the service (an API
replica loads no model), and ingest does with `remote_ingest`; the service must
serve the generation's model at its dimension (pipeline.embed.remote.connect).
"""

from __future__ import annotations

import logging
from typing import Literal

from pipeline.config import EmbeddingConfig
from pipeline.embed.batching import shared
from pipeline.embed.files import locate
from pipeline.embed.loading import candidates, load_embedder, query_config, query_embedder
from pipeline.embed.model import Embedder, TextEmbedder
from pipeline.embed.remote import connect
from pipeline.embed.saved import SavedQueries
from pipeline.errors import EmbedError
from pipeline.store.generations import Generation

log = logging.getLogger(__name__)
Purpose = Literal["query", "ingest"]


def uses_service(cfg: EmbeddingConfig, purpose: Purpose) -> bool:
    """Whether `purpose` embeds through the embedder service."""
    return bool(cfg.urls) and (purpose == "query" or cfg.remote_ingest)


def config_for(cfg: EmbeddingConfig, gen: Generation) -> EmbeddingConfig:
    """`cfg` pointed at the generation's model and dimension (device, backend and the rest kept)."""
    name = next((n for n in candidates(cfg) if locate(n)[0] == gen.model), None)
    if name is None:
        log.warning(
            "the store's live generation %d uses %r; embedding.model is %r: following the store "
            "(`docforge reindex --model %s` switches it)",
            gen.id,
            gen.model,
            cfg.model,
            cfg.model,
        )
        name = gen.name if locate(gen.name)[0] == gen.model else gen.model
    return cfg.model_copy(update={"model": name, "fallbacks": [], "dimensions": gen.dimension})


def matches(emb: TextEmbedder, gen: Generation) -> bool:
    return emb.model_id == gen.model and emb.dimension == gen.dimension


def for_generation(
    cfg: EmbeddingConfig, gen: Generation, purpose: Purpose, given: TextEmbedder | None = None
) -> TextEmbedder:
    """The embedder of `gen`'s vectors: `given` when it is that model, else the service's or a local one."""
    if given is not None and matches(given, gen):
        return given
    if uses_service(cfg, purpose):
        return _for(purpose, connect(cfg, gen.model, gen.dimension))
    local = config_for(cfg, gen)
    emb = query_embedder(local) if purpose == "query" else Embedder(local)
    if emb.model_id != gen.model:
        raise EmbedError(
            f"the store's live generation {gen.id} was built with {gen.model!r}, which is not "
            f"available here (found {emb.model_id!r} for {local.model!r}): set embedding.model "
            "to its local path, or EMBEDDER_URL to a service serving it"
        )
    return _for(purpose, emb)


def model_name(cfg: EmbeddingConfig, gen: Generation) -> str:
    """The name a local embedder of `gen` goes by (`Embedder.name`), found without loading it."""
    return config_for(cfg, gen).model


def saved_queries(cfg: EmbeddingConfig, gen: Generation) -> SavedQueries | None:
    """Where this machine keeps `gen`'s query vectors between processes; None when queries go to the
    embedder service (it keeps its own)."""
    if uses_service(cfg, "query"):
        return None
    backend = query_config(cfg).backend
    return SavedQueries(cfg.cache_dir / "queries", gen.model, gen.dimension, backend, cfg.device)


def for_config(cfg: EmbeddingConfig, purpose: Purpose) -> TextEmbedder:
    """The configured model's embedder, before any generation exists (an empty store)."""
    if uses_service(cfg, purpose):
        return _for(purpose, connect(cfg))
    return _for(purpose, query_embedder(cfg) if purpose == "query" else Embedder(cfg))


def _for(purpose: Purpose, emb: TextEmbedder) -> TextEmbedder:
    """Query embedders share forward passes between concurrent searches (pipeline.embed.batching)."""
    return shared(emb) if purpose == "query" else emb


def for_new_store(cfg: EmbeddingConfig, given: Embedder | None = None) -> TextEmbedder:
    """The embedder a store without generations is built with: the service's (remote ingest), `given`
    if it loads, else the first of model + fallbacks that loads."""
    if uses_service(cfg, "ingest"):
        return connect(cfg)
    return load_embedder(cfg, first=given)

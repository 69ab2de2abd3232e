"""`docforge serve --embedder` and `--reranker`: the model sidecars of a hosted deployment (docs/deploy.md)."""

from __future__ import annotations

from pathlib import Path

import click

from pipeline.config import DEFAULT_CONFIG, Settings, env_settings, load_settings
from pipeline.errors import ConfigError

PORTS = {"embedder": 8001, "reranker": 8002}  # beside the API's 8000


def settings_for(config: str | None) -> Settings:
    """sources.yml when there is one (its `embedding:` section), else the environment alone: a GPU node
    running a sidecar needs no sources."""
    return load_settings(config) if Path(config or DEFAULT_CONFIG).is_file() else env_settings()


def serve_embedder(
    config: str, host: str, port: int, model: str | None, dimensions: int | None, insecure_no_token: bool
) -> None:
    from docforge.servers.sidecar import require_token

    settings = settings_for(config)
    cfg = settings.embedding
    token = require_token(
        cfg.token.get_secret_value() if cfg.token else None, host, insecure_no_token, "EMBEDDER_TOKEN"
    )  # before the model loads: a refusal is instant
    if model:
        cfg = cfg.model_copy(update={"model": model, "fallbacks": []})
    if dimensions:
        cfg = cfg.model_copy(update={"dimensions": dimensions})
    from pipeline.embed import load_embedder

    embedder = load_embedder(cfg)  # model, else the fallbacks in order, each failure logged with its reason
    embedder.encode(["warm up"], kind="query")  # the first forward pass is slow: not on a client's clock
    from docforge.servers.embedder import create_app

    click.echo(
        f"docforge embedder on http://{host}:{port}: {embedder.model_id} ({embedder.dimension} dimensions, "
        f"{embedder.backend} on {embedder.device})",
        err=True,
    )
    _run(create_app(embedder, token, settings.service), host, port)


def serve_reranker(config: str, host: str, port: int, model: str | None, insecure_no_token: bool) -> None:
    from docforge.servers.sidecar import require_token

    settings = settings_for(config)
    key = settings.rerank.api_key
    token = require_token(key.get_secret_value() if key else None, host, insecure_no_token, "RERANKER_API_KEY")
    path = model or settings.rerank.model
    if not path:
        raise ConfigError(
            "the reranker needs a cross-encoder: --model PATH or RERANKER_MODEL (a local directory "
            "or a model id in the local Hugging Face cache)"
        )
    from docforge.servers.reranker import create_app
    from pipeline.query.rerank import CrossEncoderReranker

    app = create_app(CrossEncoderReranker(path), token, settings.service)
    click.echo(f"docforge reranker on http://{host}:{port}: {path}", err=True)
    _run(app, host, port)


def _run(app, host: str, port: int) -> None:
    import uvicorn

    uvicorn.run(app, host=host, port=port, log_level="info")  # uvicorn logs to stderr

"""`docforge reindex`: move the store to another embedding model without downtime (docs/generations.md)."""

from __future__ import annotations

import json

import click

from docforge.cli.options import config_option, json_option


@click.command("reindex")
@config_option
@click.option("--model", metavar="NAME", help="The new model: a local path or a model id (see embedding.model).")
@click.option(
    "--dimensions",
    type=click.IntRange(1, 4000),
    help="Matryoshka truncation: the first N dimensions of the model's vectors, renormalised.",
)
@click.option(
    "--keep-old",
    is_flag=True,
    help="Keep the old generation's vectors after the switch (a fast switch back); dropped by default.",
)
@click.option("--cancel", is_flag=True, help="Drop the generation an interrupted reindex left, instead.")
@json_option
def command(
    config: str, model: str | None, dimensions: int | None, keep_old: bool, cancel: bool, as_json: bool
) -> None:
    """Re-embed the index with another model beside the live one, then switch.

    Chunks are not re-parsed: their stored texts are embedded again (once
    per distinct text), while search keeps answering from the live
    generation and ingest keeps indexing into it. One transaction makes the
    new generation live once it covers every chunk; then the old one is
    dropped. Interrupted, it resumes where it stopped. Search, ingest and
    the embedder service follow the live generation; set embedding.model
    in sources.yml to the new model too, so a new store would use it.

    \b
    Examples:
      docforge reindex --model BAAI/bge-small-en-v1.5
      docforge reindex --model /models/Qwen3-Embedding-4B --dimensions 1024
      docforge reindex --cancel
    """
    from pipeline.config import load_settings
    from pipeline.store.db import store_url

    settings = load_settings(config)
    url = store_url(settings)
    from pipeline.ingest import reindex

    if cancel:
        gen = reindex.cancel(url)
        click.echo(
            f"dropped generation {gen.id} ({gen.model}, {gen.dimension} dimensions)" if gen else "no reindex to cancel"
        )
        return
    if not model:
        raise click.UsageError("--model NAME is required (or --cancel)")
    from docforge.cli.progress import showing
    from pipeline.progress import report

    embedder = reindex.target_embedder(settings, model, dimensions)
    with showing():  # a bar on a terminal, plain lines otherwise; stderr, so --json stays clean
        result = reindex.reindex(settings, url, embedder, keep_old=keep_old, progress=report)
    if as_json:
        click.echo(json.dumps(result.as_dict(), indent=2))
        return
    if not result.switched:
        click.echo(
            f"generation {result.generation} already embeds with {result.model} "
            f"({result.dimension} dimensions): nothing to do"
        )
        return
    click.echo(
        f"generation {result.generation} is live: {result.model}, {result.dimension} dimensions "
        f"({result.vector_type}); {result.chunks} chunks, {result.embedded} texts embedded, "
        f"{result.reused} vectors reused, in {result.seconds:.1f} s"
    )
    if result.overflow:
        click.echo(
            f"{result.overflow} chunks are longer than {result.model} reads (it truncates them): the next "
            "ingest re-chunks their documents",
            err=True,
        )
    if result.approximate:
        click.echo(
            f"{result.approximate} chunks indexed before the upgrade had a shortened heading: embedded "
            "with it rebuilt in full",
            err=True,
        )
    if result.dropped:
        click.echo(f"dropped generation(s) {', '.join(map(str, result.dropped))}")

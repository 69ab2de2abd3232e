"""`docforge db`: the store's lifecycle (migrate its schema, stop the embedded server, reset)."""

from __future__ import annotations

import click

from docforge.cli.options import config_option


@click.group("db")
def command() -> None:
    """Manage the store (embedded Postgres or DATABASE_URL)."""


@command.command("url")
@config_option
def url(config: str) -> None:
    """Print the connection URL (starts the embedded server if needed)."""
    from pipeline.config import load_settings
    from pipeline.store.db import store_url

    settings = load_settings(config)
    click.echo(store_url(settings))


@command.command("migrate")
@config_option
def migrate(config: str) -> None:
    """Apply the store's pending schema migrations.

    Ingest applies them too; search, ask and the API never do: they refuse an
    older store and say to run this.
    """
    from pipeline.config import load_settings
    from pipeline.store.db import connect, store_url
    from pipeline.store.schema import migrate

    settings = load_settings(config)
    with connect(store_url(settings)) as conn:
        applied = migrate(conn)
    if applied is None:
        click.echo("the store is empty: nothing to migrate (the first `docforge ingest` builds it)")
    elif not applied:
        click.echo("the store's schema is up to date")
    else:
        click.echo(f"applied {len(applied)} migration{'s' if len(applied) > 1 else ''}:")
        for version in applied:
            click.echo(f"  {version}")


@command.command("reset")
@config_option
@click.option("--yes", is_flag=True, help="Really drop every docforge table.")
def reset(config: str, yes: bool) -> None:
    """Drop the index (all tables); the next ingest rebuilds it, e.g. for a new model."""
    if not yes:
        raise click.UsageError("refusing to drop the index without --yes")
    from pipeline.config import load_settings
    from pipeline.store.db import connect, store_url
    from pipeline.store.schema import drop_all

    settings = load_settings(config)
    with connect(store_url(settings), vector=False) as conn:
        drop_all(conn)
    click.echo("index dropped")


@command.command("stop")
@config_option
def stop(config: str | None) -> None:
    """Stop the embedded Postgres of this DOCFORGE_HOME (needs no sources.yml)."""
    from pipeline.config import env_settings, load_settings
    from pipeline.errors import ConfigError
    from pipeline.store.db import stop_embedded

    try:
        home = load_settings(config).home
    except ConfigError:
        if config:  # a file named on purpose: its error is the answer
            raise
        home = env_settings().home  # nothing configured here: DOCFORGE_HOME, else ./.docforge
    click.echo(stop_embedded(home))

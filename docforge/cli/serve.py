"""`docforge serve`: the MCP server (stdio), or the HTTP API with --api."""

from __future__ import annotations

import logging

import click

from docforge.cli import config_option


@click.command("serve")
@config_option
@click.option("--api", is_flag=True, help="Serve the authenticated HTTP API instead of MCP over stdio.")
@click.option("--host", default="127.0.0.1", show_default=True, envvar="DOCFORGE_API_HOST",
              help="Address the HTTP API listens on (with --api) [env: DOCFORGE_API_HOST].")
@click.option("--port", type=click.IntRange(0, 65535), default=8000, show_default=True, envvar="DOCFORGE_API_PORT",
              help="Port of the HTTP API (with --api) [env: DOCFORGE_API_PORT].")
@click.option("--remote-api", metavar="URL", envvar="DOCFORGE_REMOTE_API",
              help="Serve MCP as a proxy to a hosted docforge API; its token comes from DOCFORGE_API_TOKEN "
                   "[env: DOCFORGE_REMOTE_API].")
def command(config: str, api: bool, host: str, port: int, remote_api: str | None) -> None:
    """Serve search to assistants (MCP over stdio) or over HTTP (--api).

    The MCP server exposes one tool, search_documentation(query, user_name,
    team_name, area_name=None, limit=10), and logs who asked on stderr.
    The HTTP API needs DOCFORGE_API_TOKENS and/or DOCFORGE_JWT_JWKS_URL +
    DOCFORGE_JWT_AUDIENCE; only GET /health is open.

    \b
    Examples:
      docforge serve                                   # MCP over stdio, local index
      DOCFORGE_API_TOKENS=s3cret docforge serve --api --port 8080
      DOCFORGE_API_TOKEN=s3cret docforge serve --remote-api https://docs.example.com
    """
    if api and remote_api:
        raise click.UsageError("--api and --remote-api cannot be combined: --remote-api serves MCP, --api serves HTTP")
    logging.getLogger("docforge.servers").setLevel(logging.INFO)  # the who-asked log, on stderr
    from pipeline.config import AuthConfig, env_section, load_settings

    if remote_api:
        from docforge.servers.mcp import RemoteSearch, build_mcp

        token = env_section(AuthConfig).remote_api_token  # a proxy needs no sources.yml
        from docforge.servers.ask import RemoteAsk

        secret = token.get_secret_value() if token else None
        build_mcp(RemoteSearch(remote_api, secret), RemoteAsk(remote_api, secret)).run("stdio")
        return
    settings = load_settings(config)
    if api:
        from docforge.servers.auth import Authenticator

        auth = Authenticator(settings.auth)  # before anything heavy: no auth configured → ConfigError, exit 1
        _serve_api(_local(settings), auth, host, port)
    else:
        from docforge.servers.mcp import build_mcp

        search = _local(settings)
        build_mcp(search, _local_ask(search)).run("stdio")


def _local(settings):
    from docforge.servers import LocalSearch
    from pipeline.query import Searcher

    return LocalSearch(Searcher(settings))


def _local_ask(search):
    from docforge.servers.ask import LocalAsk
    from pipeline.answers import Answerer

    return LocalAsk(Answerer(search.searcher.settings, searcher=search.searcher))


def _serve_api(search, auth, host: str, port: int) -> None:
    import uvicorn

    from docforge.servers.api import create_app

    app = create_app(search, auth, health=search.health, ask=_local_ask(search))
    search.warm()
    click.echo(f"docforge API on http://{host}:{port} (docs: /docs, needs a token)", err=True)
    uvicorn.run(app, host=host, port=port, log_level="info")  # uvicorn logs to stderr

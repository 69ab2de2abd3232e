"""`docforge serve`: the MCP server (stdio), the HTTP API with --api, or a model sidecar
(--embedder, --reranker: docforge.cli.sidecars)."""

from __future__ import annotations

import errno
import logging
import socket

import click

from docforge.cli.options import config_option


@click.command("serve")
@config_option
@click.option("--api", is_flag=True, help="Serve the authenticated HTTP API instead of MCP over stdio.")
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    envvar="DOCFORGE_API_HOST",
    help="Address the HTTP API listens on (with --api) [env: DOCFORGE_API_HOST].",
)
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=8000,
    show_default=True,
    envvar="DOCFORGE_API_PORT",
    help="Port of the HTTP API (with --api) [env: DOCFORGE_API_PORT].",
)
@click.option(
    "--remote-api",
    metavar="URL",
    envvar="DOCFORGE_REMOTE_API",
    help="Serve MCP as a proxy to a hosted docforge API; its token comes from DOCFORGE_API_TOKEN "
    "[env: DOCFORGE_REMOTE_API].",
)
@click.option(
    "--embedder",
    is_flag=True,
    help="Serve the embedding model over HTTP (POST /embed; port 8001 unless --port); clients set "
    "EMBEDDER_URL. Needs EMBEDDER_TOKEN.",
)
@click.option(
    "--reranker",
    is_flag=True,
    help="Serve a cross-encoder over HTTP (POST /rerank; port 8002 unless --port); clients set "
    "RERANKER_URL. Needs RERANKER_API_KEY and RERANKER_MODEL (or --model).",
)
@click.option(
    "--model",
    metavar="NAME",
    help="With --embedder/--reranker: the model (a local path or model id) "
    "instead of embedding.model / RERANKER_MODEL.",
)
@click.option("--dimensions", type=click.IntRange(1, 4000), help="With --embedder: Matryoshka truncation.")
@click.option(
    "--insecure-no-token",
    is_flag=True,
    help="With --embedder/--reranker on a loopback --host only: serve without a token (local tests).",
)
@click.pass_context
def command(
    ctx: click.Context,
    config: str,
    api: bool,
    host: str,
    port: int,
    remote_api: str | None,
    embedder: bool,
    reranker: bool,
    model: str | None,
    dimensions: int | None,
    insecure_no_token: bool,
) -> None:
    """Serve search to assistants (MCP over stdio) or over HTTP (--api).

    The MCP server exposes search_documentation(query, user_name, team_name,
    area_name=None, limit=10) and ask_documentation(question, user_name,
    team_name, area_name=None, filters=None), and logs who asked on stderr;
    it reads everything, or as DOCFORGE_MCP_PRINCIPAL (+ DOCFORGE_MCP_GROUPS).
    The HTTP API needs DOCFORGE_API_TOKENS (admin tokens), DOCFORGE_API_TOKENS_FILE
    (named callers with groups) and/or DOCFORGE_JWT_JWKS_URL +
    DOCFORGE_JWT_AUDIENCE; only GET /health is open. Each caller reads only
    what its groups may (docs/security.md).

    \b
    Examples:
      docforge serve                                   # MCP over stdio, local index
      EMBEDDER_TOKEN=s3cret docforge serve --embedder --host 0.0.0.0
      DOCFORGE_API_TOKENS=s3cret docforge serve --api --port 8080
      DOCFORGE_API_TOKEN=s3cret docforge serve --remote-api https://docs.example.com
    """
    if sum(map(bool, (api, remote_api, embedder, reranker))) > 1:
        raise click.UsageError("--api, --remote-api, --embedder and --reranker each serve something else: pick one")
    if embedder or reranker:
        import docforge.cli.sidecars as sidecars

        kind = "embedder" if embedder else "reranker"
        if ctx.get_parameter_source("port") == click.core.ParameterSource.DEFAULT:
            port = sidecars.PORTS[kind]
        if embedder:
            sidecars.serve_embedder(config, host, port, model, dimensions, insecure_no_token)
        else:
            sidecars.serve_reranker(config, host, port, model, insecure_no_token)
        return
    logging.getLogger("docforge.servers").setLevel(logging.INFO)  # the who-asked log, on stderr
    from pipeline.config import AuthConfig, env_section, load_settings

    if remote_api:
        from docforge.servers.mcp import RemoteSearch, build_mcp, run_stdio

        token = env_section(AuthConfig).remote_api_token  # a proxy needs no sources.yml
        from docforge.servers.ask import RemoteAsk

        secret = token.get_secret_value() if token else None
        run_stdio(build_mcp(RemoteSearch(remote_api, secret), RemoteAsk(remote_api, secret)))
        return
    settings = load_settings(config)
    if api:
        from docforge.servers.auth import Authenticator

        # Before anything heavy: no auth configured, a malformed tokens file → ConfigError, exit 1.
        auth = Authenticator(settings.auth, settings.resolve_path)
        _serve_api(_local(settings), auth, host, port, settings)
    else:
        from docforge.servers.mcp import build_mcp, run_stdio
        from docforge.servers.usage import RecordedAsk, RecordedSearch, Usage

        search = _local(settings)
        recorder = Usage(search.searcher).recorder  # each tool call recorded (docs/gaps.md)
        ask = RecordedAsk(_local_ask(search), recorder, "mcp")
        run_stdio(build_mcp(RecordedSearch(search, recorder, "mcp"), ask, mcp_reader(settings.auth)))
        recorder.close()


def mcp_reader(auth):
    """Who the local MCP server reads as: DOCFORGE_MCP_PRINCIPAL (auth.mcp_principal) with its
    DOCFORGE_MCP_GROUPS, else full access (a local tool, as the CLI)."""
    from pipeline.access import FULL_ACCESS, Principal

    if not auth.mcp_principal:
        return FULL_ACCESS
    groups = frozenset(g.strip() for g in auth.mcp_groups.split(",") if g.strip())
    return Principal(auth.mcp_principal.strip(), groups, method="mcp")


def _local(settings):
    from docforge.servers import LocalSearch
    from pipeline.query import Searcher

    return LocalSearch(Searcher(settings))


def _local_ask(search):
    from docforge.servers.ask import LocalAsk
    from pipeline.answers import Answerer

    return LocalAsk(Answerer(search.searcher.settings, searcher=search.searcher))


def _serve_api(search, auth, host: str, port: int, settings) -> None:
    import uvicorn

    from docforge.servers.api import create_app, server_config
    from docforge.servers.hooks import Receiver
    from docforge.servers.usage import Usage
    from docforge.servers.web import LocalStore

    sock = listen(host, port)  # before the URL is printed: a taken port fails here, saying so
    port = sock.getsockname()[1]  # --port 0: the one the system chose
    limits = settings.api
    app = create_app(
        search,
        auth,
        health=search.health,
        ask=_local_ask(search),
        limits=limits,
        store=LocalStore(search.searcher),
        hooks=Receiver(settings),
        usage=Usage(search.searcher),
        metrics=settings.metrics,
    )
    if settings.metrics.enabled and settings.metrics.bind:
        from docforge.servers.metrics import serve_bound

        serve_bound(app.state.meter, settings.metrics.bind)
        click.echo(f"metrics on http://{settings.metrics.bind}/metrics", err=True)
    search.warm()
    shown = f"[{host}]" if ":" in host else ("127.0.0.1" if host in ("0.0.0.0", "") else host)
    click.echo(f"docforge API on http://{host}:{port} (docs: /docs, needs a token)", err=True)
    click.echo(f"Open http://{shown}:{port}/ in a browser and log in with an API token", err=True)
    uvicorn.Server(server_config(app, host, port, limits, log_level="info")).run(sockets=[sock])  # logs: stderr


def listen(host: str, port: int) -> socket.socket:
    """A socket bound to host:port, handed to uvicorn; ClickException (exit 1) naming why it cannot be."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn does: a TIME_WAIT port is free
    try:
        sock.bind((host, port))
    except OSError as e:
        sock.close()
        why = "another process is listening there" if e.errno == errno.EADDRINUSE else e.strerror
        raise click.ClickException(
            f"cannot listen on {host}:{port}: {why} ({e.strerror}); stop it, or pick another --port"
        ) from None
    sock.listen(2048)  # connections wait in the backlog while the app starts, instead of being refused
    sock.set_inheritable(True)
    return sock

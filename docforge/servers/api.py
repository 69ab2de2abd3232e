"""The HTTP API (FastAPI): `POST /search`, `POST /ask`, `GET /health`, OpenAPI at /openapi.json and /docs,
and a page for people at `/` (docforge.servers.web, docs/web.md).

Every route but /health needs `Authorization: Bearer <token>` (see `auth`), and reads as the
principal that token names: only what it may read (pipeline.access, docs/security.md);
the OpenAPI document and its Swagger page are behind it too, so /docs embeds
the spec instead of fetching it unauthenticated. Swagger UI's own script and
stylesheet (public vendor files, no data) are served open from /docs/assets,
out of the `fastapi-offline` package: the page works without internet.

Limits (`Settings.api`, docforge.servers.gate): headers, the token, then the
body's size are checked before a body is read. Status codes: 400 a bad filter
or one over the complexity budget, 401 no valid token, 413 a body over
DOCFORGE_API_MAX_BODY_BYTES, 422 a malformed body (text that is not valid
Unicode included), 431 headers over DOCFORGE_API_MAX_HEADER_BYTES, 503 the
store does not answer (or a search ran past its statement time limit).
"""

import json
import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from importlib.resources import files
from typing import Annotated, Any

import psycopg
from fastapi import Depends, FastAPI, HTTPException, Request
from fastapi.responses import HTMLResponse, JSONResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from fastapi.staticfiles import StaticFiles

from docforge.servers import strict_json
from docforge.servers.ask import AskFn, AskRequest, log_ask
from docforge.servers.auth import Authenticator, Principal
from docforge.servers.gate import PRINCIPAL, RETRY, Admissions, RequestGate, unavailable
from docforge.servers.hooks import Receiver, hooks_router, is_hook
from docforge.servers.metrics import PATH as METRICS_PATH
from docforge.servers.metrics import AppMetrics, add_metrics
from docforge.servers.search import SearchFn, SearchHit, SearchRequest, SearchResponse, log_request
from docforge.servers.usage import RecordedAsk, RecordedSearch, Usage, add_gaps
from docforge.servers.web import PageStore, add_page, is_page
from pipeline import __version__
from pipeline.answers import Answer
from pipeline.config import ApiConfig, MetricsConfig
from pipeline.errors import AnswerError, DocforgeError, LLMError, QueryError, StoreDown

log = logging.getLogger("docforge.servers.api")

_bearer = HTTPBearer(auto_error=False, description="An API token or a JWT from the configured identity provider.")
DOCS_ASSETS = "/docs/assets"  # swagger-ui-bundle.js, swagger-ui.css, favicon.png
_SWAGGER = """<!doctype html><html><head><title>docforge API</title>
<link rel="icon" href="ASSETS/favicon.png"><link rel="stylesheet" href="ASSETS/swagger-ui.css"></head>
<body><div id="ui"></div><script src="ASSETS/swagger-ui-bundle.js"></script>
<script>SwaggerUIBundle({spec: SPEC, dom_id: "#ui"});</script></body></html>"""


def is_open(path: str) -> bool:
    """The routes served without a token: the health probe, Swagger UI's vendor files, and the page's
    shell and assets (docforge.servers.web: the login view until a token authenticates)."""
    # /metrics checks its own token (docforge.servers.metrics), and never waits for an admission slot.
    return path in ("/health", METRICS_PATH) or path.startswith(DOCS_ASSETS + "/") or is_page(path) or is_hook(path)


def create_app(
    search: SearchFn,
    auth: Authenticator,
    health=None,
    ask: AskFn | None = None,
    limits: ApiConfig | None = None,
    store: PageStore | None = None,
    hooks: Receiver | None = None,
    usage: Usage | None = None,
    metrics: MetricsConfig | None = None,
) -> FastAPI:
    """The API over `search` (and `ask`: POST /ask); `health()` (optional) reports whether the store answers;
    the page at `/`, with GET /sources and GET /chunks/{id} when given a `store`; with `usage`, each search
    and ask recorded and GET /gaps; GET /metrics unless `metrics.enabled` is off."""
    limits = limits or ApiConfig()
    app = FastAPI(
        title="docforge",
        version=__version__,
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
        description="Search the indexed documentation, with citations.",
    )
    strict_json.install(app)  # NaN, Infinity, text with no UTF-8 form: 422
    admissions = Admissions(limits)
    app.add_middleware(
        RequestGate,
        authenticate=auth.authenticate,
        is_open=is_open,
        limits=limits,
        admissions=admissions,
        is_counted=is_hook,
    )
    # Usage records, /gaps and /metrics (docforge.servers.usage, .metrics): the metrics middleware goes
    # outside the gate, so the gate's refusals are counted too.
    metrics = metrics or MetricsConfig()
    meter = AppMetrics(admissions, lambda: [s.pool] if (s := getattr(search, "searcher", None)) else [])
    app.state.meter = meter  # `serve --api` serves it on metrics.bind too
    if metrics.enabled:
        add_metrics(app, meter, auth, metrics)
    if usage is not None:
        search = RecordedSearch(search, usage.recorder, "api")
    if ask is not None:
        ask = RecordedAsk(ask, usage.recorder if usage else None, "api", meter.answered)

    @app.exception_handler(psycopg.OperationalError)
    async def store_lost(request: Request, exc: psycopg.OperationalError) -> JSONResponse:
        # A safety net: the search path says so itself (StoreDown); anything else that meets a lost store too.
        return JSONResponse({"detail": "the store is unavailable; try again shortly"}, status_code=503, headers=RETRY)

    principal = _principal(auth)

    @app.get("/health", tags=["meta"])
    def get_health() -> JSONResponse:
        ok = health() if health else True  # the only unauthenticated route
        body = {"status": "ok" if ok else "unavailable", "admission": admissions.report()}
        return JSONResponse(body, status_code=200 if ok else 503, headers=None if ok else RETRY)

    _add_search(app, search, principal)
    if ask is not None:
        _add_ask(app, ask, principal)
    _add_docs(app, principal)
    add_page(app, principal, store, limits.dagster_url)
    if usage is not None:
        add_gaps(app, principal, usage)
    if hooks is not None:  # POST /hooks/git, /hooks/confluence: verified by signature (docforge.servers.hooks)
        app.include_router(hooks_router(hooks))
    return app


def _principal(auth: Authenticator) -> Callable[..., Principal]:
    """The dependency that names the caller (401 without one)."""

    def principal(
        request: Request, creds: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]
    ) -> Principal:
        # The gate authenticated the caller before the body was read; the scheme stays declared for OpenAPI.
        who = request.scope.get("state", {}).get(PRINCIPAL) or auth.authenticate(creds.credentials if creds else None)
        if who is None:
            raise HTTPException(401, "missing or invalid bearer token", headers={"WWW-Authenticate": "Bearer"})
        return who

    return principal


@contextmanager
def _as_http(what: str) -> Iterator[None]:
    """The core's errors as the HTTP API says them, mapped once for /search and /ask: the chat server's
    fault 502, the caller's 400, a lost store the one 503 (`unavailable`), anything else 503 to retry."""
    try:
        yield
    except LLMError as e:
        raise HTTPException(502, str(e)) from None
    except (QueryError, AnswerError) as e:
        raise HTTPException(400, str(e)) from None
    except StoreDown as e:
        log.warning("%s: %s", what, e)
        raise unavailable() from None
    except DocforgeError as e:
        raise HTTPException(503, str(e), headers=RETRY) from None


def _add_search(app: FastAPI, search: SearchFn, principal: Callable[..., Principal]) -> None:
    @app.post("/search", response_model=SearchResponse, tags=["search"])
    def post_search(req: SearchRequest, who: Annotated[Principal, Depends(principal)]) -> SearchResponse:
        """Hybrid (or dense/keyword) search with citations; same parameters as the MCP tool."""
        log_request("api", req, who.name)
        with _as_http("search"):
            hits = search(req, who)
        return SearchResponse(query=req.query, hits=[SearchHit(**h) for h in hits])


def _add_ask(app: FastAPI, ask: AskFn, principal: Callable[..., Principal]) -> None:
    @app.post("/ask", response_model=Answer, tags=["answers"])
    def post_ask(req: AskRequest, who: Annotated[Principal, Depends(principal)]) -> Answer:
        """A grounded answer: claims cited, verified (STRICT / HYBRID / UNGROUNDED), cached; see docs/answers.md."""
        log_ask("api", req, who.name)
        with _as_http("ask"):
            try:
                return ask(req, who)
            except psycopg.OperationalError:  # a connection a store restart dropped: once more, on a new one
                return ask(req, who)


def _add_docs(app: FastAPI, principal: Callable[..., Principal]) -> None:
    """The OpenAPI document and its Swagger page, behind a token; Swagger UI's vendor files open."""

    @app.get("/openapi.json", include_in_schema=False)
    def openapi(_: Annotated[Principal, Depends(principal)]) -> JSONResponse:
        return JSONResponse(app.openapi())

    @app.get("/docs", include_in_schema=False)
    def docs(request: Request, _: Annotated[Principal, Depends(principal)]) -> HTMLResponse:
        assets = request.scope.get("root_path", "").rstrip("/") + DOCS_ASSETS  # behind a path-prefix proxy too
        spec = json.dumps(app.openapi()).replace("</", "<\\/")
        return HTMLResponse(_SWAGGER.replace("ASSETS", assets).replace("SPEC", spec))

    app.mount(DOCS_ASSETS, StaticFiles(directory=str(files("fastapi_offline") / "static")), name="docs-assets")


def server_config(app: FastAPI, host: str, port: int, limits: ApiConfig | None = None, **kw: Any):
    """uvicorn's configuration for the API: h11, whose parser holds at most twice `max_header_bytes` of an
    unfinished header block (the gate refuses a complete one over the limit with 431)."""
    import uvicorn

    from pipeline.redact import redact_logs

    limits = limits or ApiConfig()
    config = uvicorn.Config(
        app, host=host, port=port, http="h11", h11_max_incomplete_event_size=2 * limits.max_header_bytes, **kw
    )
    redact_logs()  # on the handlers uvicorn just configured, too
    return config

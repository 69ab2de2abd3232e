"""The HTTP API (FastAPI): `POST /search`, `GET /health`, OpenAPI at /openapi.json and /docs.

Every route but /health needs `Authorization: Bearer <token>` (see `auth`);
the OpenAPI document and its Swagger page are behind it too, so /docs embeds
the spec instead of fetching it unauthenticated. Swagger UI's own script and
stylesheet (public vendor files, no data) are served open from /docs/assets,
out of the `fastapi-offline` package: the page works without internet.
"""

import json
from importlib.resources import files
from typing import Annotated

from fastapi import Depends, FastAPI, HTTPException, Request
from fastapi.responses import HTMLResponse, JSONResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from fastapi.staticfiles import StaticFiles

from docforge.servers import Citation, SearchFn, SearchRequest, SearchResponse, log_request
from docforge.servers.ask import AskFn, AskRequest, log_ask
from docforge.servers.auth import Authenticator, Principal
from pipeline import __version__
from pipeline.answers import Answer
from pipeline.errors import AnswerError, DocforgeError, LLMError, QueryError

_bearer = HTTPBearer(auto_error=False, description="An API token or a JWT from the configured identity provider.")
DOCS_ASSETS = "/docs/assets"  # swagger-ui-bundle.js, swagger-ui.css, favicon.png
_SWAGGER = """<!doctype html><html><head><title>docforge API</title>
<link rel="icon" href="ASSETS/favicon.png"><link rel="stylesheet" href="ASSETS/swagger-ui.css"></head>
<body><div id="ui"></div><script src="ASSETS/swagger-ui-bundle.js"></script>
<script>SwaggerUIBundle({spec: SPEC, dom_id: "#ui"});</script></body></html>"""


def create_app(search: SearchFn, auth: Authenticator, health=None, ask: AskFn | None = None) -> FastAPI:
    """The API over `search` (and `ask`: POST /ask); `health()` (optional) reports whether the store answers."""
    app = FastAPI(title="docforge", version=__version__, docs_url=None, redoc_url=None, openapi_url=None,
                  description="Search the indexed documentation, with citations.")

    def principal(creds: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]) -> Principal:
        who = auth.authenticate(creds.credentials if creds else None)
        if who is None:
            raise HTTPException(401, "missing or invalid bearer token", headers={"WWW-Authenticate": "Bearer"})
        return who

    Caller = Annotated[Principal, Depends(principal)]

    @app.get("/health", tags=["meta"])
    def get_health() -> JSONResponse:
        ok = health() if health else True  # the only unauthenticated route
        return JSONResponse({"status": "ok" if ok else "unavailable"}, status_code=200 if ok else 503)

    @app.post("/search", response_model=SearchResponse, tags=["search"])
    def post_search(req: SearchRequest, who: Caller) -> SearchResponse:
        """Hybrid (or dense/keyword) search with citations; same parameters as the MCP tool."""
        log_request("api", req, who.name)
        try:
            hits = search(req)
        except QueryError as e:
            raise HTTPException(400, str(e)) from None
        except DocforgeError as e:
            raise HTTPException(503, str(e)) from None
        return SearchResponse(query=req.query, hits=[Citation(**h) for h in hits])

    if ask is not None:

        @app.post("/ask", response_model=Answer, tags=["answers"])
        def post_ask(req: AskRequest, who: Caller) -> Answer:
            """A grounded answer: claims cited, verified (STRICT / HYBRID / UNGROUNDED), cached; see docs/answers.md."""
            log_ask("api", req, who.name)
            try:
                return ask(req)
            except (QueryError, AnswerError) as e:
                if isinstance(e, LLMError):
                    raise HTTPException(502, str(e)) from None
                raise HTTPException(400, str(e)) from None
            except DocforgeError as e:
                raise HTTPException(503, str(e)) from None

    @app.get("/openapi.json", include_in_schema=False)
    def openapi(_: Caller) -> JSONResponse:
        return JSONResponse(app.openapi())

    @app.get("/docs", include_in_schema=False)
    def docs(request: Request, _: Caller) -> HTMLResponse:
        assets = request.scope.get("root_path", "").rstrip("/") + DOCS_ASSETS  # behind a path-prefix proxy too
        spec = json.dumps(app.openapi()).replace("</", "<\\/")
        return HTMLResponse(_SWAGGER.replace("ASSETS", assets).replace("SPEC", spec))

    app.mount(DOCS_ASSETS, StaticFiles(directory=str(files("fastapi_offline") / "static")), name="docs-assets")

    return app

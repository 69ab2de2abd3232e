"""The page for people at `/` (docs/web.md): static HTML, one vanilla script and a stylesheet, served by
the API itself (no CDN, no build step), plus the two reads only the page needs.

The page and its assets are open: they hold no data and no secret, and show only the login view until a
token authenticates. Everything they fetch — POST /search, POST /ask, GET /sources, GET /chunks/{id} —
goes through the same gate as every other route.
"""

from collections.abc import Callable
from importlib.resources import files
from typing import Annotated, Protocol
from urllib.parse import quote

from fastapi import Depends, FastAPI, HTTPException
from fastapi.responses import HTMLResponse, Response
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel

from pipeline.errors import DocforgeError
from pipeline.query import Searcher
from pipeline.store.admin import has_schema, per_source

WEB_ASSETS = "/web"  # app.js, app.css
_DIR = files("docforge.servers") / "web"
# Nothing but this origin: a page that cannot reach anywhere else cannot leak a token or a result there.
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


FAVICON = "/favicon.ico"  # browsers ask for it whatever the page links: answered, never a 401 in the console


def is_page(path: str) -> bool:
    """The page's shell and its assets: served without a token (the login view is all they show)."""
    return path in ("/", FAVICON) or path.startswith(WEB_ASSETS + "/")


class SourceRow(BaseModel):
    name: str
    configured: bool
    documents: int
    chunks: int
    last_indexed: str | None
    failures: int
    dagster_url: str  # the source's partition in the Dagster UI
    type: str | None = None  # git, directory, confluence … as the store holds it (None: nothing stored yet)


class SourcesResponse(BaseModel):
    sources: list[SourceRow]


class ChunkText(BaseModel):
    id: str
    doc_key: str
    section: str
    text: str


class PageStore(Protocol):
    def sources(self) -> list[dict]: ...

    def chunk(self, chunk_id: str) -> dict | None: ...


_SOURCE_TYPES = "SELECT DISTINCT ON (source) source, type FROM documents ORDER BY source"  # the page's Type filter


class LocalStore:
    """PageStore over a Searcher's pooled connections."""

    def __init__(self, searcher: Searcher):
        self.searcher = searcher
        self.configured = [s.name for s in searcher.settings.sources]

    def sources(self) -> list[dict]:
        with self.searcher.connection() as conn:
            built = has_schema(conn)
            rows = per_source(conn, self.configured, built=built)
            types = dict(conn.execute(_SOURCE_TYPES).fetchall()) if built else {}
        return [r | {"type": types.get(r["name"])} for r in rows]

    def chunk(self, chunk_id: str) -> dict | None:
        with self.searcher.connection() as conn:
            row = conn.execute("SELECT id, doc_key, section, text FROM chunks WHERE id = %s", (chunk_id,)).fetchone()
        return dict(zip(("id", "doc_key", "section", "text"), row, strict=True)) if row else None


def partition_url(dagster_url: str, source: str) -> str:
    return f"{dagster_url.rstrip('/')}/assets/documents?view=partitions&partition={quote(source, safe='')}"


def add_page(app: FastAPI, caller: Callable, store: PageStore | None, dagster_url: str) -> None:
    """`/`, its assets, and (with a store) GET /sources and GET /chunks/{id}, both behind `caller`."""
    page = (_DIR / "index.html").read_text(encoding="utf-8")

    icon = (_DIR / "favicon.svg").read_bytes()

    @app.get("/", include_in_schema=False)
    def index() -> HTMLResponse:
        return HTMLResponse(page, headers=_HEADERS)

    @app.get(FAVICON, include_in_schema=False)
    def favicon() -> Response:
        return Response(icon, media_type="image/svg+xml", headers={**_HEADERS, "Cache-Control": "max-age=86400"})

    app.mount(WEB_ASSETS, StaticFiles(directory=str(_DIR)), name="web")
    if store is None:
        return
    Caller = Annotated[object, Depends(caller)]

    @app.get("/sources", response_model=SourcesResponse, tags=["sources"])
    def get_sources(_: Caller) -> SourcesResponse:
        """Each source's documents, chunks, last ingest, failures and its Dagster partition (as `docforge status`)."""
        try:
            rows = store.sources()
        except DocforgeError as e:
            raise HTTPException(503, str(e)) from None
        return SourcesResponse(
            sources=[SourceRow(**r, dagster_url=partition_url(dagster_url, r["name"])) for r in rows]
        )

    @app.get("/chunks/{chunk_id}", response_model=ChunkText, tags=["sources"])
    def get_chunk(chunk_id: str, _: Caller) -> ChunkText:
        """One chunk's text: the evidence behind an answer's citation (its `chunk_id`)."""
        try:
            row = store.chunk(chunk_id)
        except DocforgeError as e:
            raise HTTPException(503, str(e)) from None
        if row is None:
            raise HTTPException(404, "no such chunk (re-ingested since?)")
        return ChunkText(**row)

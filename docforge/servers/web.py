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
from psycopg import sql
from pydantic import BaseModel

from docforge.servers.gate import RETRY, unavailable
from pipeline.access import Principal, effective, may_read, predicate
from pipeline.errors import DocforgeError, StoreDown
from pipeline.query import Searcher
from pipeline.store.admin import per_source
from pipeline.store.schema import open_built

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
    def sources(self, reader: Principal) -> list[dict]: ...

    def chunk(self, chunk_id: str, reader: Principal) -> dict | None: ...


# The page's Type filter: each source's type, from the documents the caller may read.
_SOURCE_TYPES = "SELECT DISTINCT ON (doc.source) doc.source, doc.type FROM documents doc WHERE {} ORDER BY doc.source"
_CHUNK = """SELECT c.id, c.doc_key, c.section, c.text FROM chunks c JOIN documents doc ON doc.key = c.doc_key
WHERE c.id = %(id)s AND {}"""


class LocalStore:
    """PageStore over a Searcher's pooled connections: each read holds the caller's access condition
    (pipeline.access), so a source, a count, a type or a chunk it may not read is never in an answer."""

    def __init__(self, searcher: Searcher):
        self.searcher = searcher
        self.configured = {s.name: s.access for s in searcher.settings.sources}

    def sources(self, reader: Principal) -> list[dict]:
        cond, binds = predicate(reader)
        with self.searcher.connection() as conn:
            built = open_built(conn) is not None
            rows = per_source(conn, list(self.configured), built=built, reader=reader)
            types = dict(conn.execute(sql.SQL(_SOURCE_TYPES).format(cond), binds).fetchall()) if built else {}
        # A source shows when the caller may read one of its documents; one without any (not ingested yet)
        # when its sources.yml `access:` lets the caller in. Its failures (documents not indexed, so with
        # no access of their own) are counted for a caller its `access:` lets in.
        return [
            {k: v for k, v in r.items() if k != "stored"}
            | {"type": types.get(r["name"]), "failures": r["failures"] if self._admits(r["name"], reader) else 0}
            for r in rows
            if r["documents"] or (not r["stored"] and self._admits(r["name"], reader))
        ]

    def _admits(self, name: str, reader: Principal) -> bool:
        """Whether a configured source's `access:` lets `reader` in (one no longer configured: full access only)."""
        if name not in self.configured:
            return reader.full_access
        return may_read(effective(self.configured[name], None), reader)

    def chunk(self, chunk_id: str, reader: Principal) -> dict | None:
        cond, binds = predicate(reader)
        with self.searcher.connection() as conn:
            row = conn.execute(sql.SQL(_CHUNK).format(cond), {"id": chunk_id, **binds}).fetchone()
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
    Caller = Annotated[Principal, Depends(caller)]

    @app.get("/sources", response_model=SourcesResponse, tags=["sources"])
    def get_sources(who: Caller) -> SourcesResponse:
        """The sources the caller may read: each one's documents, chunks, last ingest, failures (counted
        from what the caller may read) and its Dagster partition (as `docforge status`)."""
        try:
            rows = store.sources(who)
        except StoreDown:
            raise unavailable() from None
        except DocforgeError as e:
            raise HTTPException(503, str(e), headers=RETRY) from None
        return SourcesResponse(
            sources=[SourceRow(**r, dagster_url=partition_url(dagster_url, r["name"])) for r in rows]
        )

    @app.get("/chunks/{chunk_id}", response_model=ChunkText, tags=["sources"])
    def get_chunk(chunk_id: str, who: Caller) -> ChunkText:
        """One chunk's text: the evidence behind an answer's citation (its `chunk_id`); 404 alike for a
        chunk that is not there and one the caller may not read."""
        try:
            row = store.chunk(chunk_id, who)
        except StoreDown:
            raise unavailable() from None
        except DocforgeError as e:
            raise HTTPException(503, str(e), headers=RETRY) from None
        if row is None:
            raise HTTPException(404, "no such chunk (re-ingested since?)")
        return ChunkText(**row)

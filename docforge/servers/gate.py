"""The HTTP API's cheap refusals, made before any route runs and before any body byte is read.

An ASGI middleware, in this order:

- 431 when the request line and headers together pass `max_header_bytes`;
- 401 when a route that needs a token gets none that authenticates: an
  unauthenticated caller never has its body read, let alone parsed;
- 413 when the declared Content-Length passes `max_body_bytes` (400 when it is
  no number), and when a body sent without one (chunked) passes it as it
  streams: the route's read fails at the first chunk past the limit.

Beneath all this, the HTTP parser (h11, see `docforge.servers.api.server_config`)
never holds more than twice `max_header_bytes` of an unfinished header block, so
an endless or slow one is dropped (400) in bounded memory.
"""

from __future__ import annotations

from collections.abc import Callable

from starlette.concurrency import run_in_threadpool
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from docforge.servers.auth import Principal

PRINCIPAL = "docforge.principal"  # where the gate leaves the caller, in the request's state


class RequestGate:
    def __init__(
        self,
        app: ASGIApp,
        *,
        authenticate: Callable[[str | None], Principal | None],
        is_open: Callable[[str], bool],
        max_body_bytes: int,
        max_header_bytes: int,
    ):
        self.app = app
        self.authenticate = authenticate
        self.is_open = is_open  # paths served without a token
        self.max_body_bytes = max_body_bytes
        self.max_header_bytes = max_header_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        size = (
            len(scope.get("raw_path") or b"")
            + len(scope.get("query_string") or b"")
            + sum(len(k) + len(v) + 4 for k, v in scope["headers"])
        )  # "name: value\r\n"
        if size > self.max_header_bytes:
            await refuse(
                scope,
                receive,
                send,
                431,
                f"request headers too large: more than {self.max_header_bytes} bytes (DOCFORGE_API_MAX_HEADER_BYTES)",
            )
            return
        headers = Headers(scope=scope)
        root = scope.get("root_path", "")
        path = scope["path"][len(root) :] if root and scope["path"].startswith(root) else scope["path"]
        if not self.is_open(path):
            scheme, _, token = headers.get("authorization", "").partition(" ")
            # A JWT may need the identity provider's keys fetched: never on the event loop.
            who = await run_in_threadpool(self.authenticate, token.strip() if scheme.lower() == "bearer" else None)
            if who is None:
                await refuse(
                    scope, receive, send, 401, "missing or invalid bearer token", {"WWW-Authenticate": "Bearer"}
                )
                return
            scope.setdefault("state", {})[PRINCIPAL] = who
        refusal = declared_length_refusal(
            headers.get("content-length"),
            self.max_body_bytes,
            lambda n: (
                f"request body too large: {n} bytes, the limit is {self.max_body_bytes} (DOCFORGE_API_MAX_BODY_BYTES)"
            ),
        )
        if refusal:
            await refuse(scope, receive, send, *refusal)
            return
        await self.app(scope, self._counted(receive), send)

    def _counted(self, receive: Receive) -> Receive:
        seen = 0

        async def counted() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_body_bytes:  # FastAPI lets an HTTPException from a body read through
                    raise HTTPException(
                        413,
                        f"request body too large: more than {self.max_body_bytes} bytes (DOCFORGE_API_MAX_BODY_BYTES)",
                    )
            return message

        return counted


def declared_length_refusal(
    length: str | bytes | None, limit: int, too_large: Callable[[int], str]
) -> tuple[int, str] | None:
    """(status, detail) for a declared Content-Length that is no number (400) or passes `limit` (413)."""
    if length is None:
        return None
    if not length.strip().isdigit():
        return 400, "Content-Length is not a number"
    return (413, too_large(int(length))) if int(length) > limit else None


async def refuse(
    scope: Scope, receive: Receive, send: Send, status: int, detail: str, headers: dict[str, str] | None = None
) -> None:
    """Answer {"detail": ...} with `status`. The body is left unread: the server closes the connection after."""
    await JSONResponse({"detail": detail}, status_code=status, headers=headers)(scope, receive, send)

"""The HTTP API's cheap refusals, made before any route runs and before any body byte is read.

An ASGI middleware, in this order:

- 431 when the request line and headers together pass `max_header_bytes`;
- 404 when the path holds a NUL (no route or id can: it never reaches the store);
- 401 when a route that needs a token gets none that authenticates: an
  unauthenticated caller never has its body read, let alone parsed;
- 503 with `Retry-After` when the process is full (admission control, below);
- 413 when the declared Content-Length passes `max_body_bytes` (400 when it is
  no number), and when a body sent without one (chunked) passes it as it
  streams: the route's read fails at the first chunk past the limit.

Admission control: an authenticated request, and every webhook delivery (signed or
not: a flood of unsigned ones must not crowd out searches), takes a slot of its kind
(asks, or everything else: searches, page reads, webhooks) before it runs, and gives it back when its
response is sent. With every slot taken it waits in line, at most `max_wait_s`
and only while fewer than `max_queued` wait; past either bound it gets 503 with
`Retry-After` at once. So a burst of callers meets a short, bounded wait or a
clear "come back shortly", never a queue that grows with the crowd; the open
routes (/health above all) are never held up.

Beneath all this, the HTTP parser (h11, see `docforge.servers.api.server_config`)
never holds more than twice `max_header_bytes` of an unfinished header block, so
an endless or slow one is dropped (400) in bounded memory.
"""

from __future__ import annotations

import asyncio
import math
from collections import deque
from collections.abc import Callable

from starlette.concurrency import run_in_threadpool
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from docforge.servers.auth import Principal
from pipeline.config import ApiConfig

PRINCIPAL = "docforge.principal"  # where the gate leaves the caller, in the request's state
RETRY = {"Retry-After": "1"}  # on every 503 of a lost store: it is expected back within seconds


def unavailable(what: str = "the store") -> HTTPException:
    """The 503 of a store (or service) that does not answer: `Retry-After`, and a detail that names no
    socket path, host or connection string (the error's own text goes to the log, redacted, not the caller)."""
    return HTTPException(503, f"{what} is unavailable; try again shortly", headers=RETRY)


class Admission:
    """At most `limit` requests in flight; at most `max_queued` more waiting, each at most `wait_s`.
    Used from the event loop only, so it needs no lock; a freed slot goes straight to the oldest waiter."""

    def __init__(self, name: str, limit: int, max_queued: int, wait_s: float):
        self.name, self.limit, self.max_queued, self.wait_s = name, limit, max_queued, wait_s
        self.in_flight = 0
        self.shed = 0  # refused since the start
        self._waiters: deque[asyncio.Future[None]] = deque()

    async def acquire(self) -> bool:
        """Whether a slot was taken (then `release` it); False: refuse the request."""
        if self.in_flight < self.limit and not self._waiters:
            self.in_flight += 1
            return True
        if len(self._waiters) >= self.max_queued or self.wait_s <= 0:
            self.shed += 1
            return False
        slot: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(slot)
        try:
            await asyncio.wait_for(asyncio.shield(slot), self.wait_s)
            return True
        except TimeoutError:
            if slot.done():  # handed a slot as the time ran out
                return True
            self._waiters.remove(slot)
            self.shed += 1
            return False
        except asyncio.CancelledError:  # the caller went away while waiting
            if slot.done():
                self.release()
            else:
                self._waiters.remove(slot)
            raise

    def release(self) -> None:
        while self._waiters:
            slot = self._waiters.popleft()
            if not slot.done():
                slot.set_result(None)  # the slot passes on: in_flight stays
                return
        self.in_flight -= 1

    def report(self) -> dict[str, int | float]:
        return {
            "max_in_flight": self.limit,
            "in_flight": self.in_flight,
            "queued": len(self._waiters),
            "shed": self.shed,
        }

    def busy(self) -> str:
        return (
            f"the server is busy: {self.limit} {self.name} in flight and no room to wait "
            f"(DOCFORGE_API_MAX_{'ASKS_' if self.name == 'asks' else ''}IN_FLIGHT, DOCFORGE_API_MAX_QUEUED, "
            "DOCFORGE_API_MAX_WAIT_S); retry shortly"
        )


class Admissions:
    """The process's admission limits (ApiConfig): one line for asks, one for every other authenticated route."""

    def __init__(self, limits: ApiConfig):
        self.limits = limits
        self.asks = Admission("asks", limits.max_asks_in_flight, limits.max_queued, limits.max_wait_s)
        self.requests = Admission("requests", limits.max_in_flight, limits.max_queued, limits.max_wait_s)
        self.retry_after = str(max(1, math.ceil(limits.max_wait_s)))

    def for_path(self, path: str) -> Admission:
        return self.asks if path == "/ask" else self.requests

    def report(self) -> dict:
        """What /health says about load: the limits, and how full each line is now."""
        return {
            "max_queued": self.limits.max_queued,
            "max_wait_s": self.limits.max_wait_s,
            "requests": self.requests.report(),
            "asks": self.asks.report(),
        }


class RequestGate:
    def __init__(
        self,
        app: ASGIApp,
        *,
        authenticate: Callable[[str | None], Principal | None],
        is_open: Callable[[str], bool],
        limits: ApiConfig,
        admissions: Admissions | None = None,
        is_counted: Callable[[str], bool] = lambda path: False,
    ):
        self.app = app
        self.authenticate = authenticate
        self.is_open = is_open  # paths served without a token
        self.is_counted = is_counted  # open paths that still take an admission slot (webhooks, signed or not)
        self.max_body_bytes = limits.max_body_bytes
        self.max_header_bytes = limits.max_header_bytes
        self.admissions = admissions or Admissions(limits)

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
        if "\0" in path:
            await refuse(scope, receive, send, 404, "not found: a path never holds a NUL character")
            return
        line: Admission | None = None
        if not self.is_open(path):
            scheme, _, token = headers.get("authorization", "").partition(" ")
            token = token.strip() if scheme.lower() == "bearer" else ""
            # A JWT may need the identity provider's keys fetched: never on the event loop. Anything
            # else is a constant-time compare, done here (a thread hop per request costs more, under load).
            if token.count(".") == 2:
                who = await run_in_threadpool(self.authenticate, token)
            else:
                who = self.authenticate(token or None)
            if who is None:
                await refuse(
                    scope, receive, send, 401, "missing or invalid bearer token", {"WWW-Authenticate": "Bearer"}
                )
                return
            scope.setdefault("state", {})[PRINCIPAL] = who
            line = self.admissions.for_path(path)
        elif self.is_counted(path):
            line = self.admissions.requests
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
        if line is None:
            await self.app(scope, self._counted(receive), send)
            return
        if not await line.acquire():
            await _drain(receive, self.max_body_bytes)  # read, so the connection stays open for the retry
            await refuse(scope, receive, send, 503, line.busy(), {"Retry-After": self.admissions.retry_after})
            return
        try:
            await self.app(scope, self._counted(receive), send)
        finally:
            line.release()

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


async def _drain(receive: Receive, limit: int) -> None:
    """Read a request's body to its end, or until `limit` bytes (then the server closes the connection)."""
    seen = 0
    while seen <= limit:
        message = await receive()
        seen += len(message.get("body", b""))
        if message["type"] != "http.request" or not message.get("more_body"):
            return


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

"""What the model sidecars (`serve --embedder`, `serve --reranker`) share: a bearer token, body limits
and the per-request item limits (`check_items`, `limits_info`).

One ASGI middleware, before any route runs:
- 401 when a route other than /health gets no bearer token equal to the
  service's (compared in constant time): its body is never read;
- 413 when the declared Content-Length passes `max_body_bytes`, or when a body
  sent without one (chunked) grows past it as it streams.

A sidecar refuses to start without a token unless it listens on loopback only
and `--insecure-no-token` says so: a model server on a network answers anyone.
"""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Iterable

from fastapi import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from docforge.servers.gate import declared_length_refusal, refuse
from pipeline.config import ServiceConfig
from pipeline.errors import ConfigError
from pipeline.parse.text import first_surrogate

OPEN_PATHS = frozenset({"/health"})


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def require_token(token: str | None, host: str, insecure_no_token: bool, env_name: str) -> str | None:
    """The token the sidecar checks; ConfigError when there is none and running open is not allowed here."""
    if token:
        return token
    if not insecure_no_token:
        raise ConfigError(
            f"set {env_name} (the bearer token clients send): a model service never runs open; "
            "for a local test on 127.0.0.1 only, pass --insecure-no-token"
        )
    if not is_loopback(host):
        raise ConfigError(
            f"--insecure-no-token only with a loopback --host (127.0.0.1, ::1), not {host!r}: "
            f"set {env_name} to serve on a network"
        )
    return None


class SidecarGate:
    """Token check and body limit, before routing (see module doc)."""

    def __init__(self, app: ASGIApp, *, token: str | None, max_body_bytes: int, service: str):
        self.app = app
        self.token = token.encode() if token else None
        self.max_body_bytes = max_body_bytes
        self.service = service  # names the limit's setting in the 413's message

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v for k, v in scope["headers"]}
        if self.token is not None and scope["path"] not in OPEN_PATHS:
            scheme, _, given = headers.get("authorization", b"").partition(b" ")
            if scheme.lower() != b"bearer" or not hmac.compare_digest(given.strip(), self.token):
                await refuse(
                    scope, receive, send, 401, "missing or invalid bearer token", {"WWW-Authenticate": "Bearer"}
                )
                return
        refusal = declared_length_refusal(headers.get("content-length"), self.max_body_bytes, self._too_large)
        if refusal:
            await refuse(scope, receive, send, *refusal)
            return
        # The body is read here, against the limit, before the app sees a byte of it (a body sent
        # without Content-Length is counted as it streams), then handed on whole.
        body = bytearray()
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body += message.get("body", b"")
            if len(body) > self.max_body_bytes:
                await refuse(scope, receive, send, 413, self._too_large(None))
                return
            if not message.get("more_body"):
                break
        handed = False

        async def replay() -> Message:
            nonlocal handed
            if not handed:
                handed = True
                return {"type": "http.request", "body": bytes(body), "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    def _too_large(self, n: int | None) -> str:
        size = f"{n} bytes" if n is not None else "more bytes than allowed"
        return (
            f"request body too large: {size}, the limit is {self.max_body_bytes} "
            f"(DOCFORGE_SERVICE_MAX_BODY_BYTES on the {self.service} service)"
        )


def limits_info(limits: ServiceConfig) -> dict[str, int]:
    """What one request may ask, as `GET /info` reports it."""
    return {
        "max_items": limits.max_items,
        "max_item_chars": limits.max_item_chars,
        "max_body_bytes": limits.max_body_bytes,
    }


def check_items(limits: ServiceConfig, count: int, noun: str, named: Iterable[tuple[str, str]], hint: str = "") -> None:
    """422 when a request holds more than `max_items` `noun`s, or an item (`named`: (what, text)) has a
    lone surrogate or more than `max_item_chars` characters."""
    if count > limits.max_items:
        raise HTTPException(
            422, f"{count} {noun} in one request; the limit is {limits.max_items} (DOCFORGE_SERVICE_MAX_ITEMS){hint}"
        )
    for what, text in named:
        if (i := first_surrogate(text)) is not None:  # no UTF-8 form: the tokenizer cannot take it
            raise HTTPException(
                422, f"{what} is not valid Unicode: a lone surrogate U+{ord(text[i]):04X} at character {i}"
            )
        if len(text) > limits.max_item_chars:
            raise HTTPException(
                422,
                f"{what} has {len(text)} characters; the limit is {limits.max_item_chars} "
                "(DOCFORGE_SERVICE_MAX_ITEM_CHARS)",
            )

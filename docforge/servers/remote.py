"""A hosted docforge HTTP API as a client sees it: one route, a bearer token, clear errors.

`docforge serve --remote-api URL` runs the MCP server over these (`RemoteSearch`,
`RemoteAsk`) instead of this machine's store. HTTP, the token, retries and redaction
are `pipeline.http`'s.
"""

from __future__ import annotations

from typing import Any

from pipeline import http
from pipeline.errors import DocforgeError


class RemoteRoute:
    """POSTs JSON to `{url}{route}` with the token; failures raise `error` (never quoting the token)."""

    def __init__(self, url: str, route: str, token: str | None, timeout_s: float, error=DocforgeError):
        self.url = url.rstrip("/") + route
        self.service = http.Service(
            "the docforge API",
            error,
            timeout_s=timeout_s,
            auth=http.bearer(token),
            hints={401: "refused the token sent: set DOCFORGE_API_TOKEN"},
            setting="--remote-api",
        )

    def post(self, body: dict[str, Any]) -> dict[str, Any]:
        where = self.service.where(self.url)
        return self.service.json(self.service.request("POST", self.url, json=body, where=where), where)

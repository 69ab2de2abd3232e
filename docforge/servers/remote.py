"""A hosted docforge HTTP API as a client sees it: one route, a bearer token, clear errors.

`docforge serve --remote-api URL` runs the MCP server over these (`RemoteSearch`,
`RemoteAsk`) instead of this machine's store.
"""

from __future__ import annotations

from typing import Any

import httpx

from pipeline.errors import DocforgeError
from pipeline.redact import redact, register


class RemoteRoute:
    """POSTs JSON to `{url}{route}` with the token; failures raise `error` (never quoting the token)."""

    def __init__(self, url: str, route: str, token: str | None, timeout_s: float, error=DocforgeError):
        self.url = url.rstrip("/") + route
        self.error = error
        register(token)  # an error quoting it back never shows it
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.client = httpx.Client(headers=headers, timeout=timeout_s)

    def post(self, body: dict[str, Any]) -> dict[str, Any]:
        try:
            resp = self.client.post(self.url, json=body)
        except httpx.HTTPError as e:
            raise self.error(f"the docforge API at {self.url} is unreachable: {redact(str(e))}") from None
        if resp.status_code == 401:
            raise self.error(f"the docforge API at {self.url} refused the token (401): set DOCFORGE_API_TOKEN")
        if resp.status_code >= 400:
            raise self.error(f"the docforge API at {self.url} answered {resp.status_code}: {redact(resp.text, 300)}")
        return resp.json()

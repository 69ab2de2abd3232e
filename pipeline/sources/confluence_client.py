"""HTTP to one Confluence Cloud site's REST API v2: credentials, pagination, the next-link rules.

Requests go through `pipeline.http` (one client, the retry policy, redacted errors): 429 waits
`Retry-After` clamped to `max_retry_after_s`; 5xx, timeouts and dropped connections back off; all
waits of one client together stay within `retry_budget_s`. What is Confluence's own lives here: a
list call that keeps getting 5xx halves its `limit`, a next link never takes the credentials to
another host, a pagination loop is caught.

Credentials (`Settings.confluence`) come from the environment only and live only in the auth
header: CONFLUENCE_EMAIL + CONFLUENCE_API_TOKEN (basic auth), else CONFLUENCE_BEARER_TOKEN or
CONFLUENCE_PAT (bearer). They never appear in URLs, and every error text is redacted.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from urllib.parse import urlsplit

import httpx

from pipeline import http
from pipeline.config import ConfluenceCredentials, ConfluenceSourceConfig, env_section
from pipeline.errors import ConfluenceError
from pipeline.http import Clock

log = logging.getLogger(__name__)
API = "/api/v2"
V1 = "/rest/api"  # the REST API v1: what v2 lacks (page restrictions, a group's name by id, a user's email)
HINTS = {
    401: "unauthorized: check CONFLUENCE_EMAIL and CONFLUENCE_API_TOKEN (or CONFLUENCE_BEARER_TOKEN)",
    403: "forbidden: these credentials may not read it",
    404: "not found: deleted, a draft, or not visible to these credentials",
}


def credentials(creds: ConfluenceCredentials) -> httpx.Auth:
    """The auth for these credentials (registered for redaction in every encoding by pipeline.http)."""
    email = creds.email
    token = creds.api_token.get_secret_value() if creds.api_token else None
    bearer = creds.bearer_token.get_secret_value() if creds.bearer_token else None
    if email and token:
        return http.basic(email, token)
    if bearer:
        return http.Bearer(bearer)
    if token:
        raise ConfluenceError(
            "CONFLUENCE_API_TOKEN is set but CONFLUENCE_EMAIL is not: an API token needs "
            "the account's email (for a bearer token/PAT set CONFLUENCE_BEARER_TOKEN)"
        )
    raise ConfluenceError(
        "no Confluence credentials: set CONFLUENCE_EMAIL and CONFLUENCE_API_TOKEN "
        "(or CONFLUENCE_BEARER_TOKEN) in the environment"
    )


def _show(url: httpx.URL) -> str:
    return url.raw_path.decode("ascii", "replace")


class ConfluenceClient:
    """One HTTP session to one site's v2 API, with the retry policy and its budget."""

    def __init__(
        self, cfg: ConfluenceSourceConfig, creds: ConfluenceCredentials | None = None, clock: Clock | None = None
    ):
        self.cfg = cfg
        self.base = cfg.base_url.rstrip("/").removesuffix(API)
        parts = urlsplit(self.base)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ConfluenceError(f"source {cfg.name!r}: base_url {cfg.base_url!r} is not an http(s) URL")
        self.origin, self.base_path = f"{parts.scheme}://{parts.netloc}", parts.path
        retry = http.RetryPolicy(
            attempts=cfg.max_attempts,
            max_wait_s=cfg.max_retry_after_s,
            budget_s=cfg.retry_budget_s,
            backoff_s=0.5,
            clock=clock or http.SystemClock(),
        )
        self.service = http.Service(
            "Confluence",
            ConfluenceError,
            timeout_s=cfg.timeout_s,
            auth=credentials(creds or env_section(ConfluenceCredentials)),
            retry=retry,
            hints=HINTS,
            headers={"Accept": "application/json"},
        )

    @property
    def waited(self) -> float:
        """Seconds slept before retries, for this whole client."""
        return self.service.retry.waited

    def close(self) -> None:
        self.service.close()

    def url(self, path: str, params: dict | None = None, api: str = API) -> httpx.URL:
        return httpx.URL(f"{self.base}{api}{path}", params={k: v for k, v in (params or {}).items() if v is not None})

    def get_json(self, path: str, params: dict | None = None, api: str = API) -> dict:
        url = self.url(path, params, api)
        return self._json(self._get(url), url)

    def paginate(self, path: str, params: dict | None = None) -> Iterator[dict]:
        """Every result of a v2 list call, following `_links.next` or the Link header to the end."""
        url: httpx.URL | None = self.url(path, params)
        seen: set[str] = set()
        while url is not None:
            seen.add(str(url))
            resp = self._get(url, listing=True)
            data = self._json(resp, url)
            if not isinstance(data.get("results"), list):
                raise ConfluenceError(f"GET {_show(url)}: the response has no 'results' list")
            yield from data["results"]
            link = (data.get("_links") or {}).get("next") or resp.links.get("next", {}).get("url")
            url = self._resolve(link) if link else None
            if url is not None and str(url) in seen:
                raise ConfluenceError(f"GET {_show(url)}: pagination returned a page already read")

    def download(self, link: str, max_bytes: int) -> bytes:
        """An attachment's bytes from its `downloadLink`; ConfluenceError past `max_bytes` or on failure.

        Confluence Cloud answers a download with a redirect to its media service, whose URL carries
        its own token: followed once, without our credentials (they never go to another host).
        """
        url = self._resolve(link)
        resp = self._get(url, redirect_ok=True)
        if resp.is_redirect and (location := resp.headers.get("location")):
            target = resp.url.join(location)
            own = f"{target.scheme}://{target.netloc.decode()}" == self.origin
            resp = self._get(target, credentials=own)
        if len(resp.content) > max_bytes:
            raise ConfluenceError(
                f"GET {_show(url)}: {len(resp.content)} bytes, over max_attachment_bytes ({max_bytes}): skipped"
            )
        return resp.content

    def _resolve(self, link: str) -> httpx.URL:
        """A next link: relative to the host ("/wiki/api/v2/...") or, if it lacks the base path, to the site."""
        parts = urlsplit(link)
        if parts.scheme:
            if f"{parts.scheme}://{parts.netloc}" == self.origin:
                return httpx.URL(link)
            # Credentials never follow a link to another host: ask our own site for the same path.
            log.warning("pagination link names another host (%s): following its path on %s", parts.netloc, self.origin)
            link = parts.path + (f"?{parts.query}" if parts.query else "")
        link = link if link.startswith("/") else "/" + link
        if self.base_path and not link.startswith(self.base_path + "/"):
            return httpx.URL(self.base + link)
        return httpx.URL(self.origin + link)

    def _get(
        self, url: httpx.URL, listing: bool = False, redirect_ok: bool = False, credentials: bool = True
    ) -> httpx.Response:
        fives = 0
        # Never our credentials to another host (an attachment's media service): no auth, any content type.
        auth, headers = (http.USE_CLIENT_AUTH, None) if credentials else (None, {"Accept": "*/*"})

        def attempt() -> httpx.Response:
            nonlocal url, fives
            resp = self.service.http.get(url, auth=auth, headers=headers)
            if http.retryable(resp.status_code) and resp.status_code >= 500:
                fives += 1
                if listing and fives >= 2 and url.params.get("limit", "").isdigit():  # ask for less next time
                    url = url.copy_set_param("limit", max(1, int(url.params["limit"]) // 2))
            return resp

        resp = self.service.call(attempt, lambda: f"GET {_show(url)}")  # late-bound: shows a halved limit
        return resp if redirect_ok and resp.is_redirect else self.service.check(resp, f"GET {_show(url)}")

    def _json(self, resp: httpx.Response, url: httpx.URL) -> dict:
        data = self.service.json(resp, f"GET {_show(url)}")
        if not isinstance(data, dict):
            raise ConfluenceError(f"GET {_show(url)}: expected a JSON object, got {type(data).__name__}")
        return data

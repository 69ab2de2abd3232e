"""HTTP to one Confluence Cloud site's REST API v2: auth, retries, pagination.

One httpx.Client (connection reuse) and one tenacity policy for every request:
429 waits `Retry-After` clamped to `max_retry_after_s` (exponential backoff with
jitter when absent); 5xx, timeouts and dropped connections back off; a list call
that keeps getting 5xx halves its `limit`; all waits of one client together stay
within `retry_budget_s`, so a rate-limit storm costs bounded time.

Credentials (`Settings.confluence`) come from the environment only and live
only in the auth header: CONFLUENCE_EMAIL + CONFLUENCE_API_TOKEN (basic auth),
else CONFLUENCE_BEARER_TOKEN or CONFLUENCE_PAT (bearer). They never appear in
URLs, and every error text is redacted (`pipeline.redact`: every encoding, before
any truncation) before it is raised or logged.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Protocol
from urllib.parse import urlsplit

import httpx
from tenacity import RetryCallState, Retrying, retry_if_exception_type, wait_exponential_jitter

from pipeline.config import ConfluenceCredentials, ConfluenceSourceConfig, env_section
from pipeline.errors import ConfluenceError
from pipeline.redact import redact, register, register_basic

log = logging.getLogger(__name__)
API = "/api/v2"
_TRANSIENT = (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError)


class Clock(Protocol):
    """Time as the retry policy sees it; injected, so tests assert the waits rather than sleep them."""

    def now(self) -> datetime: ...  # aware: for a Retry-After given as an HTTP date

    def sleep(self, seconds: float) -> None: ...


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


class _Retryable(Exception):
    """A response worth retrying (429, 5xx), with the server's Retry-After if any."""

    def __init__(self, message: str, retry_after: float | None = None):
        super().__init__(message)
        self.retry_after = retry_after


class _Bearer(httpx.Auth):
    def __init__(self, token: str):
        self._header = f"Bearer {token}"

    def auth_flow(self, request: httpx.Request):
        request.headers["Authorization"] = self._header
        yield request


def credentials(creds: ConfluenceCredentials) -> httpx.Auth:
    """The auth for these credentials; registers them for redaction (every encoding, pipeline.redact)."""
    email = creds.email
    token = creds.api_token.get_secret_value() if creds.api_token else None
    bearer = creds.bearer_token.get_secret_value() if creds.bearer_token else None
    if email and token:
        register_basic(email, token)
        return httpx.BasicAuth(email, token)
    if bearer:
        register(bearer)
        return _Bearer(bearer)
    if token:
        raise ConfluenceError(
            "CONFLUENCE_API_TOKEN is set but CONFLUENCE_EMAIL is not: an API token needs "
            "the account's email (for a bearer token/PAT set CONFLUENCE_BEARER_TOKEN)"
        )
    raise ConfluenceError(
        "no Confluence credentials: set CONFLUENCE_EMAIL and CONFLUENCE_API_TOKEN "
        "(or CONFLUENCE_BEARER_TOKEN) in the environment"
    )


def _retry_after(resp: httpx.Response, now: datetime) -> float | None:
    """Retry-After as seconds (delta, or HTTP date less `now`); None when absent or unreadable."""
    value = resp.headers.get("Retry-After", "").strip()
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        return max(0.0, (parsedate_to_datetime(value) - now).total_seconds())
    except (TypeError, ValueError):
        return None


def _failure(rs: RetryCallState) -> BaseException | None:
    return rs.outcome.exception() if rs.outcome else None


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
        auth = credentials(creds or env_section(ConfluenceCredentials))
        self.http = httpx.Client(
            auth=auth,
            timeout=cfg.timeout_s,
            follow_redirects=False,
            headers={"Accept": "application/json", "User-Agent": "docforge"},
        )
        self._backoff = wait_exponential_jitter(multiplier=0.5, max=cfg.max_retry_after_s, jitter=0.5)
        self.clock: Clock = clock or SystemClock()
        self.waited = 0.0  # seconds slept before retries, for this whole instance

    def close(self) -> None:
        self.http.close()

    def url(self, path: str, params: dict | None = None) -> httpx.URL:
        return httpx.URL(f"{self.base}{API}{path}", params={k: v for k, v in (params or {}).items() if v is not None})

    def get_json(self, path: str, params: dict | None = None) -> dict:
        url = self.url(path, params)
        return self._json(self._get(url), url)

    def paginate(self, path: str, params: dict | None = None) -> Iterator[dict]:
        """Every result of a list call, following `_links.next` or the Link header to the end."""
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
            if f"{target.scheme}://{target.netloc.decode()}" == self.origin:
                resp = self._get(target)
            else:
                try:
                    resp = httpx.get(
                        target, timeout=self.cfg.timeout_s, follow_redirects=False, headers={"User-Agent": "docforge"}
                    )
                except httpx.HTTPError as e:
                    raise ConfluenceError(f"GET {_show(target)}: {type(e).__name__}") from None
                self._check(resp, target)
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

    def _get(self, url: httpx.URL, listing: bool = False, redirect_ok: bool = False) -> httpx.Response:
        fives = 0

        def attempt() -> httpx.Response:
            nonlocal url, fives
            resp = self.http.get(url)
            if resp.status_code == 429:
                raise _Retryable("429 Too Many Requests", _retry_after(resp, self.clock.now()))
            if resp.status_code >= 500 and resp.status_code not in (501, 505):
                fives += 1
                if listing and fives >= 2 and url.params.get("limit", "").isdigit():  # ask for less
                    url = url.copy_set_param("limit", max(1, int(url.params["limit"]) // 2))
                raise _Retryable(f"{resp.status_code} {resp.reason_phrase}")
            return resp

        retrying = self._retrying(lambda: _show(url))  # late-bound: shows a halved limit
        try:
            resp = retrying(attempt)
        except (_Retryable, *_TRANSIENT) as e:
            n = retrying.statistics.get("attempt_number", 1)
            raise ConfluenceError(
                redact(
                    f"GET {_show(url)}: {str(e) or type(e).__name__} after {n} attempt(s); "
                    f"{self.waited:.1f}s of the {self.cfg.retry_budget_s:g}s retry budget used"
                )
            ) from None
        return resp if redirect_ok and resp.is_redirect else self._check(resp, url)

    def _retrying(self, where: Callable[[], str]) -> Retrying:
        def log_retry(rs: RetryCallState) -> None:
            log.warning(
                "Confluence GET %s: %s; attempt %d/%d, retrying in %.1fs",
                where(),
                redact(str(_failure(rs))),
                rs.attempt_number,
                self.cfg.max_attempts,
                rs.next_action.sleep if rs.next_action else 0.0,
            )

        return Retrying(
            retry=retry_if_exception_type((_Retryable, *_TRANSIENT)),
            reraise=True,
            stop=self._stop,
            wait=self._wait,
            sleep=self._sleep,
            before_sleep=log_retry,
        )

    def _budget_left(self) -> float:
        return self.cfg.retry_budget_s - self.waited

    def _stop(self, rs: RetryCallState) -> bool:
        return rs.attempt_number >= self.cfg.max_attempts or self._budget_left() <= 0

    def _wait(self, rs: RetryCallState) -> float:
        hint = getattr(_failure(rs), "retry_after", None)
        wait = min(hint, self.cfg.max_retry_after_s) if hint is not None else self._backoff(rs)
        return max(0.0, min(wait, self._budget_left()))

    def _sleep(self, seconds: float) -> None:
        self.waited += seconds
        self.clock.sleep(seconds)

    def _check(self, resp: httpx.Response, url: httpx.URL) -> httpx.Response:
        if resp.is_success:
            return resp
        why = {
            401: "unauthorized: check CONFLUENCE_EMAIL and CONFLUENCE_API_TOKEN (or CONFLUENCE_BEARER_TOKEN)",
            403: "forbidden: these credentials may not read it",
            404: "not found: deleted, a draft, or not visible to these credentials",
        }
        # Redacted before it is cut: a body may quote the request's Authorization header anywhere.
        detail = why.get(resp.status_code) or f"{resp.reason_phrase}: {redact(' '.join(resp.text.split()), 200)}"
        raise ConfluenceError(redact(f"GET {_show(url)}: {resp.status_code} {detail}"))

    def _json(self, resp: httpx.Response, url: httpx.URL) -> dict:
        try:
            data = resp.json()
        except ValueError:
            raise ConfluenceError(f"GET {_show(url)}: the response is not JSON") from None
        if not isinstance(data, dict):
            raise ConfluenceError(f"GET {_show(url)}: expected a JSON object, got {type(data).__name__}")
        return data

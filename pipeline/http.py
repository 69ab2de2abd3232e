"""Every outbound HTTP call docforge makes: one client factory, credentials, one retry policy, one error path.

Confluence, the LLM server, the embedder and reranker services and a hosted docforge API are each a
`Service`: one pooled httpx.Client (timeouts, redirects never followed, credentials as an httpx.Auth
that registers its secret for redaction when it is made) and one tenacity policy (`RetryPolicy`):

- connection errors, timeouts, 429 and 5xx (but 501 and 505, which a retry never changes) are retried;
- a `Retry-After`, in seconds or as an HTTP date, is honoured; without one the wait backs off
  exponentially with jitter; every wait is capped at `max_wait_s`, and all waits of one service
  together stay within `budget_s`, so a rate-limit storm costs bounded time;
- time comes from a `Clock`, injected in tests so they assert the waits instead of sleeping them.

A call that still fails raises the service's own `DocforgeError` subclass (`pipeline.errors`) naming
where and why; every such text passes `redact` here, before any cut, so a body that quotes a
request's credentials back never reaches a message or a log.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any, Protocol

import httpx
from tenacity import RetryCallState, Retrying, retry_if_exception_type, wait_exponential_jitter

from pipeline import __version__
from pipeline.errors import DocforgeError
from pipeline.redact import redact, register, register_basic

log = logging.getLogger(__name__)
USER_AGENT = f"docforge/{__version__}"
CONNECT_S = 10.0  # at most this long to connect: a dead host fails fast whatever the read timeout
_TRANSIENT = (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError)
USE_CLIENT_AUTH: Any = httpx.USE_CLIENT_DEFAULT


# --- time ----------------------------------------------------------------------------------------------


class Clock(Protocol):
    """Time as the retry policy sees it; injected, so tests assert the waits rather than sleep them."""

    def now(self) -> datetime: ...  # aware: for a Retry-After given as an HTTP date

    def sleep(self, seconds: float) -> None: ...


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


# --- credentials and clients ---------------------------------------------------------------------------


class Bearer(httpx.Auth):
    """`Authorization: Bearer <token>` on every request; the token is registered for redaction."""

    def __init__(self, token: str):
        register(token)
        self._header = f"Bearer {token}"

    def auth_flow(self, request: httpx.Request):
        request.headers["Authorization"] = self._header
        yield request


def bearer(token: str | None) -> httpx.Auth | None:
    """Bearer auth for a token, or no auth without one."""
    return Bearer(token) if token else None


def basic(user: str, secret: str) -> httpx.Auth:
    """Basic auth; the secret and `user:secret` in every encoding are registered for redaction."""
    register_basic(user, secret)
    return httpx.BasicAuth(user, secret)


def client(
    timeout_s: float,
    *,
    auth: httpx.Auth | None = None,
    headers: dict[str, str] | None = None,
    transport: httpx.BaseTransport | None = None,
) -> httpx.Client:
    """A pooled client: `timeout_s` per read/write (connect at most CONNECT_S), no redirect followed."""
    return httpx.Client(
        auth=auth,
        timeout=httpx.Timeout(timeout_s, connect=min(CONNECT_S, timeout_s)),
        follow_redirects=False,
        headers={"User-Agent": USER_AGENT, **(headers or {})},
        transport=transport,
    )


# --- the retry policy ----------------------------------------------------------------------------------


def retryable(status: int) -> bool:
    """Worth another try: rate limited, or a server fault a retry may not meet again."""
    return status == 429 or (status >= 500 and status not in (501, 505))


def retry_after(resp: httpx.Response, now: datetime) -> float | None:
    """Retry-After as seconds (a delay, or an HTTP date less `now`); None when absent or unreadable."""
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


class _Retryable(Exception):
    """A response worth another try, with the server's Retry-After (seconds) if it gave one."""

    def __init__(self, resp: httpx.Response, retry_after: float | None):
        super().__init__(f"HTTP {resp.status_code} {resp.reason_phrase}".strip())
        self.retry_after = retry_after


@dataclass
class RetryPolicy:
    """How often and how long one service is retried. Keeps the time waited: the budget is per service."""

    attempts: int = 3  # tries of one call, the first included
    max_wait_s: float = 4.0  # one wait at most, Retry-After included
    budget_s: float = math.inf  # all waits of this service together
    backoff_s: float = 0.25  # the first backoff wait; doubles per try, plus up to as much jitter
    clock: Clock = field(default_factory=SystemClock)
    waited: float = field(default=0.0, init=False)

    def left(self) -> float:
        return self.budget_s - self.waited

    def retrying(self, where: Callable[[], str]) -> Retrying:
        backoff = wait_exponential_jitter(multiplier=self.backoff_s, max=self.max_wait_s, jitter=self.backoff_s)

        def stop(rs: RetryCallState) -> bool:
            return rs.attempt_number >= self.attempts or self.left() <= 0

        def wait(rs: RetryCallState) -> float:
            hint = getattr(_failure(rs), "retry_after", None)
            seconds = min(hint, self.max_wait_s) if hint is not None else backoff(rs)
            return max(0.0, min(seconds, self.left()))

        def sleep(seconds: float) -> None:
            self.waited += seconds
            self.clock.sleep(seconds)

        def warn(rs: RetryCallState) -> None:
            log.warning(
                "%s: %s; attempt %d/%d, retrying in %.2fs",
                where(),
                _problem(_failure(rs)),
                rs.attempt_number,
                self.attempts,
                rs.next_action.sleep if rs.next_action else 0.0,
            )

        return Retrying(
            retry=retry_if_exception_type((_Retryable, *_TRANSIENT)),
            reraise=True,
            stop=stop,
            wait=wait,
            sleep=sleep,
            before_sleep=warn,
        )


def _failure(rs: RetryCallState) -> BaseException | None:
    return rs.outcome.exception() if rs.outcome else None


def _problem(e: BaseException | None) -> str:
    if isinstance(e, httpx.TimeoutException):
        return f"timed out ({type(e).__name__})"
    if isinstance(e, httpx.HTTPError):
        return f"unreachable ({type(e).__name__})"
    return redact(str(e))


# --- a service -----------------------------------------------------------------------------------------


class Service:
    """One remote service as docforge calls it: a client, a retry policy and the error type of its failures.

    `name` says what it is in messages ("the LLM server"); `hints` say what to do about a refusal
    (by status); `setting` names the configuration that points at the service.
    """

    def __init__(
        self,
        name: str,
        error: type[DocforgeError],
        *,
        timeout_s: float,
        auth: httpx.Auth | None = None,
        retry: RetryPolicy | None = None,
        hints: dict[int, str] | None = None,
        setting: str | None = None,
        headers: dict[str, str] | None = None,
        transport: httpx.BaseTransport | None = None,
    ):
        self.name, self.error, self.timeout_s = name, error, timeout_s
        self.retry = retry or RetryPolicy()
        self.hints, self.setting = hints or {}, setting
        self.http = client(timeout_s, auth=auth, headers=headers, transport=transport)

    def close(self) -> None:
        self.http.close()

    def where(self, url: httpx.URL | str) -> str:
        return f"{self.name} at {url}"

    def request(
        self, method: str, url: httpx.URL | str, *, json: Any = None, where: str | None = None
    ) -> httpx.Response:
        """One call under the retry policy: its successful response, or the service's error saying why not."""
        where = where or self.where(url)
        resp = self.call(lambda: self.http.request(method, url, json=json), lambda: where)
        return self.check(resp, where)

    def call(self, attempt: Callable[[], httpx.Response], where: Callable[[], str]) -> httpx.Response:
        """`attempt()` (one request) under the retry policy: the first response not worth another try.

        `where` is read late, so a caller that changes its request between tries is named as it was last sent.
        """

        def once() -> httpx.Response:
            resp = attempt()
            if retryable(resp.status_code):
                raise _Retryable(resp, retry_after(resp, self.retry.clock.now()))
            return resp

        retrying = self.retry.retrying(where)
        try:
            return retrying(once)
        except (_Retryable, *_TRANSIENT) as e:
            tries = retrying.statistics.get("attempt_number", 1)
            budget = (
                f"; {self.retry.waited:.1f}s of the {self.retry.budget_s:g}s retry budget used"
                if math.isfinite(self.retry.budget_s)
                else ""
            )
            setting = f"; check {self.setting}" if self.setting else ""
            raise self.error(
                redact(
                    f"{where()}: {_problem(e)} after {tries} attempt(s){budget} "
                    f"({self.timeout_s:g} s per attempt{setting})"
                )
            ) from None

    def check(self, resp: httpx.Response, where: str) -> httpx.Response:
        """`resp` if it succeeded; else the service's error with the status and its hint or the body's gist."""
        if resp.is_success:
            return resp
        detail = self.hints.get(resp.status_code) or f"{resp.reason_phrase}: {excerpt(resp)}"
        error = self.error(redact(f"{where}: HTTP {resp.status_code} {detail}"))
        error.status = resp.status_code
        raise error

    def json(self, resp: httpx.Response, where: str) -> Any:
        """The response's JSON, or the service's error when it is none."""
        try:
            return resp.json()
        except ValueError:
            raise self.error(redact(f"{where}: the response is not JSON: {excerpt(resp)}")) from None


def excerpt(resp: httpx.Response, limit: int = 200) -> str:
    """The gist of an error body (its JSON `detail` if any), redacted before it is cut to `limit`."""
    text = resp.text
    try:
        data = resp.json()
        if isinstance(data, dict) and "detail" in data:
            text = str(data["detail"])
    except ValueError:
        pass
    return repr(redact(" ".join(text.split()), limit))

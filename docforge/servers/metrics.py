"""`GET /metrics` in Prometheus' text format (docs/metrics.md), with the prometheus_client library.

Per app: requests by route and status and their latency (an ASGI middleware outside the request gate, so
its 401s, 413s and 503s count too), answers by cache result, and, read as each scrape comes, admission
control (in flight, waiting, shed: docforge.servers.gate) and the store pool's connections. Per process:
what the core counts through pipeline.metrics (embedding batch sizes and queue wait, store errors,
usage records dropped), in one registry every app's includes.

/metrics goes around the gate (never an admission slot: a scrape must work when the API is full) and
checks its caller itself: `metrics.token` when set, else an API token with full access. `metrics.bind`
serves the same registry on a listener of its own.
"""

from __future__ import annotations

import hmac
import threading
import time
from collections.abc import Callable, Iterable

import prometheus_client
from fastapi import FastAPI, HTTPException, Request
from fastapi.responses import Response
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from starlette.routing import Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from docforge.servers.auth import Authenticator
from docforge.servers.gate import Admissions
from pipeline import metrics
from pipeline.answers import Answer
from pipeline.config import MetricsConfig

PATH = "/metrics"
# Seconds: a cached search (a few ms) to an LLM answer (tens of s).
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256)  # texts per pass: pipeline.embed.batching caps at 64
WAIT_BUCKETS = (0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0)  # its window is 2 ms

prometheus_client.disable_created_metrics()  # no `_created` series beside every counter


class CoreSink:
    """The process's pipeline.metrics sink: one registry, shared by every app's /metrics."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.batch = Histogram(
            "docforge_embed_batch_texts", "Texts per shared embedding forward pass.", buckets=BATCH_BUCKETS, registry=r
        )
        self.wait = Histogram(
            "docforge_embed_queue_wait_seconds",
            "A job's wait from submit to its forward pass.",
            buckets=WAIT_BUCKETS,
            registry=r,
        )
        self.store_errors = Counter(
            "docforge_store_errors", "Store calls that failed: no connection, a lost one, a usage write.", registry=r
        )
        self.dropped = Counter(
            "docforge_usage_dropped", "Usage records dropped: the writer's queue was full.", registry=r
        )
        self._counters = {metrics.STORE_ERRORS: self.store_errors, metrics.USAGE_DROPPED: self.dropped}
        self._histograms = {metrics.EMBED_BATCH_TEXTS: self.batch, metrics.EMBED_QUEUE_WAIT_S: self.wait}

    def count(self, name: str, n: float = 1.0) -> None:
        if c := self._counters.get(name):
            c.inc(n)

    def observe(self, name: str, value: float) -> None:
        if h := self._histograms.get(name):
            h.observe(value)


_core: CoreSink | None = None
_core_lock = threading.Lock()


def core() -> CoreSink:
    """The process's CoreSink, watching pipeline.metrics from its first use."""
    global _core
    with _core_lock:
        if _core is None:
            _core = CoreSink()
            metrics.watching(_core)
        return _core


class _Live:
    """Values read as a scrape comes: admission control's lines and the store pools' connections."""

    def __init__(self, admissions: Admissions, pools: Callable[[], Iterable]):
        self.admissions, self.pools = admissions, pools

    def collect(self) -> Iterable[Metric]:
        lines = {"requests": self.admissions.requests, "asks": self.admissions.asks}
        shed = CounterMetricFamily("docforge_admission_shed", "Requests refused with 503: no slot.", labels=["line"])
        busy = GaugeMetricFamily("docforge_admission_in_flight", "Requests worked on now.", labels=["line"])
        queued = GaugeMetricFamily("docforge_admission_queued", "Requests waiting for a slot.", labels=["line"])
        for name, line in lines.items():
            report = line.report()
            shed.add_metric([name], report["shed"])
            busy.add_metric([name], report["in_flight"])
            queued.add_metric([name], report["queued"])
        conns = GaugeMetricFamily("docforge_pool_connections", "Store pool connections.", labels=["pool", "state"])
        for pool in self.pools():
            stats = pool.get_stats()
            size, idle = stats.get("pool_size", 0), stats.get("pool_available", 0)
            conns.add_metric([pool.name, "in_use"], size - idle)
            conns.add_metric([pool.name, "idle"], idle)
            conns.add_metric([pool.name, "max"], pool.max_size)
        return [shed, busy, queued, conns]


class AppMetrics:
    """One app's registry: its own request metrics, the live values, and the process's core registry."""

    def __init__(self, admissions: Admissions, pools: Callable[[], Iterable] = list):
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "docforge_requests", "HTTP requests by route and status.", ["route", "status"], registry=self.registry
        )
        self.latency = Histogram(
            "docforge_request_seconds",
            "HTTP request latency by route, until the response is sent.",
            ["route"],
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.cache = Counter(
            "docforge_answers", "Answers by answer-cache result (hit, miss).", ["cache"], registry=self.registry
        )
        self.registry.register(_Live(admissions, pools))
        self.registry.register(core().registry)

    def answered(self, answer: Answer) -> None:
        self.cache.labels(answer.cache).inc()

    def text(self) -> bytes:
        return generate_latest(self.registry)


class RequestMetrics:
    """ASGI middleware: each HTTP request counted by its route's template (bounded labels) and status."""

    def __init__(self, app: ASGIApp, *, meter: AppMetrics, routes: Callable[[], list]):
        self.app, self.meter, self.routes = app, meter, routes

    def route(self, scope: Scope) -> str:
        for r in self.routes():
            match, _ = r.matches(scope)
            if match != Match.NONE:
                return getattr(r, "path", "other") or "other"
        return "other"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        t, status = time.perf_counter(), 500

        async def sending(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            route = self.route(scope)
            self.meter.requests.labels(route, str(status)).inc()
            self.meter.latency.labels(route).observe(time.perf_counter() - t)


def add_metrics(app: FastAPI, meter: AppMetrics, auth: Authenticator, cfg: MetricsConfig) -> None:
    """The middleware, and GET /metrics behind `cfg.token` (else a full-access API token)."""
    app.add_middleware(RequestMetrics, meter=meter, routes=lambda: app.router.routes)
    token = cfg.token.get_secret_value() if cfg.token else None

    @app.get(PATH, include_in_schema=False)
    def get_metrics(request: Request) -> Response:
        scheme, _, given = request.headers.get("authorization", "").partition(" ")
        given = given.strip() if scheme.lower() == "bearer" else ""
        if token is not None:
            if not hmac.compare_digest(given.encode(), token.encode()):
                raise HTTPException(
                    401, "missing or invalid metrics token (DOCFORGE_METRICS__TOKEN)", {"WWW-Authenticate": "Bearer"}
                )
        else:
            who = auth.authenticate(given or None)
            if who is None:
                raise HTTPException(401, "missing or invalid bearer token", {"WWW-Authenticate": "Bearer"})
            if not who.full_access:
                raise HTTPException(
                    403, "/metrics needs an admin token (DOCFORGE_API_TOKENS) or the DOCFORGE_METRICS__TOKEN"
                )
        return Response(meter.text(), media_type=CONTENT_TYPE_LATEST)


def serve_bound(meter: AppMetrics, bind: str) -> None:
    """The same registry on `bind` (host:port), in a thread of its own."""
    host, _, port = bind.rpartition(":")
    prometheus_client.start_http_server(int(port), addr=host.strip("[]") or "0.0.0.0", registry=meter.registry)

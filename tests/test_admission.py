"""Holding up under load: concurrent query embeddings share forward passes (pipeline.embed.batching), and
the API admits a bounded number of requests, lets a bounded number wait a bounded time, and answers
503 with Retry-After to the rest at once (docforge.servers.gate). The API is a real uvicorn server on
127.0.0.1; its search function waits on an event the test sets, so who is in flight is certain."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import numpy as np

from docforge.servers.api import create_app
from docforge.servers.auth import Authenticator
from pipeline.config import ApiConfig, AuthConfig
from pipeline.embed import SharedEncoder
from tests.helpers import ServerThread
from tests.test_services import _Gated

TOKEN = "admission-suite-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


class HeldSearch:
    """A SearchFn whose calls wait until `release` is set: each call is a request in flight."""

    def __init__(self):
        self.release = threading.Event()
        self.running = 0
        self.peak = 0
        self._lock = threading.Lock()

    def __call__(self, req, reader=None) -> list[dict]:
        with self._lock:
            self.running += 1
            self.peak = max(self.peak, self.running)
        try:
            self.release.wait(30)
            return []
        finally:
            with self._lock:
                self.running -= 1


def test_bounded_in_flight_bounded_queue_then_503_with_retry_after():
    search = HeldSearch()
    limits = ApiConfig(max_in_flight=2, max_queued=2, max_wait_s=20)
    app = create_app(search, Authenticator(AuthConfig(api_tokens=TOKEN)), limits=limits)
    with ServerThread(app) as srv, ThreadPoolExecutor(8) as pool:

        def post() -> httpx.Response:
            return httpx.post(f"{srv.url}/search", json={"query": "q"}, headers=AUTH, timeout=60)

        held = [pool.submit(post) for _ in range(4)]  # 2 in flight, 2 waiting
        for _ in range(200):  # bounded: until the server reports them (at most 10 s)
            state = httpx.get(f"{srv.url}/health").json()["admission"]["requests"]
            if (state["in_flight"], state["queued"]) == (2, 2):
                break
            time.sleep(0.05)
        assert (state["in_flight"], state["queued"]) == (2, 2), state
        refused = [post() for _ in range(3)]  # no room to wait: refused at once, not queued behind them
        assert not any(f.done() for f in held)  # answered while the admitted ones still hold the line
        assert httpx.get(f"{srv.url}/health").json()["admission"]["requests"]["queued"] == 2
        for r in refused:
            assert r.status_code == 503 and r.headers["retry-after"] == "20"
            assert "DOCFORGE_API_MAX_IN_FLIGHT" in r.json()["detail"]
        assert httpx.get(f"{srv.url}/health").status_code == 200  # the probe is never held up
        search.release.set()
        assert [f.result(60).status_code for f in held] == [200] * 4
        assert search.peak == 2
        assert httpx.get(f"{srv.url}/health").json()["admission"]["requests"]["shed"] == 3


def test_a_wait_past_max_wait_is_503():
    search = HeldSearch()
    limits = ApiConfig(max_in_flight=1, max_queued=5, max_wait_s=0.5)
    app = create_app(search, Authenticator(AuthConfig(api_tokens=TOKEN)), limits=limits)
    with ServerThread(app) as srv, ThreadPoolExecutor(2) as pool:
        first = pool.submit(httpx.post, f"{srv.url}/search", json={"query": "q"}, headers=AUTH, timeout=60)
        while search.running == 0 and not first.done():
            time.sleep(0.01)
        t0 = time.monotonic()
        late = httpx.post(f"{srv.url}/search", json={"query": "q"}, headers=AUTH, timeout=60)
        waited = time.monotonic() - t0
        assert late.status_code == 503 and late.headers["retry-after"] == "1"
        assert waited >= 0.4  # it waited its turn first (bounded: the limit is 0.5 s)
        search.release.set()
        assert first.result(60).status_code == 200
        again = httpx.post(f"{srv.url}/search", json={"query": "q"}, headers=AUTH, timeout=60)
        assert again.status_code == 200  # the slot came back


def test_concurrent_queries_share_one_forward_pass_and_repeats_are_remembered(embedder):
    gated = _Gated(embedder)
    shared = SharedEncoder(gated)
    with ThreadPoolExecutor(9) as pool:
        first = pool.submit(shared.encode, ["the first question"], "query")
        while not gated.calls:
            time.sleep(0.01)
        later = [pool.submit(shared.encode, [f"question {i}"], "query") for i in range(8)]
        for _ in range(600):  # bounded: until all eight wait behind the first pass (at most 30 s)
            if shared._batcher is not None and shared._batcher._queue.qsize() == 8:
                break
            time.sleep(0.05)
        gated.gate.set()
        got = [f.result(30) for f in later]
        first.result(30)
    assert gated.calls == [1, 8]  # eight searches, one forward pass
    for i, vec in enumerate(got):
        np.testing.assert_allclose(vec, embedder.encode([f"question {i}"], kind="query"), atol=1e-5)
    again = shared.encode(["question 3", "question 5"], "query")
    assert len(gated.calls) == 2  # remembered: no third pass
    np.testing.assert_allclose(again[0], got[3][0], atol=0)
    plain = SharedEncoder(embedder)  # everything but encode is the wrapped embedder's
    assert (plain.model_id, plain.dimension, plain.tokenizer) == (
        embedder.model_id,
        embedder.dimension,
        embedder.tokenizer,
    )

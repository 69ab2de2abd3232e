"""The one HTTP layer (pipeline.http) as every outbound client meets it, against real servers on 127.0.0.1."""

from __future__ import annotations

import json
import threading
from datetime import timedelta
from email.utils import format_datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest
from pydantic import SecretStr

from pipeline import http
from pipeline.answers.llm import ChatClient
from pipeline.config import ConfluenceCredentials, ConfluenceSourceConfig, LLMConfig
from pipeline.embed import RemoteEmbedder
from pipeline.errors import ConfluenceError, EmbedError, LLMError, RerankError
from pipeline.query.hits import Hit
from pipeline.query.rerank import RemoteReranker, rerank_or_keep
from pipeline.sources.confluence_client import ConfluenceClient
from tests.fake_clock import NOW, FakeClock
from tests.helpers import send_json

SECRET = "s3cret-t0ken-never-shown"


class ScriptedServer:
    """Answers each request with the next scripted (status, headers, body); the last one repeats."""

    def __init__(self, *answers: tuple[int, dict[str, str], object]):
        self.answers, self.requests = list(answers), []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _answer(self):
                length = int(self.headers.get("Content-Length") or 0)
                server.requests.append(
                    {
                        "path": self.path,
                        "authorization": self.headers.get("Authorization"),
                        "body": self.rfile.read(length),
                    }
                )
                status, headers, body = server.answers.pop(0) if len(server.answers) > 1 else server.answers[0]
                send_json(self, status, body, headers)

            do_GET = do_POST = _answer

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def __enter__(self) -> ScriptedServer:
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def confluence(url: str, clock: FakeClock):
    cfg = ConfluenceSourceConfig(
        name="wiki", type="confluence", base_url=url + "/wiki", space="S", max_retry_after_s=30, timeout_s=5
    )
    client = ConfluenceClient(cfg, ConfluenceCredentials(email="ada@example.com", api_token=SecretStr(SECRET)), clock)
    return client, lambda: client.get_json("/spaces"), {"results": []}


def llm(url: str, clock: FakeClock):
    cfg = LLMConfig(base_url=url + "/v1", model="m", api_key=SecretStr(SECRET), max_backoff_s=30, timeout_s=5)
    client = ChatClient(cfg, clock=clock)
    reply = {"choices": [{"message": {"content": "ok"}}], "usage": {"prompt_tokens": 3, "completion_tokens": 1}}
    return client, lambda: client.chat([{"role": "user", "content": "hi"}]), reply


def embedder(url: str, clock: FakeClock):
    client = RemoteEmbedder(url, SECRET, timeout_s=5, max_wait_s=30, clock=clock)
    return client, lambda: client.info, {"model": "m", "dimension": 3, "max_seq_length": 8}


CLIENTS = {"confluence": confluence, "llm": llm, "embedder": embedder}


@pytest.mark.parametrize("name", CLIENTS)
def test_a_429_with_an_http_date_retry_after_is_honoured_by_every_client(name):
    """Retry-After as an HTTP date 3 s after the client's clock: one wait of exactly 3 s, then the answer."""
    clock = FakeClock()
    retry_at = format_datetime(NOW + timedelta(seconds=3), usegmt=True)
    with ScriptedServer() as server:
        client, call, reply = CLIENTS[name](server.url, clock)
        server.answers = [(429, {"Retry-After": retry_at}, {"detail": "slow down"}), (200, {}, reply)]
        result = call()
        client.close()
    assert clock.waits == [3.0]
    assert len(server.requests) == 2 and all(r["authorization"] for r in server.requests)
    assert SECRET not in json.dumps(server.requests[0]["path"])
    if name == "llm":
        assert result.text == "ok" and result.attempts == 2


@pytest.mark.parametrize("name", CLIENTS)
def test_a_client_that_gives_up_raises_its_own_error_without_the_secret(name, caplog):
    clock = FakeClock()
    echo = {"detail": f"bad gateway for Authorization: Bearer {SECRET}", "token": SECRET}
    with ScriptedServer((502, {"Retry-After": "100000"}, echo)) as server:
        client, call, _ = CLIENTS[name](server.url, clock)
        error = {"confluence": ConfluenceError, "llm": LLMError, "embedder": EmbedError}[name]
        with pytest.raises(error) as err:
            call()
        client.close()
    message = str(err.value)
    assert "HTTP 502 Bad Gateway after" in message and ("GET /wiki/api/v2/spaces" in message or server.url in message)
    assert SECRET not in message + caplog.text
    assert all(w == 30.0 for w in clock.waits) and len(server.requests) == len(clock.waits) + 1


def test_statuses_a_retry_never_changes_are_not_retried():
    clock = FakeClock()
    with ScriptedServer((501, {}, {"detail": f"no such thing {SECRET}"})) as server:
        client, call, _ = llm(server.url, clock)
        with pytest.raises(LLMError, match="HTTP 501") as err:
            call()
    assert len(server.requests) == 1 and clock.waits == [] and SECRET not in str(err.value)


def test_waits_are_capped_and_all_of_them_stay_within_the_budget():
    clock = FakeClock()
    policy = http.RetryPolicy(attempts=50, max_wait_s=10, budget_s=25, clock=clock)
    with ScriptedServer((429, {"Retry-After": "100000"}, {})) as server:
        service = http.Service("the test service", LLMError, timeout_s=5, retry=policy)
        with pytest.raises(LLMError, match=r"after 4 attempt\(s\); 25.0s of the 25s retry budget used"):
            service.request("GET", server.url + "/x")
    assert clock.waits == [10.0, 10.0, 5.0] and policy.waited == 25.0


def test_backoff_without_retry_after_doubles_with_jitter_up_to_the_cap():
    clock = FakeClock()
    policy = http.RetryPolicy(attempts=6, max_wait_s=3, backoff_s=0.5, clock=clock)
    with ScriptedServer((503, {}, {})) as server, pytest.raises(EmbedError, match="after 6 attempt"):
        http.Service("s", EmbedError, timeout_s=5, retry=policy).request("GET", server.url)
    assert all(0.5 * 2**i <= w for i, w in enumerate(clock.waits[:2]))  # 0.5 s, 1 s (+ up to 0.5 s of jitter)
    assert all(w <= 3 for w in clock.waits) and clock.waits[3:] == [3.0, 3.0]


def test_a_dead_host_is_a_clear_error_after_its_retries():
    clock = FakeClock()
    with ScriptedServer((200, {}, {})) as server:
        url = server.url
    with pytest.raises(EmbedError, match=r"unreachable \(ConnectError\) after 3 attempt\(s\).*check EMBEDDER_URL"):
        _ = RemoteEmbedder(url, SECRET, timeout_s=2, clock=clock).info
    assert len(clock.waits) == 2


def test_retry_after_forms():
    def resp(value):
        return httpx.Response(429, headers={"Retry-After": value} if value is not None else {})

    assert http.retry_after(resp("7"), NOW) == 7.0 and http.retry_after(resp("1.5"), NOW) == 1.5
    assert http.retry_after(resp(None), NOW) is None and http.retry_after(resp("soon"), NOW) is None
    assert http.retry_after(resp("Wed, 21 Oct 2015 07:28:00 GMT"), NOW) == 0.0  # in the past
    assert http.retry_after(resp("Tue, 01 Jan 2030 00:01:30 GMT"), NOW) == 90.0


def test_the_reranker_maps_its_failures_into_the_error_tree_and_the_search_keeps_its_order():
    hits = [
        Hit(str(i), f"s:{i}.md", "s", "git", f"{i}.md", f"T{i}", "", 0, f"text {i}", 1.0 - i / 10) for i in range(3)
    ]
    with ScriptedServer((401, {}, {"detail": "bad key"})) as server:
        reranker = RemoteReranker(server.url, api_key=SECRET)
        with pytest.raises(RerankError, match="HTTP 401 refused the key sent: set RERANKER_API_KEY"):
            reranker.rerank("q", hits, 2)
        assert rerank_or_keep(reranker, "q", hits, 2) == hits[:2]
        server.answers = [(200, {}, {"results": [{"index": 2, "relevance_score": 0.9}]})]
        assert [h.chunk_id for h in reranker.rerank("q", hits, 2)] == ["2", "0"]
    assert server.requests[0]["authorization"] == f"Bearer {SECRET}"

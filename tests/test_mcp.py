"""The MCP server over stdio, driven by the real MCP client SDK: `docforge serve` as a subprocess."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client

from tests.helpers import docforge_env

DOCFORGE = str(Path(sys.executable).parent / "docforge")


def session_calls(params: StdioServerParameters, errlog, calls: list[dict]) -> tuple[list, list]:
    """Start the server, list its tools, make each call; (tools, results)."""

    async def main():
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            tools = (await session.list_tools()).tools
            results = [await session.call_tool("search_documentation", args) for args in calls]
            return tools, results

    return anyio.run(main)


def server_env(corpus, tmp_path, **extra) -> dict[str, str]:
    return docforge_env(
        DATABASE_URL=corpus.url, DOCFORGE_CONFIG=str(corpus.config), DOCFORGE_HOME=str(tmp_path), **extra
    )


def test_search_documentation_over_stdio(corpus, tmp_path):
    params = StdioServerParameters(command=DOCFORGE, args=["serve"], env=server_env(corpus, tmp_path))
    calls = [
        {
            "query": "how do I give a customer their money back?",
            "user_name": "ada",
            "team_name": "payments",
            "area_name": "finance",
            "limit": 3,
        },
        {
            "query": "how can I undo a bad release?",
            "user_name": "bob",
            "team_name": "platform",
            "filter_repo": "handbook",
        },
        {"query": "refund", "user_name": "eve", "team_name": "x", "limit": 0},
    ]
    with open(tmp_path / "stderr.log", "w") as errlog:
        tools, (refund, deploy, bad) = session_calls(params, errlog, calls)
    tool = next(t for t in tools if t.name == "search_documentation")
    assert set(tool.input_schema["required"]) == {"query", "user_name", "team_name"}
    assert {"area_name", "limit"} <= set(tool.input_schema["properties"])

    assert not refund.is_error
    hits = refund.structured_content["hits"]
    assert 1 <= len(hits) <= 3
    top = hits[0]
    assert (top["title"], top["section"], top["doc_key"]) == (
        "Issuing refunds",
        "Issuing refunds",
        "payments:docs/refunds.md",
    )
    assert top["url"].endswith("/payments/docs/refunds.md") and 0 < top["score"] <= 1
    assert json.loads(refund.content[0].text)["hits"][0]["url"] == top["url"]  # text form for older clients

    assert deploy.structured_content["hits"][0]["doc_key"] == "handbook:docs/deploy.md"
    assert all(h["source"] == "handbook" for h in deploy.structured_content["hits"])
    assert len(deploy.structured_content["hits"]) == 7 - 2  # default limit 10, handbook has 5 chunks

    assert bad.is_error and "limit" in bad.content[0].text

    log = (tmp_path / "stderr.log").read_text()
    assert "user='ada' team='payments' area='finance'" in log
    assert "user='bob' team='platform' area=None" in log


class RawSession:
    """`docforge serve` over stdio, driven line by line: what a buggy or hostile client can send."""

    def __init__(self, env: dict[str, str], errlog):
        import subprocess

        self.proc = subprocess.Popen(
            [DOCFORGE, "serve"], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errlog
        )

    def send(self, line: bytes) -> None:
        self.proc.stdin.write(line + b"\n")
        self.proc.stdin.flush()

    def reply(self) -> dict:
        line = self.proc.stdout.readline()  # bounded: the server answers each line (or the test fails on EOF)
        assert line, "the server closed stdout"
        return json.loads(line)

    def call(self, rid: int, method: str, params: dict) -> dict:
        self.send(json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}).encode())
        return self.reply()

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(30)


def test_malformed_lines_get_an_error_reply_and_the_next_call_works(corpus, tmp_path):
    """A line that is not JSON, JSON that is no JSON-RPC message, and a call with a lone surrogate in its
    arguments each get a JSON-RPC error reply (to the call's id where there is one); the session goes on."""
    with open(tmp_path / "stderr.log", "wb") as errlog:
        s = RawSession(server_env(corpus, tmp_path), errlog)
        try:
            init = s.call(
                1,
                "initialize",
                {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
            )
            assert init["id"] == 1 and "result" in init
            s.send(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}')

            s.send(b"this is not json {")
            parse = s.reply()
            assert parse["id"] is None and parse["error"]["code"] == -32700

            s.send(b'{"jsonrpc": "2.0", "id": 2}')
            invalid = s.reply()
            assert invalid["id"] == 2 and invalid["error"]["code"] == -32600

            args = rb'{"query": "refund \ud800", "user_name": "ada", "team_name": "payments"}'
            s.send(
                b'{"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "search_documentation", '
                b'"arguments": ' + args + b"}}"
            )
            surrogate = s.reply()
            assert surrogate["id"] == 3 and surrogate["error"]["code"] == -32602
            assert "not valid Unicode" in surrogate["error"]["message"]

            s.send(b"[" * 100_000 + b"]" * 100_000)  # past every parser's recursion: an error, no crash
            deep = s.reply()
            assert deep["id"] is None and deep["error"]["code"] == -32700
            assert "nested" in deep["error"]["message"]
            nested = {"query": "refund", "user_name": "a", "team_name": "b", "filters": {}}
            for _ in range(150):  # JSON-RPC that pydantic takes (under its 200), nested past docforge's bound
                nested = {"x": nested}
            s.send(json.dumps({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": nested}).encode())
            too_deep = s.reply()
            assert too_deep["id"] == 5 and too_deep["error"]["code"] == -32602

            ok = s.call(
                4,
                "tools/call",
                {"name": "search_documentation", "arguments": {"query": "refund", "user_name": "a", "team_name": "b"}},
            )
            assert ok["id"] == 4 and not ok["result"].get("isError")
            assert ok["result"]["structuredContent"]["hits"][0]["source"] == "payments"
        finally:
            s.close()
    assert "Traceback" not in (tmp_path / "stderr.log").read_text(errors="replace")

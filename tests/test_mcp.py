"""The MCP server over stdio, driven by the real MCP client SDK: `docforge serve` as a subprocess."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client

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
    return {
        "DATABASE_URL": corpus.url,
        "DOCFORGE_CONFIG": str(corpus.config),
        "DOCFORGE_HOME": str(tmp_path),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
        **extra,
    }


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

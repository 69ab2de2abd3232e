"""The MCP server (stdio): `search_documentation` with citations, and `ask_documentation` (grounded answers).

Searches this machine's store (`LocalSearch`) or, with `docforge serve
--remote-api URL`, proxies to a hosted docforge HTTP API (`RemoteSearch`).
stdout carries the protocol, so everything else (the who-asked log) goes to stderr.
"""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import ValidationError

from docforge.servers import Citation, SearchFn, SearchRequest, SearchResponse, log_request
from docforge.servers.ask import AskFn, AskRequest, log_ask
from docforge.servers.remote import RemoteRoute
from pipeline import __version__
from pipeline.answers import Answer
from pipeline.errors import DocforgeError

INSTRUCTIONS = (
    "Search the organisation's indexed documentation (git repositories, Confluence). "
    "Cite the `url`, `title` and `section` of the hits you use."
)
TOOL_DESCRIPTION = """Search the documentation and return the most relevant passages with citations.

Each hit has title, section (heading path), url, source, text and score (0..1).
Ask in natural language; results are hybrid (semantic + keyword) ranked.
user_name, team_name, area_name identify who asks (logged; their team/area tags
rank slightly higher). filter_repo keeps only repositories whose path contains it.
per_doc caps the passages taken from one document (default 2; raise it for more
context from the same document, 0 for no limit)."""


def build_mcp(search: SearchFn, ask: AskFn | None = None) -> MCPServer:
    server = MCPServer(name="docforge", version=__version__, instructions=INSTRUCTIONS)
    if ask is not None:
        _add_ask_tool(server, ask)

    @server.tool(description=TOOL_DESCRIPTION)
    def search_documentation(
        query: str,
        user_name: str,
        team_name: str,
        area_name: str | None = None,
        limit: int = 10,
        filter_repo: str | None = None,
        per_doc: int | None = None,
    ) -> SearchResponse:
        try:
            req = SearchRequest(
                query=query,
                user_name=user_name,
                team_name=team_name,
                area_name=area_name,
                limit=limit,
                filter_repo=filter_repo,
                per_doc=per_doc,
            )
        except ValidationError as e:
            raise ToolError(f"invalid arguments: {e.errors()[0]['loc'][0]}: {e.errors()[0]['msg']}") from None
        log_request("mcp", req)
        try:
            hits = search(req)
        except DocforgeError as e:
            raise ToolError(str(e)) from None
        return SearchResponse(query=query, hits=[Citation(**h) for h in hits])

    return server


ASK_DESCRIPTION = """Answer a question from the documentation: every claim cites numbered evidence and is
checked against it deterministically.

Returns answer (claims marked ✓ verified / ✗ unverified), claims (text, pointers,
verified, strategy), citations (pointer, title, section, url, score), audit_mode
(STRICT: all quoted and on the question; HYBRID: some paraphrased, or quoted but
not answering the question; UNGROUNDED: do not rely on it), addresses_question and
addresses_reason, confidence, abstained (true: not found in the documentation). user_name,
team_name, area_name identify who asks; filters is a filter expression."""


def _add_ask_tool(server: MCPServer, ask: AskFn) -> None:
    @server.tool(description=ASK_DESCRIPTION)
    def ask_documentation(
        question: str,
        user_name: str,
        team_name: str,
        area_name: str | None = None,
        filters: dict[str, Any] | None = None,
    ) -> Answer:
        try:
            req = AskRequest(
                question=question, user_name=user_name, team_name=team_name, area_name=area_name, filters=filters
            )
        except ValidationError as e:
            raise ToolError(f"invalid arguments: {e.errors()[0]['loc'][0]}: {e.errors()[0]['msg']}") from None
        log_ask("mcp", req)
        try:
            return ask(req)
        except DocforgeError as e:
            raise ToolError(str(e)) from None


class RemoteSearch(RemoteRoute):
    """SearchFn that asks a hosted docforge API (`POST {url}/search`) with a bearer token."""

    def __init__(self, url: str, token: str | None, timeout_s: float = 60.0):
        super().__init__(url, "/search", token, timeout_s)

    def __call__(self, req: SearchRequest) -> list[dict]:
        return self.post(req.model_dump(exclude_none=True))["hits"]

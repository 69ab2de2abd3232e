"""The MCP server (stdio): `search_documentation` with citations, and `ask_documentation` (grounded answers).

Searches this machine's store (`LocalSearch`) or, with `docforge serve
--remote-api URL`, proxies to a hosted docforge HTTP API (`RemoteSearch`).
stdout carries the protocol, so everything else (the who-asked log) goes to stderr.

`run_stdio` serves it, answering what the SDK's stdio transport drops without a
word: a line that is not JSON gets a JSON-RPC parse error (id null), one that is
JSON but no JSON-RPC message an "invalid request" error, and a request whose
text holds a lone surrogate (a JSON "\\ud800" escape: no Unicode at all) an
"invalid params" error to its id, so a client never waits on a reply that will
not come; the next call is served as usual.
"""

from __future__ import annotations

import json
from typing import Any, TypeVar

import anyio
import mcp_types as types
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from pydantic import BaseModel, ValidationError

from docforge.servers.ask import AskFn, AskRequest, log_ask
from docforge.servers.remote import RemoteRoute
from docforge.servers.search import SearchFn, SearchHit, SearchRequest, SearchResponse, log_request
from pipeline import __version__, json_strict
from pipeline.access import FULL_ACCESS, Principal
from pipeline.answers import Answer
from pipeline.errors import DocforgeError
from pipeline.parse.text import first_surrogate

INSTRUCTIONS = (
    "Search the organisation's indexed documentation (git repositories, Confluence). "
    "Cite the `url`, `title` and `section` of the hits you use."
)
R = TypeVar("R", bound=BaseModel)  # a tool's request model

TOOL_DESCRIPTION = """Search the documentation and return the most relevant passages with citations.

Each hit has title, section (heading path), url, source, text and score (0..1).
Ask in natural language; results are hybrid (semantic + keyword) ranked.
user_name, team_name, area_name identify who asks (logged; their team/area tags
rank slightly higher). filter_repo keeps only repositories whose path contains it.
per_doc caps the passages taken from one document (default 2; raise it for more
context from the same document, 0 for no limit)."""


def _arguments(request: type[R], **given: Any) -> R:
    """A tool's arguments as its request, or a ToolError naming the first one that is wrong."""
    try:
        return request(**given)
    except ValidationError as e:
        first = e.errors()[0]
        raise ToolError(f"invalid arguments: {first['loc'][0]}: {first['msg']}") from None


def build_mcp(search: SearchFn, ask: AskFn | None = None, reader: Principal = FULL_ACCESS) -> MCPServer:
    """The MCP server over `search` and `ask`, reading as `reader` (full access by default: a local tool,
    as the CLI; a proxy to a hosted API reads as its token allows, whatever `reader` is)."""
    server = MCPServer(name="docforge", version=__version__, instructions=INSTRUCTIONS)
    if ask is not None:
        _add_ask_tool(server, ask, reader)

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
        req = _arguments(
            SearchRequest,
            query=query,
            user_name=user_name,
            team_name=team_name,
            area_name=area_name,
            limit=limit,
            filter_repo=filter_repo,
            per_doc=per_doc,
        )
        log_request("mcp", req, None if reader.full_access else reader.name)
        try:
            hits = search(req, reader)
        except DocforgeError as e:
            raise ToolError(str(e)) from None
        return SearchResponse(query=query, hits=[SearchHit(**h) for h in hits])

    return server


ASK_DESCRIPTION = """Answer a question from the documentation: every claim cites numbered evidence and is
checked against it.

Returns answer: one line a claim, each marked, with the legend ("Marks: ...") as its
last line: ✓ quoted word for word from the cited evidence; ≈ reworded, supported by
the evidence (p: the probability that it is); ✗ not supported (do not rely on it).
claims: text, pointers, support (quoted | supported | unsupported), probability,
violations. citations: pointer, title, section, url, score. audit_mode: STRICT (all
quoted), HYBRID (all supported, some reworded), UNGROUNDED (do not rely on it).
Whether it answers the question is said apart: addresses_question, addresses_reason.
Not sure it answers (addresses_question false, candidates not empty): answer opens
"Not sure this answers it", then each candidate passage is a numbered block headed
by where it is and its pointer, best first; candidates: citation (its pointer),
title, section, url, text, confidence. Read a passage's section at its citation's
url, or ask in other words. A quoted line (✓) is not an answer to the question.
Also confidence, abstained (true: not found in the documentation), answer_id.
user_name, team_name, area_name identify who asks; filters is a filter expression."""


def _add_ask_tool(server: MCPServer, ask: AskFn, reader: Principal) -> None:
    @server.tool(description=ASK_DESCRIPTION)
    def ask_documentation(
        question: str,
        user_name: str,
        team_name: str,
        area_name: str | None = None,
        filters: dict[str, Any] | None = None,
    ) -> Answer:
        who = {"user_name": user_name, "team_name": team_name, "area_name": area_name}
        req = _arguments(AskRequest, question=question, filters=filters, **who)
        log_ask("mcp", req, None if reader.full_access else reader.name)
        try:
            return ask(req, reader)
        except DocforgeError as e:
            raise ToolError(str(e)) from None


class RemoteSearch(RemoteRoute):
    """SearchFn that asks a hosted docforge API (`POST {url}/search`) with the caller's own bearer token:
    the API returns what that token may read (a local `reader` adds nothing to it)."""

    def __init__(self, url: str, token: str | None, timeout_s: float = 60.0):
        super().__init__(url, "/search", token, timeout_s)

    def __call__(self, req: SearchRequest, reader: Principal = FULL_ACCESS) -> list[dict]:
        return self.post(req.model_dump(exclude_none=True))["hits"]


def run_stdio(server: MCPServer) -> None:
    """Serve `server` over stdin/stdout, replying to every malformed line (see module doc)."""
    anyio.run(_serve_stdio, server)


async def _serve_stdio(server: MCPServer) -> None:
    lowlevel = server._lowlevel_server  # noqa: SLF001 (MCPServer.run_stdio_async, with a screen in between)
    async with stdio_server() as (incoming, outgoing):
        send, screened = anyio.create_memory_object_stream[SessionMessage | Exception](0)

        async def screen() -> None:
            async with send:
                async for item in incoming:
                    refusal = _refusal(item)
                    if refusal is None:
                        await send.send(item)
                    elif refusal.id is not None or isinstance(item, Exception):
                        await outgoing.send(SessionMessage(refusal))

        async with anyio.create_task_group() as tg:
            tg.start_soon(screen)
            await lowlevel.run(screened, outgoing, lowlevel.create_initialization_options())
            tg.cancel_scope.cancel()


def _refusal(item: SessionMessage | Exception) -> types.JSONRPCError | None:
    """The error reply for a line the server cannot take; None for a message to serve."""
    if isinstance(item, SessionMessage):
        msg = item.message
        params = getattr(msg, "params", None)
        text = json.dumps(params, ensure_ascii=False) if params else ""  # pydantic read it: under 200 deep
        if params and first_surrogate(text) is not None:
            return _error(getattr(msg, "id", None), types.INVALID_PARAMS, _NOT_UNICODE)
        try:
            json_strict.check(text)
        except json.JSONDecodeError as e:
            return _error(getattr(msg, "id", None), types.INVALID_PARAMS, f"Invalid params: {e.msg}")
        return None
    errors = item.errors() if isinstance(item, ValidationError) else []
    raw = errors[0].get("input") if errors else None
    try:  # Python's parser takes what pydantic's refuses ("\ud800"): enough to find the id to answer
        obj = json_strict.loads(raw) if isinstance(raw, str) else raw  # bounded: a deep line is no crash
    except ValueError as e:
        return _error(None, types.PARSE_ERROR, f"Parse error: the line is not JSON ({getattr(e, 'msg', e)})")
    rid = obj.get("id") if isinstance(obj, dict) else None
    if isinstance(rid, bool) or not isinstance(rid, int | str) or first_surrogate(str(rid)) is not None:
        rid = None
    if first_surrogate(json.dumps(obj, ensure_ascii=False)) is not None:
        return _error(rid, types.INVALID_PARAMS, _NOT_UNICODE)
    return _error(rid, types.INVALID_REQUEST, "Invalid request: not a JSON-RPC 2.0 request or notification")


_NOT_UNICODE = "Invalid params: text that is not valid Unicode (a lone surrogate, e.g. from a \\ud800 escape)"


def _error(rid: Any, code: int, message: str) -> types.JSONRPCError:
    return types.JSONRPCError(jsonrpc="2.0", id=rid, error=types.ErrorData(code=code, message=message))

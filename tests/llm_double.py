"""A scripted OpenAI-compatible chat server on 127.0.0.1: a real HTTP server, so the real client is exercised.

    with LLMDouble() as llm:               # llm.base_url → "http://127.0.0.1:PORT/v1"
        llm.failures = [429, 503]          # the next requests get these statuses first
        llm.answer = lambda blocks: ...    # the respond step's reply, from the evidence blocks it is shown
        llm.decisions = ["INSUFFICIENT: better query", "SUFFICIENT: 0.8"]
        ...
        llm.requests                       # every request: {"path", "body", "authorization"}

It tells the three prompts apart by their instructions, as a real model would read them.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass(frozen=True)
class Block:
    pointer: str
    header: str  # "title › section"
    text: str


def parse_blocks(prompt: str) -> list[Block]:
    """The evidence blocks of a respond prompt: a line `[E1] title › section`, the text below it."""
    body = prompt.split("Evidence:", 1)[-1].rsplit("\n\nQuestion:", 1)[0]
    parts = re.split(r"(?m)^\[(E\d+)\] (.*)$", body)
    return [Block(parts[i], parts[i + 1].strip(), parts[i + 2].strip()) for i in range(1, len(parts) - 2, 3)]


def first_sentence(text: str) -> str:
    for line in text.splitlines():
        line = line.strip()
        if len(line.split()) >= 5 and not line.startswith(("#", "|", "```", "-")):
            return re.split(r"(?<=[.!?])\s+", line)[0]
    return text.split("\n")[0]


class LLMDouble:
    def __init__(self):
        self.requests: list[dict] = []
        self.failures: list[int | str] = []  # statuses (or "garbage", "drop") served before the scripted reply
        self.intent = "factual"
        self.decisions: list[str] = []  # reason replies, in order; then "SUFFICIENT: 0.9"
        self.answer: Callable[[list[Block]], str] = lambda blocks: f"{first_sentence(blocks[0].text)} [E1]"
        self.usage = {"prompt_tokens": 100, "completion_tokens": 20}
        self._lock = threading.Lock()
        double = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def do_POST(self):
                raw = self.rfile.read(int(self.headers.get("content-length") or 0))
                body = json.loads(raw or b"{}")
                with double._lock:
                    double.requests.append(
                        {"path": self.path, "body": body, "authorization": self.headers.get("authorization")}
                    )
                    failure = double.failures.pop(0) if double.failures else None
                if failure == "garbage":
                    return self._send(200, b"<html>definitely not json</html>", "text/html")
                if failure == "drop":
                    self.close_connection = True
                    return self.wfile.flush()
                if isinstance(failure, int):
                    return self._send(
                        failure,
                        json.dumps({"error": {"message": "scripted"}}).encode(),
                        headers={"Retry-After": "0"} if failure == 429 else {},
                    )
                if not self.path.endswith("/chat/completions"):
                    return self._send(404, b'{"error": "not found"}')
                content = double.reply(body["messages"])
                out = {
                    "id": "chatcmpl-1",
                    "object": "chat.completion",
                    "model": body.get("model"),
                    "choices": [
                        {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
                    ],
                    "usage": double.usage,
                }
                self._send(200, json.dumps(out).encode())

            def _send(self, status: int, payload: bytes, ctype: str = "application/json", headers=None):
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(payload)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(payload)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def reply(self, messages: list[dict]) -> str:
        system, user = messages[0]["content"], messages[-1]["content"]
        if "factual, conceptual" in system:
            return self.intent
        if "INSUFFICIENT" in system:
            with self._lock:
                return self.decisions.pop(0) if self.decisions else "SUFFICIENT: 0.9"
        return self.answer(parse_blocks(user))

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self) -> LLMDouble:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()

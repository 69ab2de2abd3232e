"""A client for any OpenAI-compatible `POST {base_url}/chat/completions` (vLLM, Ollama, llama.cpp, OpenAI).

One `pipeline.http.Service`: a pooled httpx client (thread-safe), the key as bearer auth (only in the
Authorization header, never logged), 429 / 5xx / connection errors retried `max_retries` times,
Retry-After (seconds or a date) honoured up to `max_backoff_s`. Errors name the URL, never the key.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pipeline.config import LLMConfig
from pipeline.errors import ConfigError, LLMError

if TYPE_CHECKING:  # httpx loads with the first client: an extractive `docforge ask` never imports it
    import httpx

    from pipeline import http


@dataclass(frozen=True)
class Completion:
    text: str
    input_tokens: int
    output_tokens: int
    ms: float  # wall time of the call, retries and waits included
    attempts: int


class ChatClient:
    """Chat completions from one configured server and model."""

    def __init__(
        self, cfg: LLMConfig, *, transport: httpx.BaseTransport | None = None, clock: http.Clock | None = None
    ):
        from pipeline import http

        if not cfg.base_url or not cfg.model:
            raise ConfigError("llm: set both base_url and model (e.g. DOCFORGE_LLM_BASE_URL, DOCFORGE_LLM_MODEL)")
        self.cfg = cfg
        base = cfg.base_url.rstrip("/")
        self.url = base if base.endswith("/chat/completions") else base + "/chat/completions"
        self._service = http.Service(
            "the LLM server",
            LLMError,
            timeout_s=cfg.timeout_s,
            auth=http.bearer(cfg.api_key.get_secret_value() if cfg.api_key else None),
            retry=http.RetryPolicy(
                attempts=cfg.max_retries + 1, max_wait_s=cfg.max_backoff_s, clock=clock or http.SystemClock()
            ),
            setting="DOCFORGE_LLM_BASE_URL",
            transport=transport,
        )

    @property
    def profile(self) -> dict:
        """What about the model changes its answers (part of the cache key); never the key."""
        return {
            "base_url": self.cfg.base_url,
            "model": self.cfg.model,
            "temperature": self.cfg.temperature,
            "max_tokens": self.cfg.max_tokens,
        }

    def close(self) -> None:
        self._service.close()

    def chat(self, messages: list[dict[str, str]], *, max_tokens: int | None = None) -> Completion:
        body = {
            "model": self.cfg.model,
            "messages": messages,
            "temperature": self.cfg.temperature,
            "max_tokens": max_tokens or self.cfg.max_tokens,
            "stream": False,
        }
        t0 = time.perf_counter()
        attempts = 0

        def attempt() -> httpx.Response:
            nonlocal attempts
            attempts += 1
            return self._service.http.post(self.url, json=body)

        where = self._service.where(self.url)
        resp = self._service.check(self._service.call(attempt, lambda: where), where)
        return self._completion(resp, t0, attempts)

    def _completion(self, resp: httpx.Response, t0: float, attempt: int) -> Completion:
        from pipeline import http

        try:
            data = resp.json()
            text = data["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError):
            raise LLMError(
                f"the LLM server at {self.url} answered something that is not a chat completion: {http.excerpt(resp)}"
            ) from None
        if not isinstance(text, str):
            raise LLMError(f"the LLM server at {self.url} answered a completion without text content")
        usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
        return Completion(
            text,
            _int(usage.get("prompt_tokens")),
            _int(usage.get("completion_tokens")),
            (time.perf_counter() - t0) * 1000,
            attempt,
        )


def _int(v) -> int:
    return v if isinstance(v, int) and v >= 0 else 0

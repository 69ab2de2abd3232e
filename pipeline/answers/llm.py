"""A client for any OpenAI-compatible `POST {base_url}/chat/completions` (vLLM, Ollama, llama.cpp, OpenAI).

httpx, one pooled client, thread-safe. 429 and 5xx (and connection errors) are
retried with capped exponential backoff, honouring Retry-After up to the cap.
Errors name the URL, never the key; the key travels only in the Authorization
header and is never logged.
"""

from __future__ import annotations

import logging
import random
import time
from dataclasses import dataclass

import httpx

from pipeline.config import LLMConfig
from pipeline.errors import ConfigError, LLMError
from pipeline.redact import redact, register

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Completion:
    text: str
    input_tokens: int
    output_tokens: int
    ms: float  # wall time of the call, retries and waits included
    attempts: int


class ChatClient:
    """Chat completions from one configured server and model."""

    def __init__(self, cfg: LLMConfig, *, transport: httpx.BaseTransport | None = None, sleep=time.sleep):
        if not cfg.base_url or not cfg.model:
            raise ConfigError("llm: set both base_url and model (e.g. DOCFORGE_LLM_BASE_URL, DOCFORGE_LLM_MODEL)")
        self.cfg = cfg
        base = cfg.base_url.rstrip("/")
        self.url = base if base.endswith("/chat/completions") else base + "/chat/completions"
        headers = {"Content-Type": "application/json"}
        if cfg.api_key:
            register(cfg.api_key.get_secret_value())  # an error quoting it back never shows it
            headers["Authorization"] = f"Bearer {cfg.api_key.get_secret_value()}"
        self._client = httpx.Client(headers=headers, timeout=cfg.timeout_s, transport=transport, follow_redirects=False)
        self._sleep = sleep

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
        self._client.close()

    def chat(self, messages: list[dict[str, str]], *, max_tokens: int | None = None) -> Completion:
        body = {
            "model": self.cfg.model,
            "messages": messages,
            "temperature": self.cfg.temperature,
            "max_tokens": max_tokens or self.cfg.max_tokens,
            "stream": False,
        }
        t0 = time.perf_counter()
        attempt = 0
        while True:
            attempt += 1
            retry_after = None
            try:
                resp = self._client.post(self.url, json=body)
            except httpx.TimeoutException:
                problem = f"timed out after {self.cfg.timeout_s:g} s"
            except httpx.HTTPError as e:
                problem = f"is unreachable ({type(e).__name__})"
            else:
                if resp.status_code == 200:
                    return self._completion(resp, t0, attempt)
                if resp.status_code != 429 and resp.status_code < 500:
                    raise LLMError(
                        f"the LLM server at {self.url} refused the request: HTTP {resp.status_code} "
                        f"{_excerpt(resp.text)}"
                    )
                problem = f"answered HTTP {resp.status_code}"
                retry_after = _retry_after(resp.headers.get("retry-after"))
            if attempt > self.cfg.max_retries:
                raise LLMError(f"the LLM server at {self.url} {problem}; gave up after {attempt} attempt(s)")
            wait = min(
                self.cfg.max_backoff_s,
                retry_after if retry_after is not None else 0.25 * 2 ** (attempt - 1) * (1 + random.random() / 4),
            )
            log.warning(
                "LLM server at %s %s; retry %d/%d in %.2f s", self.url, problem, attempt, self.cfg.max_retries, wait
            )
            self._sleep(wait)

    def _completion(self, resp: httpx.Response, t0: float, attempt: int) -> Completion:
        try:
            data = resp.json()
            text = data["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError):
            raise LLMError(
                f"the LLM server at {self.url} answered something that is not a chat completion: {_excerpt(resp.text)}"
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


def _retry_after(value: str | None) -> float | None:
    try:
        return max(0.0, float(value)) if value else None
    except ValueError:
        return None  # an HTTP date: use our own backoff


def _int(v) -> int:
    return v if isinstance(v, int) and v >= 0 else 0


def _excerpt(text: str, n: int = 200) -> str:
    text = redact(" ".join(text.split()))  # before the cut: a secret cut in two would not match
    return repr(text[:n] + ("…" if len(text) > n else ""))

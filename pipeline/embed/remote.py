"""The embedder service's client: vectors over HTTP, for processes that load no model.

With `EMBEDDER_URL` set (`embedding.url`), search embeds its queries through
`docforge serve --embedder` (and ingest its chunks, with `remote_ingest`), so
an API replica never imports torch, transformers or onnxruntime. The protocol:

    GET  /info       {"model", "dimension", "max_seq_length", "document_window", "prompts", "limits", ...}
    GET  /tokenizer  the model's tokenizer.json (ingest chunks with the service's own tokenizer)
    POST /embed      {"texts": [...], "kind": "query" | "document", "encoding": "base64" | "float"}
                     → {"model", "dimension", "count", "base64": <count × dimension little-endian float32>}
                       (or "vectors": [[...]] for "float")

Every call but /health carries `Authorization: Bearer $EMBEDDER_TOKEN`. Calls go
through `pipeline.http`: connection errors, 429 and 5xx are retried (`max_retries`,
backoff, Retry-After honoured up to `max_wait_s`); every attempt is bounded by
`timeout_s`, so a dead service is a clear EmbedError within a known time, never a
hang. `connect` checks the service's model against the one the store's vectors came from.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from functools import cached_property
from typing import TYPE_CHECKING, Any

from pipeline.config import EmbeddingConfig
from pipeline.errors import EmbedError

if TYPE_CHECKING:  # httpx loads when a client is made: a process with a local model never imports it
    import httpx
    import numpy as np
    from tokenizers import Tokenizer

    from pipeline import http

MAX_WAIT_S = 4.0  # one wait before a retry at most (Retry-After included)


class RemoteEmbedder:
    """One embedder service (`docforge serve --embedder`): the `TextEmbedder` an API replica uses."""

    def __init__(
        self,
        url: str,
        token: str | None = None,
        *,
        timeout_s: float = 30.0,
        max_retries: int = 2,
        max_wait_s: float = MAX_WAIT_S,
        clock: http.Clock | None = None,
    ):
        from pipeline import http

        self.url = url.rstrip("/")
        self.service = http.Service(
            "the embedder service",
            EmbedError,
            timeout_s=timeout_s,
            auth=http.bearer(token),
            retry=http.RetryPolicy(attempts=max_retries + 1, max_wait_s=max_wait_s, clock=clock or http.SystemClock()),
            hints={401: "refused the token sent: set EMBEDDER_TOKEN to the service's token"},
            setting="EMBEDDER_URL",
        )

    def __repr__(self) -> str:
        return f"RemoteEmbedder({self.url!r})"

    # --- what the service serves ---------------------------------------------------------------------

    @cached_property
    def info(self) -> dict[str, Any]:
        data = self.service.json(self._call("GET", "/info"), self.service.where(self.url + "/info"))
        if not isinstance(data, dict) or not {"model", "dimension", "max_seq_length"} <= data.keys():
            raise EmbedError(
                f"the embedder service at {self.url} answered /info without model, dimension "
                "and max_seq_length: is it a docforge embedder service?"
            )
        return data

    @property
    def model_id(self) -> str:
        return str(self.info["model"])

    @property
    def name(self) -> str:
        """The model as the service was configured with it (a hub id or the service's local path)."""
        return str(self.info.get("name") or self.model_id)

    @property
    def dimension(self) -> int:
        return int(self.info["dimension"])

    @property
    def max_seq_length(self) -> int:
        return int(self.info["max_seq_length"])

    @property
    def document_window(self) -> int:
        return int(self.info.get("document_window") or self.max_seq_length)

    @property
    def prompts(self) -> dict[str, str]:
        return dict(self.info.get("prompts") or {})

    @cached_property
    def tokenizer(self) -> Tokenizer:
        """The service's tokenizer (ingest chunks by the model's own token counts)."""
        from tokenizers import Tokenizer

        return Tokenizer.from_str(self._call("GET", "/tokenizer").text)

    @property
    def _limits(self) -> tuple[int, int]:
        limits = self.info.get("limits") or {}
        return int(limits.get("max_items") or 64), int(limits.get("max_item_chars") or 100_000)

    # --- vectors -------------------------------------------------------------------------------------

    def encode(self, texts: Sequence[str], kind: str = "document") -> np.ndarray:
        """Unit vectors for texts, in order: requests of at most the service's `max_items` texts."""
        import numpy as np

        max_items, max_chars = self._limits
        for t in texts:
            if len(t) > max_chars:
                raise EmbedError(
                    f"a text of {len(t)} characters is over the embedder service's limit "
                    f"({max_chars}, DOCFORGE_SERVICE_MAX_ITEM_CHARS on the service)"
                )
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        for start in range(0, len(texts), max_items):
            batch = list(texts[start : start + max_items])
            out[start : start + len(batch)] = self._embed(batch, kind)
        return out

    def _embed(self, texts: list[str], kind: str) -> np.ndarray:
        import numpy as np

        resp = self._call("POST", "/embed", {"texts": texts, "kind": kind, "encoding": "base64"})
        data = self.service.json(resp, self.service.where(resp.url))
        if data.get("model") != self.model_id or int(data.get("dimension", -1)) != self.dimension:
            raise EmbedError(
                f"the embedder service at {self.url} now serves {data.get('model')!r} "
                f"(dimension {data.get('dimension')}), not {self.model_id!r} (dimension "
                f"{self.dimension}): it was restarted with another model"
            )
        vecs = np.frombuffer(base64.b64decode(data["base64"]), dtype="<f4")
        if vecs.size != len(texts) * self.dimension:
            raise EmbedError(
                f"the embedder service at {self.url} sent {vecs.size} numbers for "
                f"{len(texts)} texts of dimension {self.dimension}"
            )
        return vecs.reshape(len(texts), self.dimension)

    def _call(self, method: str, path: str, body: dict | None = None) -> httpx.Response:
        """One request under the retry policy; EmbedError saying why when it fails."""
        return self.service.request(method, self.url + path, json=body)

    def close(self) -> None:
        self.service.close()


def connect(cfg: EmbeddingConfig, model: str | None = None, dimension: int | None = None) -> RemoteEmbedder:
    """The service of `cfg.url` (comma-separated: one per model) that serves `model` at `dimension`;
    without a model, the first one. EmbedError naming both sides when none does."""
    if not cfg.urls:
        raise EmbedError("no embedder service configured: set EMBEDDER_URL")
    token = cfg.token.get_secret_value() if cfg.token else None
    served = []
    for url in cfg.urls:
        remote = RemoteEmbedder(url, token, timeout_s=cfg.timeout_s, max_retries=cfg.max_retries)
        try:
            if model is None or (remote.model_id == model and dimension in (None, remote.dimension)):
                return remote
            served.append(f"{remote.model_id!r} (dimension {remote.dimension}) at {url}")
        except EmbedError as e:
            if len(cfg.urls) == 1:
                raise
            served.append(f"nothing at {url} ({e})")  # another of the list may serve the model
        remote.close()
    raise EmbedError(
        f"the store's vectors come from {model!r} (dimension {dimension}), but the embedder "
        f"service serves {', '.join(served)}: run a service with that model and add its URL to "
        "EMBEDDER_URL (comma-separated), or reindex the store to the service's model "
        "(`docforge reindex --model ...`)"
    )

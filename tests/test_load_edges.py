"""The last hostile inputs of issue 25, each met by the real CLI or a real server on 127.0.0.1:
httpcore's debug log of an echoed Authorization header, a sources.yml nested past any sense,
`docforge verify` over a file of broken lines, and two ingests of one source at once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from query_corpus import ServerThread

from pipeline.redact import MASK

DOCFORGE = str(Path(sys.executable).parent / "docforge")
TOKEN = "edge-suite-embedder-token-5f1c"


def run(args: list[str], env: dict | None = None, stdin: bytes | None = None, timeout: float = 300):
    return subprocess.run(
        [DOCFORGE, *args], env={**os.environ, **(env or {})}, input=stdin, capture_output=True, timeout=timeout
    )


def test_httpcore_debug_log_never_shows_an_echoed_token(database_url, write_config):
    """An embedder service that answers 401 quoting the caller's Authorization header back: at -vv,
    httpcore logs the response headers; the token is masked there as everywhere."""
    app = FastAPI()

    @app.get("/info")
    def info(request: Request) -> JSONResponse:
        echoed = request.headers.get("authorization", "")
        return JSONResponse({"detail": f"bad token {echoed}"}, status_code=401, headers={"Authorization": echoed})

    config = write_config([])
    with ServerThread(app) as srv:
        res = run(  # the API warms its query embedder before it listens: through the service
            ["-vv", "serve", "--api", "--port", "0", "-c", str(config)],
            {
                "EMBEDDER_URL": srv.url,
                "EMBEDDER_TOKEN": TOKEN,
                "DATABASE_URL": database_url,
                "DOCFORGE_API_TOKENS": "api-token-for-the-edge-suite",
            },
        )
    err = res.stderr.decode(errors="replace")
    assert "httpcore" in err and "receive_response_headers" in err, err[-3000:]  # the debug log is there
    assert TOKEN not in err and f"Bearer {MASK}" in err
    assert res.returncode == 1 and "Traceback" not in err

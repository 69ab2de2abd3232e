"""The hosted shape: `docforge serve --api` with EMBEDDER_URL, in a process of its own, loads no model.

The API process runs the real CLI path (`docforge.cli.main(["serve", "--api", ...])`) in its main
thread; a thread beside it waits for the server, searches through it, and reports which model
libraries the process imported. bench/hosted.py measures the same process's RSS and start time.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench.hosted import HEAVY, free_port
from docforge.servers import embedder as embedder_service
from pipeline.config import ServiceConfig
from pipeline.query import Searcher
from tests.helpers import ServerThread
from tests.test_services import TOKEN

API_TOKEN = "api-t0ken"
QUERY = "how do I undo a bad release?"
PROBE = """
import json, os, sys, threading, time, httpx
from docforge.cli import main

PORT, QUERY, HEAVY = int(sys.argv[1]), sys.argv[2], sys.argv[3].split(",")

def probe():
    url = f"http://127.0.0.1:{PORT}"
    for _ in range(3000):
        try:
            if httpx.get(url + "/health", timeout=1).status_code == 200:
                break
        except httpx.TransportError:
            time.sleep(0.05)
    body = {"query": QUERY, "user_name": "ada", "team_name": "payments", "limit": 5, "mode": "dense"}
    r = httpx.post(url + "/search", json=body, headers={"Authorization": "Bearer " + os.environ["DOCFORGE_API_TOKENS"]},
                   timeout=60)
    out = {"status": r.status_code, "hits": [h["doc_key"] + "#" + str(h["chunk_index"]) for h in r.json()["hits"]],
           "heavy": sorted(m for m in HEAVY if m in sys.modules)}
    print("PROBE " + json.dumps(out), flush=True)
    os._exit(0)

threading.Thread(target=probe, daemon=True).start()
main(["serve", "--api", "--port", str(PORT), "-c", os.environ["DOCFORGE_CONFIG"]])
"""


@pytest.fixture(scope="module")
def service(embedder):
    with ServerThread(embedder_service.create_app(embedder, TOKEN, ServiceConfig())) as srv:
        yield srv


def run_api(
    corpus, env: dict, python: str = sys.executable, heavy: tuple[str, ...] = HEAVY, cwd: Path | None = None
) -> dict:
    """The probe in `python`'s process (this venv's, or an install's), with `env` on top, run in `cwd`."""
    env = {
        **{k: v for k, v in os.environ.items() if k not in ("EMBEDDER_URL", "EMBEDDER_TOKEN")},
        "DATABASE_URL": corpus.url,
        "DOCFORGE_CONFIG": str(corpus.config),
        "DOCFORGE_API_TOKENS": API_TOKEN,
        **env,
    }
    res = subprocess.run(
        [python, "-c", PROBE, str(free_port()), QUERY, ",".join(heavy)],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )
    lines = [ln for ln in res.stdout.splitlines() if ln.startswith("PROBE ")]
    assert lines, res.stderr[-3000:]
    return json.loads(lines[0].removeprefix("PROBE "))


def test_the_api_with_embedder_url_imports_no_model_library(service, corpus, embedder):
    got = run_api(corpus, {"EMBEDDER_URL": service.url, "EMBEDDER_TOKEN": TOKEN})
    assert got["status"] == 200 and got["heavy"] == []
    with Searcher(corpus.settings, url=corpus.url, embedder=embedder, reranker=None) as s:
        want = [f"{h.doc_key}#{h.chunk_index}" for h in s.search(QUERY, limit=5, mode="dense")]
    assert got["hits"] == want  # the same answer as in-process search


def test_without_embedder_url_the_api_embeds_in_process(corpus):
    got = run_api(corpus, {})  # the control: the probe does see a model library when one is loaded
    assert got["status"] == 200 and got["heavy"] != []


def test_a_dead_embedder_service_fails_the_api_start_clearly(corpus, tmp_path):
    env = {
        **os.environ,
        "DATABASE_URL": corpus.url,
        "DOCFORGE_API_TOKENS": API_TOKEN,
        "EMBEDDER_URL": f"http://127.0.0.1:{free_port()}",
        "EMBEDDER_TOKEN": TOKEN,
    }
    res = subprocess.run(
        [
            str(Path(sys.executable).parent / "docforge"),
            "serve",
            "--api",
            "--port",
            str(free_port()),
            "-c",
            str(corpus.config),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 1 and "embedder service" in res.stderr and "unreachable" in res.stderr


def test_the_embedder_cli_serves_its_model(tmp_path):
    """`docforge serve --embedder` as a real process: the model loads once, /info tells its shape."""
    import httpx

    port = free_port()
    env = {**os.environ, "HOME": str(tmp_path)}
    env.pop("EMBEDDER_TOKEN", None)
    proc = subprocess.Popen(
        [
            str(Path(sys.executable).parent / "docforge"),
            "serve",
            "--embedder",
            "--port",
            str(port),
            "--dimensions",
            "128",
            "--insecure-no-token",
            "-c",
            str(tmp_path / "none.yml"),
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        from bench.hosted import wait_health

        wait_health(f"http://127.0.0.1:{port}", proc)
        info = httpx.get(f"http://127.0.0.1:{port}/info", timeout=10).json()
        got = httpx.post(f"http://127.0.0.1:{port}/embed", json={"texts": ["a", "b"], "kind": "query"}, timeout=30)
    finally:
        proc.terminate()
        proc.wait(30)
    assert (info["model"], info["dimension"], info["native_dimension"]) == (
        "sentence-transformers/all-MiniLM-L6-v2",
        128,
        384,
    )
    assert got.status_code == 200 and len(got.json()["vectors"][0]) == 128

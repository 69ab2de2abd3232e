"""The hosted shape, measured: an API replica that embeds its queries through the embedder service.

    python bench/hosted.py                 # embedder service + API (EMBEDDER_URL), real processes
    python bench/hosted.py --compare       # and the API with the model in process, for comparison
    python bench/hosted.py --json
    python bench/hosted.py --smoke         # a store of one page, three searches

Builds a small real store first (this repository's docs, chunked and embedded by
the packaged all-MiniLM-L6-v2 into an embedded Postgres under a temp folder),
then starts, on 127.0.0.1, `docforge serve --embedder` and, once it answers,
`docforge serve --api` with EMBEDDER_URL set. Reports for the API process:

- time from its start (the exec) to its first answered POST /search (the
  process imports, connects, warms the query path and serves), and the CPU
  time it used until then (wall time on a machine others load is mostly
  waiting for a core; CPU time is what an idle core would take);
- peak RSS (VmHWM in /proc) after that search and 50 more, distinct queries;
- whether torch, transformers, sentence-transformers or onnxruntime got into it
  (shared libraries mapped; pure-Python packages cannot load without torch's).

Targets (issue 15): at most 250 MB and 3 s on a small CPU machine.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
DOCFORGE = str(Path(sys.executable).parent / "docforge")
TOKEN, API_TOKEN = "bench-embedder-token", "bench-api-token"
HEAVY = ("torch", "transformers", "sentence_transformers", "onnxruntime")
QUERIES = [
    "how do I deploy docforge?",
    "what does the embedder service do?",
    "keyword search BM25",
    "incremental ingest ledger",
    "rotate the API token",
    "how are chunks sized?",
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


SMOKE_DOCS = ("docs/architecture.md",)  # a smoke run's store: the README and this one page


def build_store(work: Path, smoke: bool = False) -> Path:
    """A git repository of this project's docs, indexed: returns its sources.yml."""
    from pipeline.config import load_settings
    from pipeline.ingest import IngestContext, ingest_source

    repo = work / "docs-repo"
    if smoke:
        for name in SMOKE_DOCS:
            (repo / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(ROOT / name, repo / name)
    else:
        shutil.copytree(ROOT / "docs", repo / "docs", ignore=shutil.ignore_patterns("*.py"))
    shutil.copy(ROOT / "README.md", repo / "README.md")
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "b",
        "GIT_AUTHOR_EMAIL": "b@example.com",
        "GIT_COMMITTER_NAME": "b",
        "GIT_COMMITTER_EMAIL": "b@example.com",
    }
    for cmd in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "docs"]):
        subprocess.run(["git", "-C", str(repo), *cmd], check=True, env=env)
    config = work / "sources.yml"
    config.write_text(f"sources:\n  - name: docs\n    type: git\n    repo: {repo}\n")
    stats = ingest_source(IngestContext(load_settings(config)), "docs")
    print(f"[hosted] store: {stats.chunks_indexed} chunks of {stats.files_added} files", file=sys.stderr)
    return config


def wait_health(url: str, proc: subprocess.Popen, timeout_s: float = 300) -> None:
    import httpx

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{url}: the process exited with {proc.returncode}: {stderr_tail(proc)}")
        try:
            if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                return
        except httpx.TransportError:  # not listening yet
            pass
        time.sleep(0.05)
    raise RuntimeError(f"{url} did not start in {timeout_s} s")


def start(args: list[str], env: dict) -> subprocess.Popen:
    """A docforge process whose stderr goes to a temporary file: a pipe nobody reads fills and stalls it."""
    log = tempfile.TemporaryFile()  # noqa: SIM115 (lives as long as the process; closed with it)
    proc = subprocess.Popen([DOCFORGE, *args], env=env, stdout=subprocess.DEVNULL, stderr=log)
    proc.stderr_log = log  # type: ignore[attr-defined]
    return proc


def stderr_tail(proc: subprocess.Popen, n: int = 2000) -> str:
    log = proc.stderr_log  # type: ignore[attr-defined]
    log.seek(0)
    return log.read().decode(errors="replace")[-n:]


def status_kb(pid: int, key: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    raise KeyError(key)


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (/proc/PID/stat fields 14 and 15)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def heavy_libraries(pid: int) -> list[str]:
    """Which of HEAVY have a shared library mapped into the process."""
    maps = Path(f"/proc/{pid}/maps").read_text()
    marks = {
        "torch": "libtorch",
        "transformers": "libtorch",
        "sentence_transformers": "libtorch",
        "onnxruntime": "onnxruntime",
    }
    return sorted({m for m, lib in marks.items() if lib in maps})


def measure_api(config: Path, env: dict, searches: int = 50) -> dict:
    """Start `docforge serve --api`, time it to the first answered search, then read its peak RSS."""
    import httpx

    port = free_port()
    url = f"http://127.0.0.1:{port}"
    body = {"query": QUERIES[0], "user_name": "bench", "team_name": "bench", "limit": 5}
    headers = {"Authorization": f"Bearer {API_TOKEN}"}
    t0 = time.monotonic()
    api = start(["serve", "--api", "--port", str(port), "-c", str(config)], env)
    try:
        while True:
            if api.poll() is not None:
                raise RuntimeError(f"the API exited with {api.returncode}: {stderr_tail(api)}")
            try:
                resp = httpx.post(f"{url}/search", json=body, headers=headers, timeout=30)
                if resp.status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.02)
        first_s = time.monotonic() - t0
        cpu_s = cpu_seconds(api.pid)
        hits = len(resp.json()["hits"])
        for i in range(searches):
            q = f"{QUERIES[i % len(QUERIES)]} ({i})"
            httpx.post(f"{url}/search", json={**body, "query": q}, headers=headers, timeout=30).raise_for_status()
        return {
            "first_search_s": round(first_s, 2),
            "cpu_to_first_search_s": round(cpu_s, 2),
            "load_average": round(os.getloadavg()[0], 1),
            "peak_rss_mb": round(status_kb(api.pid, "VmHWM") / 1024, 1),
            "rss_mb": round(status_kb(api.pid, "VmRSS") / 1024, 1),
            "hits": hits,
            "heavy_libraries": heavy_libraries(api.pid),
        }
    finally:
        api.terminate()
        api.wait(30)


def measure(config: Path, env: dict, compare: bool, searches: int = 50) -> dict:
    """The API with EMBEDDER_URL (and, with `compare`, with its model in process)."""
    port = free_port()
    service = start(["serve", "--embedder", "--port", str(port), "-c", str(config)], env)
    try:
        wait_health(f"http://127.0.0.1:{port}", service)
        out = {"hosted": measure_api(config, {**env, "EMBEDDER_URL": f"http://127.0.0.1:{port}"}, searches)}
        out["embedder_service_peak_rss_mb"] = round(status_kb(service.pid, "VmHWM") / 1024, 1)
    finally:
        service.terminate()
        service.wait(30)
    if compare:
        out["in_process"] = measure_api(config, env, searches)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--compare", action="store_true", help="also measure the API with the model in process")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--smoke", action="store_true", help="the whole path on a tiny input, in seconds (bench/smoke.py)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="docforge-hosted-") as tmp:
        work = Path(tmp)
        env = {
            **os.environ,
            "DOCFORGE_HOME": str(work / "home"),
            "EMBEDDER_TOKEN": TOKEN,
            "DOCFORGE_API_TOKENS": API_TOKEN,
            "TOKENIZERS_PARALLELISM": "false",
        }
        env.pop("DATABASE_URL", None)
        os.environ.update({k: env[k] for k in ("DOCFORGE_HOME", "TOKENIZERS_PARALLELISM")})
        config = build_store(work, smoke=args.smoke)
        try:
            out = measure(config, env, args.compare, searches=3 if args.smoke else 50)
        finally:
            from pipeline.store.db import stop_embedded

            stop_embedded(work / "home")  # the store's server: not left running past its folder
    out["targets"] = {"peak_rss_mb": 250, "first_search_s": 3.0}
    if args.json:
        print(json.dumps(out))
        return
    for name in ("hosted", "in_process"):
        if name in out:
            r = out[name]
            print(
                f"{name:<10} first /search after {r['first_search_s']:.2f} s "
                f"({r['cpu_to_first_search_s']:.2f} s of CPU; load average {r['load_average']}), "
                f"peak RSS {r['peak_rss_mb']:.0f} MB, "
                f"heavy libraries: {', '.join(r['heavy_libraries']) or 'none'}"
            )
    print(
        f"embedder service peak RSS {out['embedder_service_peak_rss_mb']:.0f} MB; targets for the API: ≤ 250 MB, ≤ 3 s"
    )


if __name__ == "__main__":
    main()

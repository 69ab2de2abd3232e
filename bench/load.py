"""The HTTP API under load: /search and /ask at 8, 32 and 128 concurrent clients, in one run.

    python bench/load.py                       # 20 s per level, /search then /ask
    python bench/load.py --seconds 10 --levels 8,128
    python bench/load.py --compare             # and again with admission control off (the old behaviour)
    python bench/load.py --polite              # clients that wait Retry-After after a 503
    python bench/load.py --json
    python bench/load.py --work /tmp/load-store  # keep the store (and reuse it next time)
    python bench/load.py --usage-cost          # /search and /ask p50 with usage records on vs off
    python bench/load.py --smoke               # a store of one page, one second per route

Builds a small real store (this repository's docs, as bench/hosted.py does),
starts `docforge serve --api` on 127.0.0.1 (model in process, the defaults of
Settings.api unless DOCFORGE_API_* say otherwise), warms it, then for each
route and level runs that many clients for a fixed time: each sends its next
request as soon as the last one is answered (a 503 too: the worst client, one
that ignores Retry-After). Questions cycle through a fixed list, with
`no_cache` on /ask so every ask does its work (extractive answers: no LLM).

Printed per route and level: requests/s answered (200), p50/p95/p99 latency
of the answered ones, how many were shed (503 with Retry-After), any other
status (there should be none), and the ratio of the level's throughput to the
lowest level's (the baseline, same run). RSS of the API process before the
first level and after the last, and the first search after start: seconds from
launching the process to its first answered /search (the API loads the model,
or its ONNX Runtime session, before it listens; target 3 s on 2 cores). Targets (issue 25): throughput at 128 at
least 0.9x the throughput at 8; p99 of the answered at 128 at most 2 s; every
response 200 or 503 with Retry-After.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from hosted import API_TOKEN, DOCFORGE, QUERIES, build_store, free_port, status_kb, wait_health  # noqa: E402
from metrics import pct  # noqa: E402

QUESTIONS = [
    *QUERIES,
    "which settings limit the request body?",
    "how does the reranker sidecar work?",
    "what happens when the store restarts?",
    "how do I add a Confluence source?",
    "where do answers get cached?",
    "how is a claim verified against its evidence?",
]
ROUTES = {
    "search": lambda q: {"query": q, "limit": 5, "user_name": "bench", "team_name": "bench"},
    "ask": lambda q: {"question": q, "user_name": "bench", "team_name": "bench", "no_cache": True},
}


def question(i: int) -> str:
    """The i-th question: one of QUESTIONS with a number, so no two requests share a query vector and
    every one is embedded (the query LRU would answer a repeated one for free)."""
    return f"{QUESTIONS[i % len(QUESTIONS)]} {i // len(QUESTIONS)}"


class Connection:
    """One keep-alive HTTP/1.1 connection, spoken over asyncio streams: a client this cheap leaves the
    CPU to the server (httpx costs about as much per request as a search, on a small machine)."""

    def __init__(self, port: int):
        self.port = port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def post(self, path: str, body: dict) -> tuple[int, dict[str, str]]:
        if self.writer is None or self.writer.is_closing():
            self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)
        data = json.dumps(body).encode()
        head = (
            f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{self.port}\r\nAuthorization: Bearer {API_TOKEN}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n"
        )
        self.writer.write(head.encode() + data)
        assert self.reader is not None
        status_line = await self.reader.readline()
        if not status_line:
            self.writer = None
            raise ConnectionError("the server closed the connection")
        headers = {}
        while (line := await self.reader.readline()) not in (b"\r\n", b""):
            name, _, value = line.decode("latin-1").partition(":")
            headers[name.strip().lower()] = value.strip()
        await self.reader.readexactly(int(headers.get("content-length", "0")))
        if headers.get("connection", "").lower() == "close":
            self.writer.close()
            self.writer = None
        return int(status_line.split()[1]), headers

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()


async def level(port: int, route: str, clients: int, seconds: float, polite: bool = False) -> dict:
    """`clients` closed-loop clients on `route` for `seconds`: the answered latencies and every status."""
    latencies: list[float] = []
    statuses: Counter[str] = Counter()
    deadline = time.monotonic() + seconds

    async def worker(n: int) -> None:
        conn, i = Connection(port), n + clients * 1000 * len(QUESTIONS)  # this worker's own questions
        try:
            while time.monotonic() < deadline:
                t0 = time.monotonic()
                try:
                    status, headers = await conn.post(f"/{route}", ROUTES[route](question(i)))
                except (OSError, asyncio.IncompleteReadError) as e:
                    statuses[type(e).__name__] += 1
                    conn = Connection(port)
                    continue
                i += clients
                if status == 200:
                    latencies.append(time.monotonic() - t0)
                    statuses["200"] += 1
                elif status == 503 and headers.get("retry-after"):
                    statuses["503+Retry-After"] += 1
                    if polite:  # a client that does as it is told
                        await asyncio.sleep(min(float(headers["retry-after"]), max(0.0, deadline - time.monotonic())))
                else:
                    statuses[str(status)] += 1
        finally:
            conn.close()

    t0 = time.monotonic()
    await asyncio.gather(*(worker(n) for n in range(clients)))
    elapsed = time.monotonic() - t0
    return {
        "route": route,
        "clients": clients,
        "seconds": round(elapsed, 1),
        "rps": len(latencies) / elapsed,
        "p50_ms": pct(latencies, 50) * 1000,
        "p95_ms": pct(latencies, 95) * 1000,
        "p99_ms": pct(latencies, 99) * 1000,
        "shed": statuses["503+Retry-After"],
        "other": {k: v for k, v in statuses.items() if k not in ("200", "503+Retry-After")},
    }


def run(config: Path, env: dict, levels: list[int], seconds: float, routes: list[str], polite: bool = False) -> dict:
    import httpx

    port = free_port()
    url = f"http://127.0.0.1:{port}"
    # stderr to a file, not a pipe: a pipe nobody reads fills up and blocks the server's logging
    with open(config.parent / f"api-{port}.log", "wb") as log:
        t_start = time.monotonic()
        api = subprocess.Popen(
            [DOCFORGE, "serve", "--api", "--port", str(port), "-c", str(config)], env=env, stderr=log
        )
        try:
            wait_health(url, api)
            headers = {"Authorization": f"Bearer {API_TOKEN}"}
            first = httpx.post(f"{url}/search", json=ROUTES["search"]("first"), headers=headers, timeout=120)
            first.raise_for_status()
            first_search_s = time.monotonic() - t_start
            for route in routes:  # warm: the model, the pool, the answer path
                for q in QUESTIONS:
                    httpx.post(f"{url}/{route}", json=ROUTES[route](q), headers=headers, timeout=120).raise_for_status()
            health = httpx.get(f"{url}/health", timeout=10).json()
            rss_before = status_kb(api.pid, "VmRSS")
            results = [asyncio.run(level(port, r, c, seconds, polite)) for r in routes for c in levels]
            rss_after = status_kb(api.pid, "VmRSS")
        finally:
            api.terminate()
            api.wait(30)
    for r in results:
        base = next(b for b in results if b["route"] == r["route"] and b["clients"] == levels[0])
        r["ratio"] = r["rps"] / base["rps"] if base["rps"] else float("nan")
    return {
        "admission": health.get("admission"),
        "first_search_s": first_search_s,
        "rss_mb_before": rss_before / 1024,
        "rss_mb_after": rss_after / 1024,
        "levels": results,
    }


def usage_cost(config: Path, env: dict, clients: int, seconds: float, routes: list[str], rounds: int = 4) -> dict:
    """What usage records (pipeline.usage, docs/gaps.md) cost: the same store and clients with
    DOCFORGE_USAGE__ENABLED on and off, alternated on, off, off, on … (ABBA) in one run so the machine's
    drift and the order fall on both; per route the median of the rounds' p50s and their ratio (target: at
    most 1.05)."""
    import statistics

    import psycopg

    from pipeline.config import load_settings
    from pipeline.store.db import store_url

    p50: dict[tuple[str, str], list[float]] = {}
    for i in range(rounds):
        for state in ("on", "off") if i % 2 == 0 else ("off", "on"):
            out = run(
                config, {**env, "DOCFORGE_USAGE__ENABLED": str(state == "on").lower()}, [clients], seconds, routes
            )
            for r in out["levels"]:
                p50.setdefault((state, r["route"]), []).append(r["p50_ms"])
    with psycopg.connect(store_url(load_settings(config))) as conn:
        recorded = conn.execute("SELECT count(*) FROM usage_events").fetchone()[0]
    result = {"clients": clients, "rounds": rounds, "records_in_store": recorded, "routes": {}}
    for route in routes:
        on, off = statistics.median(p50[("on", route)]), statistics.median(p50[("off", route)])
        result["routes"][route] = {"p50_on_ms": on, "p50_off_ms": off, "ratio": on / off if off else float("nan")}
    return result


def show_usage_cost(out: dict) -> None:
    print(f"\nusage records on vs off: {out['clients']} clients, {out['rounds']} rounds each, alternated")
    print(f"{'route':<7}{'p50 on ms':>11}{'p50 off ms':>12}{'ratio':>7}")
    for route, r in out["routes"].items():
        print(f"{route:<7}{r['p50_on_ms']:>11.1f}{r['p50_off_ms']:>12.1f}{r['ratio']:>7.3f}")
    print(f"usage records in the store after the run: {out['records_in_store']}")


def show(title: str, out: dict) -> None:
    print(f"\n{title}")
    adm = out["admission"] or {}
    if adm:
        print(
            f"limits: {adm['requests']['max_in_flight']} searches / {adm['asks']['max_in_flight']} asks in flight, "
            f"{adm['max_queued']} queued, {adm['max_wait_s']:g} s wait"
        )
    print(
        f"{'route':<7}{'clients':>8}{'req/s':>8}{'ratio':>7}{'p50 ms':>8}{'p95 ms':>8}{'p99 ms':>8}{'shed':>7}  other"
    )
    for r in out["levels"]:
        other = ", ".join(f"{k}: {v}" for k, v in r["other"].items()) or "-"
        print(
            f"{r['route']:<7}{r['clients']:>8}{r['rps']:>8.1f}{r['ratio']:>7.2f}{r['p50_ms']:>8.0f}"
            f"{r['p95_ms']:>8.0f}{r['p99_ms']:>8.0f}{r['shed']:>7}  {other}"
        )
    print(f"API RSS: {out['rss_mb_before']:.0f} MB before, {out['rss_mb_after']:.0f} MB after")
    print(f"first search answered {out['first_search_s']:.2f} s after the process started   (target ≤ 3 s)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=20.0, help="per route and level")
    ap.add_argument("--levels", default="8,32,128", help="concurrent clients, comma-separated (first: baseline)")
    ap.add_argument("--routes", default="search,ask")
    ap.add_argument("--compare", action="store_true", help="also run with admission control off")
    ap.add_argument(
        "--polite", action="store_true", help="clients wait Retry-After after a 503 (default: retry at once)"
    )
    ap.add_argument("--work", help="keep the store in this folder and reuse it on the next run")
    ap.add_argument(
        "--usage-cost", action="store_true", help="only: p50 with usage records on vs off, at the first level"
    )
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--smoke", action="store_true", help="the whole path on a tiny input, in seconds (bench/smoke.py)")
    args = ap.parse_args()
    if args.smoke:  # a store of one page, one second at two clients per route
        args.seconds, args.levels = 1.0, "2"
    levels = [int(x) for x in args.levels.split(",")]
    routes = args.routes.split(",")
    with tempfile.TemporaryDirectory(prefix="docforge-load-") as tmp:
        work = Path(args.work or tmp)
        env = {**os.environ, "DOCFORGE_HOME": str(work / "home"), "DOCFORGE_API_TOKENS": API_TOKEN}
        env.pop("DATABASE_URL", None)
        os.environ.update(DOCFORGE_HOME=env["DOCFORGE_HOME"])
        os.environ.pop("DATABASE_URL", None)
        config = work / "sources.yml" if (work / "sources.yml").exists() else build_store(work, smoke=args.smoke)
        if args.usage_cost:
            cost = usage_cost(config, env, levels[0], args.seconds, routes)
            if not args.work:
                from pipeline.store.db import stop_embedded

                stop_embedded(work / "home")
            if args.json:
                print(json.dumps(cost, indent=2))
            else:
                show_usage_cost(cost)
            return
        runs = {"admission control on": run(config, env, levels, args.seconds, routes, args.polite)}
        if args.compare:
            off = {**env, "DOCFORGE_API_MAX_IN_FLIGHT": "1000", "DOCFORGE_API_MAX_ASKS_IN_FLIGHT": "1000"}
            runs["admission control off"] = run(config, off, levels, args.seconds, routes)
        if not args.work:
            from pipeline.store.db import stop_embedded

            stop_embedded(work / "home")
    if args.json:
        print(json.dumps(runs, indent=2))
        return
    print(f"bench/load.py: {args.seconds:g} s per level, {os.cpu_count()} CPUs, closed-loop clients")
    for title, out in runs.items():
        show(title, out)


if __name__ == "__main__":
    main()

"""Freshness: seconds from a git push to the new text being searchable, webhook vs polling, in one run.

    python bench/freshness.py                # 10 pushes with a webhook each, then 10 with polling only
    python bench/freshness.py --pushes 3 --json
    python bench/freshness.py --smoke        # one push, webhook only

Starts, on 127.0.0.1 (tests/live_stack.py): a git repository served over smart HTTP with Basic
auth, `dagster dev` with the repository's dagster.yaml (its push sensor, the run queue), and
`docforge serve --api` with webhooks on; the store is an embedded Postgres under a temp folder.
Each push appends a paragraph with a new word to one file; the clock starts at the push, and the
API's /search is polled every 0.25 s until a hit quotes the word.

- webhook: right after the push, a signed GitHub-style delivery to POST /hooks/git;
- polling: nothing is delivered; the push sensor's poll (every 60 s) finds the new commit.

Prints p50 / p95 per mode, their ratio, and for the webhook mode where the time goes (delivery to
run requested, requested to started, started to searchable), from Dagster's run records.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from metrics import pct  # noqa: E402

from tests.live_stack import SOURCE, Stack  # noqa: E402


def one_push(live: Stack, n: int, mode: str) -> dict:
    word = f"fresh{mode}{n}x{int(time.time() * 1000) % 100000}"
    t0 = time.monotonic()
    wall0 = time.time()
    commit = live.push(f"The {word} setting keeps the cache warm.")
    if mode == "webhook":
        res = live.deliver(commit)
        if res.status_code != 202:
            raise RuntimeError(f"delivery refused: {res.status_code} {res.text}")
    live.until_found(word, timeout=600)
    out = {"mode": mode, "seconds": round(time.monotonic() - t0, 2)}
    runs = [r for r in live.runs({"dagster/run_key": f"{SOURCE}@{commit}"})]
    if runs and runs[0]["startTime"]:
        r = runs[0]
        out.update(
            requested=round(r["creationTime"] - wall0, 2),
            started=round(r["startTime"] - r["creationTime"], 2),
            searchable=round(out["seconds"] - (r["startTime"] - wall0), 2),
            trigger=next((t["value"] for t in r["tags"] if t["key"] == "docforge/trigger"), ""),
        )
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pushes", type=int, default=10, help="pushes per mode (default 10)")
    ap.add_argument("--modes", default="webhook,polling", help="which, in order (default webhook,polling)")
    ap.add_argument("--json", action="store_true", help="print every push as JSON too")
    ap.add_argument("--smoke", action="store_true", help="the whole path on a tiny input, in seconds (bench/smoke.py)")
    args = ap.parse_args()
    if args.smoke:  # one push, webhook only: polling waits for the sensor's interval
        args.pushes, args.modes = 1, "webhook"
    modes = [m.strip() for m in args.modes.split(",") if m.strip() in ("webhook", "polling")]
    tmp = Path(tempfile.mkdtemp(prefix="docforge-freshness-"))
    print(f"starting dagster dev, the API and a git server under {tmp} ...", file=sys.stderr)
    results: list[dict] = []
    with Stack(tmp) as live:
        for mode in modes:
            for n in range(args.pushes):
                r = one_push(live, n, mode)
                results.append(r)
                print(f"  {mode:8} push {n + 1:2}: searchable after {r['seconds']:6.1f} s", file=sys.stderr)
                if mode == "polling":
                    live.wait("the run to finish", lambda: live._runs_done({"dagster/partition": SOURCE}), 600)
    print(f"\nseconds from push to searchable, {args.pushes} pushes per mode (one dagster dev, one API)")
    print(f"{'mode':10}{'p50':>8}{'p95':>8}{'min':>8}{'max':>8}")
    summary = {}
    for mode in modes:
        s = [r["seconds"] for r in results if r["mode"] == mode]
        summary[mode] = {"p50": pct(s, 50), "p95": pct(s, 95)}
        print(f"{mode:10}{pct(s, 50):8.1f}{pct(s, 95):8.1f}{min(s):8.1f}{max(s):8.1f}")
    if len(summary) == 2:
        print(f"polling / webhook, p50: {summary['polling']['p50'] / summary['webhook']['p50']:.1f}x")
    hooked = [r for r in results if r["mode"] == "webhook" and "requested" in r]
    if hooked:
        print("webhook, mean seconds: push to run requested {:.1f}, requested to started {:.1f}, "
              "started to searchable {:.1f}".format(*(statistics.mean(r[k] for r in hooked)
                                                      for k in ("requested", "started", "searchable"))))  # fmt: skip
    if args.json:
        print(json.dumps({"summary": summary, "pushes": results}, indent=1))


if __name__ == "__main__":
    main()

"""What `permissions: sync` adds to a Confluence listing: requests and seconds, against `off` in the same run.

    python bench/confluence_permissions.py                  # 2,000 pages, a tree 5 wide
    python bench/confluence_permissions.py --pages 500 --restricted-every 20 --latency-ms 100
    python bench/confluence_permissions.py --smoke          # 40 pages, in seconds

The API double (tests/confluence_double.py, real HTTP on 127.0.0.1) serves one space readable by a
group and a user; every `--restricted-every`-th page has a read restriction (its subtree inherits it).
Each mode lists the space once, as every ingest run does. Printed per mode: requests by endpoint,
seconds, pages under a restriction; then the ratio sync / off. `--latency-ms` makes each answer
wait, as a real site's round trip does (restriction reads run 8 at a time; the listing is serial).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pipeline.config import ConfluenceSourceConfig  # noqa: E402
from pipeline.sources.confluence import ConfluenceSource  # noqa: E402
from tests.confluence_double import ConfluenceDouble  # noqa: E402

EMAIL, TOKEN = "bench@example.com", "bench-token"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pages", type=int, default=2000)
    ap.add_argument("--restricted-every", type=int, default=50)
    ap.add_argument("--latency-ms", type=float, default=0.0, help="each answer's delay (default 0)")
    ap.add_argument("--smoke", action="store_true", help="the whole path on a tiny input, in seconds (bench/smoke.py)")
    args = ap.parse_args()
    if args.smoke:
        args.pages, args.restricted_every = 40, 5
    os.environ.update(CONFLUENCE_EMAIL=EMAIL, CONFLUENCE_API_TOKEN=TOKEN)
    for var in ("CONFLUENCE_BEARER_TOKEN", "CONFLUENCE_PAT"):
        os.environ.pop(var, None)
    with ConfluenceDouble(page_size=250, email=EMAIL, token=TOKEN) as d:
        d.latency = args.latency_ms / 1000
        d.grant_space("group", d.add_group("staff"))
        d.grant_space("user", d.add_user("acc-ann", "ann@example.com"))
        for i in range(args.pages):
            restricted = i % args.restricted_every == args.restricted_every - 1
            parent = None if i == 0 else str(1000 + (i - 1) // 5)
            d.add_page(str(1000 + i), f"p{i}", "<p>x</p>", parent_id=parent, read_groups=["hr"] if restricted else [])
        results = {}
        for mode in ("off", "sync"):
            cfg = ConfluenceSourceConfig(
                name="wiki", type="confluence", base_url=d.base_url, space="DOCS", page_size=250, permissions=mode
            )
            d.counts.clear()
            source = ConfluenceSource(cfg)
            t0 = time.perf_counter()
            refs = source.list_refs()
            seconds = time.perf_counter() - t0
            source.close()
            requests = sum(d.counts.values())
            under = sum(1 for r in refs if r.access and len(r.access) > 1)
            results[mode] = (requests, seconds)
            print(f"{mode:>4}: {len(refs)} pages, {requests} requests, {seconds:.2f} s, {under} under a restriction")
            print(f"      {dict(sorted(d.counts.items()))}")
        (r_off, s_off), (r_sync, s_sync) = results["off"], results["sync"]
        print(f"sync / off: requests {r_sync / r_off:.1f}x (+{r_sync - r_off}), seconds {s_sync / s_off:.1f}x")


if __name__ == "__main__":
    main()

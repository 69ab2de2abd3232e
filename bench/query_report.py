"""bench/query.py's report: the stores side by side, one column per size."""

from __future__ import annotations

TARGETS = {"hybrid": "targets p50 ≤ 25 ms, p95 ≤ 60 ms"}
WIDTH = 22  # one size's column


def line(label: str, cells: list[str]) -> None:
    print(f"{label:<34}" + "".join(f"{c:>{WIDTH}}" for c in cells))


def report(args, results: dict) -> None:
    sizes = list(results)
    first = results[sizes[0]]
    print(
        f"stores: {', '.join(str(n) for n in sizes)} chunks, {args.vectors} vectors, "
        f"query embedding ({first['backend']}) included in latency; {args.queries} searches per cell"
    )
    line("chunks", [f"{n:,}" for n in sizes])
    _build_and_bytes(results)
    _latency(args, results)
    _recall(results)


def _build_and_bytes(results: dict) -> None:
    sizes, first = list(results), next(iter(results.values()))
    print("build, seconds per stage")
    for stage in first["build"]:
        label = stage.removesuffix("_s").replace("rows.", "  of which ")  # a trigger's share of the COPY
        line(f"  {label}", [f"{results[n]['build'].get(stage, float('nan')):.1f}" for n in sizes])
    print("bytes per chunk, by table (heap + TOAST) and index")
    names = sorted({k for n in sizes for k in results[n]["bytes"]}, key=lambda k: (k.split("/")[0], "/" in k, k))
    for name in names:
        if all(results[n]["bytes"].get(name, 0) < n for n in sizes):
            continue  # under a byte per chunk everywhere (a one-row table)
        label = f"    {name.split('/')[1]}" if "/" in name else f"  {name}"
        line(label, [f"{results[n]['bytes'].get(name, 0) / n:,.0f}" for n in sizes])
    line("  total", [f"{sum(results[n]['bytes'].values()) / n:,.0f}" for n in sizes])
    line("  total MB", [f"{sum(results[n]['bytes'].values()) / 1e6:,.0f}" for n in sizes])


def _latency(args, results: dict) -> None:
    sizes = list(results)
    print("Searcher.search p50 / p95 ms, limit 10")
    if args.access:
        shares = results[sizes[0]]["latency"]["access"]["documents_readable"]
        print(
            "  readers: "
            + ", ".join(f"{k} may read {v:.1%} of the documents" for k, v in shares.items())
            + "; reader rows: the query vector embedded beforehand, (ratio of p50 to full access's)"
        )
    for mode in args.modes:
        cell = {n: results[n]["latency"][mode] for n in sizes}
        compared = {n: results[n]["latency"].get("compared", {}).get(mode) for n in sizes}
        access = {n: results[n]["latency"].get("access", {}).get(mode) for n in sizes}
        for f in args.filters:
            line(f"  {mode:<8} {f}", [f"{cell[n][f]['p50']:.1f} / {cell[n][f]['p95']:.1f}" for n in sizes])
        for f in args.filters[1:]:  # the cost of a broad filter, as a ratio of p50s
            line(f"  {mode:<8} {f} / none", [f"{cell[n][f]['p50'] / cell[n]['none']['p50']:.2f}x" for n in sizes])
        if args.compare_tree:  # the same store, the other checkout's code, in turns
            for f in args.filters:
                cells = ["{this_p50:.1f} / {other_p50:.1f} = {ratio:.2f}x".format(**compared[n][f]) for n in sizes]
                line(f"  {mode:<8} {f} vs {args.compare_tree.name}", cells)
        if args.access:  # the same store, callers who may read a share of it, in turns, vector embedded
            for name in access[sizes[0]]:
                cells = ["{p50:.1f} / {p95:.1f} ({ratio:.2f}x)".format(**access[n][name]) for n in sizes]
                line(f"  {mode:<8} reader: {name}", cells)
        if mode in TARGETS:
            print(f"  ({mode}: {TARGETS[mode]})")


def _recall(results: dict) -> None:
    from pipeline.config import Settings

    sizes, first = list(results), next(iter(results.values()))
    print(f"dense SQL plan: {first['recall']['plan']}")
    line("recall@10 exact halfvec (no index)", [f"{results[n]['recall']['exact_halfvec']:.3f}" for n in sizes])
    chosen = Settings().search.ef_search
    for kind in (k for k in ("halfvec", "vector") if k in first["recall"]):
        for ef in first["recall"][kind]:
            line(
                f"recall@10 {kind} ef_search={ef}",
                ["{recall:.3f} ({p50_ms:.1f} ms)".format(**results[n]["recall"][kind][ef]) for n in sizes],
            )
            if ef == chosen:
                print("  ← the Searcher's ef_search; recall against exact float32 search, SQL p50 in brackets")

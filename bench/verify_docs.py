"""`docforge verify` on labelled documentation claims, by split, and its throughput.

    python bench/verify_docs.py [--split fit|report|all] [--verbose] [--smoke] [--fit]

Reads bench/sets/corpora.yml (each corpus's split) and bench/sets/<corpus>/claims.jsonl (evidence quote
with its source file, claim, label supported/unsupported, type), runs every claim through the verifier
as `docforge verify` does (one evidence block, pointers implicit) and prints, per split and corpus:
accuracy, supported-accepted, unsupported-rejected, and each type's share right. Figures to quote come
from the "report" corpora only; constants are fitted on "fit" ones (bench/sets/corpora.yml says which).

Throughput: the whole set (repeated to --n answers) through the `docforge verify` command as a user runs
it, process start included, against the same command on one answer in the same run (what starting costs).
--fit: search the verifier's word shares (pipeline.answers.verify.policy.FITTED) on the "fit" corpora's
claims for the best accuracy (ties: the one nearest the values in force), write them to the "verifier" key
of pipeline/answers/params/all-MiniLM-L6-v2.json and print the grid's best and the values kept.
--similarity: what the embedding model's claim–evidence-sentence cosine would add as one more signal, never
alone: a claim the lexical rules reject only for its share of words (no anchor, number, negation or role
problem) accepted when its best cosine reaches t; per split, the claims it would turn at each t. Kept out
of the verifier while it does not improve the report split (docs/answers.md has the figures).
--smoke: a few claims of each split and no throughput run — seconds, for the test that runs every bench.
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


def load(split: str) -> dict[str, list[dict]]:
    """{corpus: its claims} for the corpora of `split` ("all": every corpus) that have a claims set."""
    corpora = yaml.safe_load((SETS / "corpora.yml").read_text())["corpora"]
    out = {}
    for c in corpora:
        path = SETS / c["name"] / "claims.jsonl"
        if (split == "all" or c["split"] == split) and path.exists():
            out[c["name"]] = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return out


def request(row: dict) -> dict:
    return {"id": row["id"], "answer": row["claim"], "evidence": row["evidence"]}


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
        if truth:
            sup += 1
            sup_ok += ok
        else:
            uns += 1
            uns_ok += ok
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
        f"{label:<19}{s['n']:>4}  accuracy {s['accuracy']:5.1%}  supported {s['supported_accepted']:5.1%}"
        f"  unsupported {s['unsupported_rejected']:5.1%}"
    )


def wrapped(text: str) -> None:
    print(textwrap.fill(text, 80, subsequent_indent="    "))


def throughput(rows: list[dict], n: int) -> None:
    """`docforge verify` over n answers, process start included, against one answer (the start)."""
    exe = str(Path(sys.executable).parent / "docforge")
    with tempfile.TemporaryDirectory() as tmp:
        many, one = Path(tmp) / "many.jsonl", Path(tmp) / "one.jsonl"
        lines = [json.dumps(request(r)) for r in rows]
        many.write_text("".join(lines[i % len(lines)] + "\n" for i in range(n)))
        one.write_text(lines[0] + "\n")
        times = {}
        for label, path in (("one answer", one), (f"{n:,} answers", many)):
            t = time.perf_counter()
            res = subprocess.run([exe, "verify", str(path), "-o", os.devnull], capture_output=True, text=True)
            times[label] = time.perf_counter() - t
            if res.returncode:
                print(f"  `docforge verify` failed (exit {res.returncode}): {res.stderr.strip()[-300:]}")
                return
    start, total = times["one answer"], times[f"{n:,} answers"]
    wrapped(
        f"throughput: `docforge verify` {n:,} answers in {total:.2f} s = {n / total:,.0f} answers/s with the "
        f"process start ({start:.2f} s for one answer: {total / start:.1f}x it); "
        f"{n / max(total - start, 1e-9):,.0f} answers/s after it"
    )


GRID = {  # around the values in force; every point is scored on the fit claims
    "paraphrase_min": (0.75, 0.8, 0.85, 0.9),
    "entity_other_min": (0.7, 0.75, 0.8, 0.85),
    "entity_single_min": (0.8, 0.85, 0.9),
}


def fit() -> None:
    """Grid search of the fitted shares on the fit claims; the best written to the params file."""
    import itertools

    from pipeline.answers import params
    from pipeline.answers.verify import policy

    rows = [r for rs in load("fit").values() for r in rs]
    now = {k: policy.POLICY[k] for k in GRID}
    scored = []
    for point in itertools.product(*GRID.values()):
        values = dict(zip(GRID, point, strict=True))
        policy.use(values)
        s = score(rows)
        distance = sum(abs(values[k] - now[k]) for k in GRID)
        scored.append((-s["accuracy"], -min(s["supported_accepted"], s["unsupported_rejected"]), distance, values, s))
    *_, best, s = min(scored, key=lambda t: t[:3])
    policy.use(best)
    path = params.file_for(params.DEFAULT_MODEL)
    raw = json.loads(path.read_text())
    raw["verifier"] = {**raw["verifier"], **best}
    raw.pop("format", None)
    params.write(path, raw)
    show(f"[fit] {len(scored)} points", s)
    wrapped(f"  kept: {json.dumps(best)} (was {json.dumps(now)}); written to {path.relative_to(ROOT.parent)}")


def similarity() -> None:
    """Per split and threshold: supported / unsupported claims the cosine signal would accept."""
    import numpy as np

    from pipeline.answers import words as tx
    from pipeline.answers.verify import verify_request
    from pipeline.config.settings import EmbeddingConfig
    from pipeline.embed import load_embedder

    emb = load_embedder(EmbeddingConfig())
    for split in ("fit", "report"):
        rows = [r for rs in load(split).values() for r in rs]
        base = sum(verify_request(request(r))["verified"] == (r["label"] == "supported") for r in rows)
        soft = []  # rejected only because too few of its words are in the evidence
        for r in rows:
            out = verify_request(request(r))
            why = [v for c in out["claims"] for v in c.get("violations", ())]
            if not out["verified"] and why and all(v.startswith("not supported:") for v in why):
                soft.append(r)
        sims = []
        for r in soft:
            sents = [x for x in tx.split_sentences(r["evidence"]) if x.strip()] or [r["evidence"]]
            v = emb.encode([r["claim"], *sents], "document")
            v = v / np.linalg.norm(v, axis=1, keepdims=True)
            sims.append(float(np.max(v[1:] @ v[0])))
        print(f"[{split}] {len(rows)} claims, {base} right; {len(soft)} rejected only for their share of words")
        for t in (0.7, 0.8, 0.85, 0.9, 0.95):
            sup = sum(x >= t and r["label"] == "supported" for r, x in zip(soft, sims, strict=True))
            uns = sum(x >= t and r["label"] != "supported" for r, x in zip(soft, sims, strict=True))
            acc = (base + sup - uns) / len(rows)
            print(f"  cosine >= {t:.2f}: +{sup} supported, +{uns} unsupported accepted: {acc:.1%}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--split", choices=("fit", "report", "all"), default="all")
    ap.add_argument("--verbose", "-v", action="store_true", help="print every claim judged wrong")
    ap.add_argument("--smoke", action="store_true", help="a few claims per split, no throughput run")
    ap.add_argument("--n", type=int, default=5000, help="answers in the throughput run")
    ap.add_argument("--fit", action="store_true", help="refit the verifier's shares on the fit claims")
    ap.add_argument("--similarity", action="store_true", help="what an embedding-cosine signal would add")
    args = ap.parse_args()
    if args.similarity:
        similarity()
        return
    if args.fit:
        fit()
        return
    from pipeline.answers.lexicon import wordnet_status

    wrapped(wordnet_status())
    splits = ("fit", "report") if args.split == "all" else (args.split,)
    everything = []
    for split in splits:
        sets = load(split)
        if not sets:
            print(f"{split}: no claims sets under {SETS} (skipped)")
            continue
        if args.smoke:
            sets = {c: rows[:8] for c, rows in list(sets.items())[:2]}
        rows = [r for rs in sets.values() for r in rs]
        everything += rows
        whole = score(rows, args.verbose)
        show(f"[{split}] all", whole)
        for corpus, rs in sets.items():
            show(f"  {corpus}", score(rs))
        wrapped("  by type: " + ", ".join(f"{t} {a}/{b}" for t, (a, b) in whole["types"].items()))
    if everything and not args.smoke:
        throughput(everything, args.n)


if __name__ == "__main__":
    main()

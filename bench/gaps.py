"""How well `docforge gaps` groups paraphrases, per threshold: the fit for `usage.same_meaning`.

    python bench/gaps.py            # the sweep on both halves of bench/paraphrases.jsonl
    python bench/gaps.py --json
    python bench/gaps.py --smoke    # the sweep alone
    python bench/gaps.py --weak-hit STORE/sources.yml   # also: the fit for `usage.weak_hit` on a built store

bench/paraphrases.jsonl holds 16 meanings, 4 wordings each, in two halves of 8: `fit` (the threshold is
chosen on it) and `held` (reported, never fitted on). Questions arrive in a fixed shuffled order (the
clustering is greedy, so order matters; the report orders by first asked). Per threshold: purity (the
share of questions whose group's main meaning is their own), completeness (the share in their meaning's
biggest group) and groups found; the chosen threshold maximises their harmonic mean on `fit`.

--weak-hit: the best dense hit's score ((1 + cosine) / 2) on a store of this repository's docs (the
one `bench/load.py --work DIR` builds) for questions those docs answer (bench/hosted.py's and
bench/load.py's) and for paraphrase-set meanings they cannot (HR, office, accounts), and the score that
best separates the two (balanced accuracy).
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

from pipeline.config import EmbeddingConfig
from pipeline.embed import Embedder
from pipeline.usage import completeness, groups, purity

SET = Path(__file__).with_name("paraphrases.jsonl")
THRESHOLDS = [round(0.30 + 0.05 * i, 2) for i in range(12)]  # 0.30 … 0.85


def load(split: str) -> tuple[list[str], list[str]]:
    rows = [json.loads(line) for line in SET.read_text().splitlines() if line.strip()]
    rows = [r for r in rows if r["split"] == split]
    random.Random(37).shuffle(rows)  # a fixed arrival order
    return [r["question"] for r in rows], [r["label"] for r in rows]


def sweep(embedder, split: str) -> list[dict]:
    questions, labels = load(split)
    vectors = embedder.encode(questions, kind="query")
    out = []
    for t in THRESHOLDS:
        found = groups(vectors, t)
        p, c = purity(found, labels), completeness(found, labels)
        out.append({"threshold": t, "purity": p, "completeness": c, "f": 2 * p * c / (p + c), "groups": len(found)})
    return out


OUT_OF_SCOPE = {
    "parental-leave",
    "office-wifi",
    "onboarding-laptop",
    "expense-report",
    "change-username",
    "oncall-rota",
    "delete-account",
    "reset-password",
}  # meanings docforge's docs never answer


def weak_hit(config: str) -> dict:
    from bench.load import QUESTIONS
    from pipeline.config import load_settings
    from pipeline.query import Searcher

    rows = [json.loads(line) for line in SET.read_text().splitlines() if line.strip()]
    unanswerable = [r["question"] for r in rows if r["label"] in OUT_OF_SCOPE]
    with Searcher(load_settings(config)) as searcher:
        best = lambda qs: [searcher.search(q, 1, "dense", rerank=False)[0].score for q in qs]  # noqa: E731
        yes, no = best(QUESTIONS), best(unanswerable)

    def accuracy(t: float) -> float:
        return (sum(s >= t for s in yes) / len(yes) + sum(s < t for s in no) / len(no)) / 2

    cuts = [round(0.5 + 0.005 * i, 3) for i in range(100)]
    top = max(accuracy(t) for t in cuts)
    best = [t for t in cuts if accuracy(t) == top]
    cut = best[len(best) // 2]  # the middle of the best cuts: as far from both sets as they allow
    return {"answerable": sorted(yes), "unanswerable": sorted(no), "chosen": cut, "balanced_accuracy": accuracy(cut)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--weak-hit", metavar="SOURCES_YML", help="a built store of this repository's docs")
    ap.add_argument("--smoke", action="store_true", help="the sweep alone (it takes seconds as it is)")
    args = ap.parse_args()
    embedder = Embedder(EmbeddingConfig())
    result: dict = {split: sweep(embedder, split) for split in ("fit", "held")}
    best = max(result["fit"], key=lambda r: (r["f"], r["threshold"]))["threshold"]
    result["chosen"] = best
    if args.weak_hit:
        result["weak_hit"] = weak_hit(args.weak_hit)
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"model {embedder.model_id}; 8 meanings x 4 wordings per half; chosen on fit: {best}")
    print(f"{'threshold':>9}  {'fit: purity compl. groups':>26}  {'held: purity compl. groups':>27}")
    for f, h in zip(result["fit"], result["held"], strict=True):
        mark = " <" if f["threshold"] == best else ""
        print(
            f"{f['threshold']:>9.2f}  {f['purity']:>12.2f} {f['completeness']:>6.2f} {f['groups']:>6}"
            f"  {h['purity']:>13.2f} {h['completeness']:>6.2f} {h['groups']:>6}{mark}"
        )
    if w := result.get("weak_hit"):
        show = lambda xs: " ".join(f"{x:.2f}" for x in xs)  # noqa: E731
        print(f"\nbest dense hit, answerable ({len(w['answerable'])}): {show(w['answerable'])}")
        print(f"best dense hit, unanswerable ({len(w['unanswerable'])}): {show(w['unanswerable'])}")
        print(f"weak_hit chosen: {w['chosen']} (balanced accuracy {w['balanced_accuracy']:.2f})")


if __name__ == "__main__":
    main()

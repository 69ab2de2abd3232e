"""Where an extractive reply loses the answer phrase: per labelled question, the stage it is lost at.

    python bench/phrase_losses.py --stores DIR --only exim4,haproxy --keep /tmp/asked.pkl   # ask, keep
    python bench/phrase_losses.py --stores DIR --whole --only exim4 --keep /tmp/w.pkl  # whole manuals
    python bench/phrase_losses.py --keep /tmp/asked.pkl                                    # replay, no asks
    python bench/phrase_losses.py --keep /tmp/asked.pkl -v                                 # and each miss
    python bench/phrase_losses.py --smoke      # ask and replay a tiny made-up corpus (bench/smoke.py)

Each answerable question is asked through `Answerer.ask` (no cache) with the ranked lines kept; a
replay re-decides the kept ranking with the code as it is now (extractive.decide and what it shows),
so a change to what a reply shows is measured without asking again. Stages, for the phrase:

    shown        in the reply's claims (candidates included)
    abstained    the reply abstained
    not found    in no retrieved chunk (search, or the labels, lose it)
    other        in a retrieved chunk no shown line is from
    section      in a shown line's chunk, but not in its entry or paragraph
    passage      in a shown line's entry or paragraph (the lines around it), not the line

bench/fit_answers.py measures the same "shown" on the live answerer; this one says where the rest go.
"""

from __future__ import annotations

import argparse
import os
import pickle
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

STAGES = ("shown", "abstained", "not found", "other", "section", "passage")
AROUND = 3  # lines either side of a shown line counted as its passage (its paragraph or entry)


def collect(stores: Path, only: list[str], whole: bool = False) -> list[dict]:
    """Every answerable question of `only` asked; the evidence, the ranking and the reply's text kept."""
    import fit_answers as fa

    from pipeline.answers import extractive

    kept: list[dict] = []
    real_rank = extractive.rank
    box: dict = {}

    def rank(*args, **kw):
        box["r"] = r = real_rank(*args, **kw)
        box["evidence"] = args[1]
        return r

    extractive.rank = rank
    entries = {e["name"]: e for e in fa.corpora()}
    for name in only:
        config = fa.store(entries[name], stores.resolve(), whole)
        if isinstance(config, str):
            print(f"  {name}: skipped: {config}")
            continue
        with fa.open_store(config) as a:
            params, lines = a.params(), a.cfg.extractive_sentences
            for q in fa.questions(name):
                if q["phrases"] is None:
                    continue
                box.clear()
                ans = a.ask(q["question"], use_cache=False)
                body = " ".join(" ".join(c["text"].split()) for c in ans.claims)
                kept.append(
                    {
                        "corpus": name,
                        "question": q["question"],
                        "phrases": q["phrases"],
                        "reply": body,
                        "abstained": ans.abstained,
                        "evidence": box.get("evidence", []),
                        "ranked": box.get("r"),
                        "params": params,
                        "max_lines": lines,
                    }
                )
    extractive.rank = real_rank
    return kept


def shown(k: dict) -> tuple[list, bool]:
    """The lines a reply shows now (the kept ranking re-decided), as (text, evidence); abstained."""
    from pipeline.answers import extractive, verify

    r = k["ranked"]
    if r is None:
        return [], True
    ex = extractive.decide(k["question"], r, k["params"], k["max_lines"])
    ok = [
        (s, e)
        for s, e in ex.lines
        if verify.check_claim(" ".join(s.split()), (e.pointer,), {e.pointer: verify.CitedBlock(e.text)}).strategy
        in ("quote", "span")
    ]
    return ok, not ok


def stage(k: dict, lines: list, abstained: bool) -> str:
    from pipeline.answers.fit import holds_phrase
    from pipeline.answers.units import units

    ph = k["phrases"]
    if holds_phrase(" ".join(" ".join(s.split()) for s, _ in lines), ph):
        return "shown"
    if abstained:
        return "abstained"
    if not any(holds_phrase(e.text, ph) for e in k["evidence"]):
        return "not found"
    used = {e.pointer for _, e in lines}
    if not any(holds_phrase(e.text, ph) for e in k["evidence"] if e.pointer in used):
        return "other"
    for s, e in lines:
        us = units(e)
        at = [i for i, u in enumerate(us) if " ".join(u.text.split()) == " ".join(s.split())]
        for i in at:
            near = " ".join(u.text for u in us[max(0, i - AROUND) : i + AROUND + 1])
            if holds_phrase(near, ph):
                return "passage"
    return "section"


def table(kept: list[dict], verbose: bool, live: bool) -> None:
    """Per corpus the count at each stage (the reply as asked with `live`; else re-decided now)."""
    rows: dict[str, Counter] = {}
    from pipeline.answers import words as tx

    sizes: list[int] = []
    longest: list[int] = []
    for k in kept:
        lines, abst = shown(k)
        st = stage(k, lines, abst)
        if live:  # the reply as asked decides "shown"; the re-decided lines say where the rest went
            st = "shown" if stage_live(k) else ("section" if st == "shown" else st)
        rows.setdefault(k["corpus"], Counter())[st] += 1
        if lines:
            sizes.append(len(tx.words(" ".join(s for s, _ in lines))))
            per = Counter((e.doc_key, e.section) for s, e in lines for _ in tx.words(s))
            longest.append(max(per.values()))
        if verbose and st != "shown":
            print(f"  {st:<9} {k['corpus']}: {k['question'][:70]}\n            want {k['phrases'][0][:60]!r}")
            for s, e in lines:
                print(f"            [{e.section[-30:]}] {' '.join(s.split())[:90]}")
            if st == "other":
                print(f"            the phrase's section: {where_ranked(k)}")
    print(f"{'corpus':<14}" + "".join(f"{s:>10}" for s in STAGES) + f"{'of':>6}")
    tot: Counter = Counter()
    for name, c in rows.items():
        tot += c
        print(f"{name:<14}" + "".join(f"{c[s]:>10}" for s in STAGES) + f"{sum(c.values()):>6}")
    print(f"{'all':<14}" + "".join(f"{tot[s]:>10}" for s in STAGES) + f"{sum(tot.values()):>6}")
    for name, xs in (("words shown per reply", sizes), ("words of its longest section", longest)):
        xs.sort()
        if xs:
            print(f"{name}: median {xs[len(xs) // 2]}, 90th percentile {xs[int(len(xs) * 0.9)]}, most {xs[-1]}")


def where_ranked(k: dict) -> str:
    """Of the sections in line-model order, the first holding the phrase: its rank, its best line's
    logit against the best's, and its page's search rank."""
    import numpy as np

    from pipeline.answers import features as ft
    from pipeline.answers.fit import holds_phrase

    r = k["ranked"]
    seen: list[tuple[str, str]] = []
    for i in r.order():
        if not np.isfinite(r.logits[i]):
            break
        u = r.units[i]
        where = (u.evidence.doc_key, u.evidence.section)
        if where in seen:
            continue
        seen.append(where)
        if holds_phrase(u.evidence.text, k["phrases"]):
            rr = r.x[i, ft.LINE.index("doc_rr")]
            gap = r.logits[i] - r.logits[r.order()[0]]
            return f"section #{len(seen)}, logit {gap:+.2f}, page rank {1 / rr if rr else 0:.0f}"
    return "no embedded line of it"


def stage_live(k: dict) -> bool:
    from pipeline.answers.fit import holds_phrase

    return bool(k["reply"]) and holds_phrase(k["reply"], k["phrases"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--stores", type=Path, help="the stores (bench/fit_answers.py); with --only: ask afresh")
    ap.add_argument("--only", help="comma-separated corpus names to ask")
    ap.add_argument("--keep", type=Path, help="the asked questions (pickle): written, or replayed")
    ap.add_argument("--whole", action="store_true", help="whole corpora (bench/fit_answers.py --whole)")
    ap.add_argument("--sets", type=Path, help="the labelled sets' folder (default bench/sets)")
    ap.add_argument("--live", action="store_true", help="count the replies as asked, not re-decided now")
    ap.add_argument("--words", type=int, help="replay with this shown.PASSAGE_WORDS (0: the line alone)")
    ap.add_argument("--verbose", "-v", action="store_true")
    ap.add_argument("--smoke", action="store_true", help="ask and replay a tiny made-up corpus, seconds")
    args = ap.parse_args()
    if args.smoke:
        import fit_answers as fa
        from smoke import scratch, tiny_sets

        tmp = scratch()
        fa.SETS = tiny_sets(tmp / "sets")
        args.stores, args.only, args.keep = tmp / "stores", "smoke-fit", tmp / "asked.pkl"
    if not args.keep:
        ap.error("--keep is required (or --smoke)")
    if args.words is not None:
        from pipeline.answers import shown

        shown.PASSAGE_WORDS = args.words
    if args.sets:
        import fit_answers as fa

        fa.SETS = args.sets.resolve()
    if args.only:
        if not args.stores:
            ap.error("--only asks afresh: --stores is required")
        kept = collect(args.stores, args.only.split(","), args.whole)
        args.keep.write_bytes(pickle.dumps(kept))
    kept = pickle.loads(args.keep.read_bytes())
    table(kept, args.verbose, args.live)


if __name__ == "__main__":
    main()

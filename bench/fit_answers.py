"""Fit the extractive answerer's parameters on the "fit" corpora's labelled questions; report on the others.

    python bench/fit_answers.py --stores /tmp/whole --whole          # fit, write the params file, report
    python bench/fit_answers.py --stores /tmp/stores                 # the same over the questions' pages only
    python bench/fit_answers.py --stores /tmp/stores --report-only   # only the report, shipped params
    python bench/fit_answers.py --stores /tmp/stores --only uv,postgresql --report-only -v
    python bench/fit_answers.py --stores /tmp/whole --whole --asked A.pkl --targets 0.95,0.96,0.98
    python bench/fit_answers.py --stores /tmp/whole --whole --asked A.pkl --embedded 12,16,24,32
    python bench/fit_answers.py --stores /tmp/stores --only bind9,borg --index-only  # index ahead, no asks
    python bench/fit_answers.py --stores /tmp/stores --only chrony --asked A.pkl --collect-only  # add to A.pkl
    python bench/fit_answers.py --smoke                                # fit and report on a tiny made-up corpus

bench/sets/corpora.yml names each corpus and its split, and under `questions` its files and the pages
its questions were written from; bench/sets/<corpus>/questions.jsonl holds its questions
({"question", "phrases": [...] | null}).
Each corpus is indexed into STORES/<corpus>/ (sources.yml, home/; kept between runs, a no-op ingest when
unchanged). A corpus whose files are absent is skipped with the reason. The fit uses "fit" corpora only
and writes pipeline/answers/params/<model>.json; the report asks
every question of the "report" corpora (and, apart, the fit corpora) through `Answerer.ask` and prints,
per corpus: the answer phrase in the answer, wrong abstentions, right abstentions, confidence bands.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from corpus_files import adhoc, find, rendered

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
SETS = ROOT / "bench" / "sets"
BANDS = ((0.0, 0.5), (0.5, 0.7), (0.7, 0.8), (0.8, 1.01))


def corpora() -> list[dict]:
    """The corpora with labelled questions: name, split, and (from their `questions` key) files, globs."""
    import yaml

    out = []
    for e in yaml.safe_load((SETS / "corpora.yml").read_text(encoding="utf-8"))["corpora"]:
        if "questions" in e:
            out.append({**e, **e["questions"]})
    return out


def store(entry: dict, stores: Path, whole: bool = False) -> Path | str:
    """STORES/<name>/sources.yml over the corpus's files (a bundle is cloned; man pages are rendered to
    text, as `man -l` shows them): the pages its questions were written from, or with `whole` the whole
    corpus (`questions.whole`: globs, or `path`: the directory ad hoc, `adhoc`); or why it cannot be.
    `globs: pages` takes the pages the questions name (their "page"), with `distractors` other pages of
    the corpus beside them."""
    files = (ROOT / entry["files"]).resolve() if not entry["files"].startswith("/") else Path(entry["files"])
    d = stores / entry["name"]
    config = d / "sources.yml"
    if not files.exists() and not config.exists():
        return f"{files} is absent ({entry.get('install', 'see corpora.yml')})"
    if not config.exists() and whole and entry.get("whole") == "path":
        return adhoc(files, d)
    if not config.exists():
        globs = (whole and entry.get("whole")) or entry.get("globs") or ["**"]
        if globs == "pages":
            globs = pages(entry, files)
            if isinstance(globs, str):
                return globs
        d.mkdir(parents=True, exist_ok=True)
        if entry.get("render") in ("man", "rst"):
            how = entry["render"]
            files, globs = rendered(files, globs, d / "pages", how), ["**/*.rst" if how == "rst" else "*.txt"]
        if files.suffix == ".bundle":
            subprocess.run(["git", "clone", "-q", str(files), str(d / "repo")], check=True)
            src = f"type: git\n    repo: repo\n    globs: {json.dumps(globs)}"
        else:
            src = f"type: directory\n    path: {files}\n    globs: {json.dumps(globs)}"
        config.write_text(f"sources:\n  - name: {entry['name']}\n    {src}\n", encoding="utf-8")
    return config


def pages(entry: dict, files: Path) -> list[str] | str:
    """The pages the corpus's questions name (relative to `files`), then `distractors` other pages of
    the same kinds, every n-th in name order (deterministic, spread over the corpus)."""
    named: list[str] = []
    for r in questions(entry["name"]):
        page = find(files, str(r.get("page") or ""))
        if page and page not in named:
            named.append(page)
    if not named:
        return f"no question of {entry['name']} names a page under {files}"
    kinds = {Path(n).suffix for n in named}
    others = sorted(str(f.relative_to(files)) for f in files.rglob("*") if f.is_file() and f.suffix in kinds)
    others = [o for o in others if o not in named]
    n = int(entry.get("distractors", 0))
    step = max(1, len(others) // n) if n else 0
    return named + (others[::step][:n] if n else [])


INGEST = True  # --no-ingest: ask the stores as they are (a code change that would re-index them is not applied)


def open_store(config: Path):
    from pipeline.answers import Answerer
    from pipeline.config import load_settings
    from pipeline.ingest import IngestContext, ingest_source

    os.environ["DOCFORGE_HOME"] = str(config.parent / "home")
    os.environ.pop("DATABASE_URL", None)
    os.chdir(config.parent)
    settings = load_settings(config)
    t = time.perf_counter()
    if INGEST:
        ingest_source(IngestContext(settings), settings.sources[0].name)  # a no-op on a kept store
    print(
        f"  {config.parent.name}: {'indexed' if INGEST else 'as it is'} ({time.perf_counter() - t:.0f} s)", flush=True
    )
    return Answerer(settings, llm=None)


def questions(name: str) -> list[dict]:
    from pipeline.answers.fit import read_questions

    return read_questions(SETS / name / "questions.jsonl")


def refreshed(asked: list) -> list:
    """Asked questions kept by an earlier run, their question's synonyms read now (features.Question.near)
    and their candidate lines re-read from their evidence by today's `units` (the same lines, with what
    today's code knows of them), so a refit runs today's answer choice on them."""
    import dataclasses

    from pipeline.answers import features
    from pipeline.answers.units import units

    def reread(us: list) -> list:
        chunks: dict[int, list] = {}
        out = []
        for u in us:
            fresh = chunks.setdefault(id(u.evidence), units(u.evidence))
            same = 0 < u.position <= len(fresh) and fresh[u.position - 1].text == u.text
            out.append(fresh[u.position - 1] if same else u)
        return out

    return [
        dataclasses.replace(
            a, q=dataclasses.replace(a.q, near=features.near(a.question, a.q.keys)), units=reread(a.units)
        )
        for a in asked
    ]


def report(answerer, name: str, rows: list[dict], verbose: bool) -> dict:
    """Every question of a corpus asked: the answer phrase in the reply (candidates included), wrong and
    right abstentions, the answers labelled as answering and how many of them are right (unanswerable
    ones count as wrong), and the confidence's calibration (ECE) and AUROC over the answered."""
    from pipeline.answers.fit import holds_phrase

    t = dict.fromkeys(("hit", "n_ans", "wrong", "right", "n_none", "sure", "sure_right", "unsure"), 0)
    p: list[float] = []
    y: list[bool] = []
    for r in rows:
        a = answerer.ask(r["question"], use_cache=False)
        body = " ".join(" ".join(c["text"].split()) for c in a.claims)
        ok = r["phrases"] is not None and holds_phrase(body, r["phrases"])
        if r["phrases"] is None:
            t["n_none"] += 1
            t["right"] += a.abstained or a.audit_mode == "UNGROUNDED"
        else:
            t["n_ans"] += 1
            t["hit"] += ok
            t["wrong"] += a.abstained
        if not a.abstained:
            p.append(a.confidence)
            y.append(ok)
            t["sure"] += bool(a.addresses_question)
            t["sure_right"] += bool(a.addresses_question) and ok
            t["unsure"] += not a.addresses_question
        if verbose:
            tag = "ABST" if a.abstained else ("OK  " if ok else "MISS") + ("+" if a.addresses_question else "?")
            print(f"    {tag} {a.confidence:.2f} {r['question'][:88]}")
    print_row(name, t, p, y)
    return {**t, "p": p, "y": y}


def print_row(name: str, t: dict, p: list[float], y: list[bool]) -> None:
    from pipeline.answers.calibrate import calibration

    ece, auroc = calibration(np.array(p), np.array(y))
    sure = f"{t['sure_right']}/{t['sure']} right" if t["sure"] else "none"
    print(
        f"  {name}: phrase {t['hit']}/{t['n_ans']}, wrong abstentions {t['wrong']}/{t['n_ans']}, "
        f"right abstentions {t['right']}/{t['n_none']}\n"
        f"    labelled answering: {sure}; unsure (candidates) {t['unsure']}; "
        f"ECE {ece:.3f}, AUROC {auroc:.3f} over {len(p)} answered"
    )


def embedded_lines(asked: list, sizes: list[int]) -> None:
    """Per number of lines embedded: the questions answered as with every candidate embedded (the same
    lines, or both abstaining), with the shipped parameters, from the asked features."""
    from pipeline.answers import extractive, params

    shipped = params.load(params.DEFAULT_MODEL)

    def answer(a, k: int):  # the asked features hold every line's similarity; a cold ask computes k
        x, logits = extractive.ranked_rows(a.x, extractive.worth_embedding(a.x, shipped, k), shipped)
        e = extractive.decide(a.question, extractive.Ranked(a.q, a.units, x, logits), shipped)
        return [line for line, _ in e.lines], round(e.confidence, 2)

    every = [answer(a, 0) for a in asked]
    print(f"lines embedded per question ({len(asked)} fit questions; all: up to {extractive.MAX_CANDIDATES}):")
    for k in sizes:
        got = [answer(a, k) for a in asked]
        same = sum(g[0] == e[0] for g, e in zip(got, every, strict=True))
        conf = sum(g == e for g, e in zip(got, every, strict=True))
        print(f"  {k:>3}: the same answer {same}/{len(asked)}, and the same confidence (2 places) {conf}")


def wrapped_targets(table: dict[float, tuple[int, int, int, int]]) -> None:
    """Per precision target: abstentions leaving one fit corpus out, and their balanced accuracy."""
    print("precision target, one fit corpus left out at a time:")
    for t, (right, n_un, wrong, n_ans) in table.items():
        balanced = (right / max(n_un, 1) + 1 - wrong / max(n_ans, 1)) / 2
        print(f"  {t:.2f}: right abstentions {right}/{n_un}, wrong {wrong}/{n_ans}, balanced {balanced:.3f}")


def left_out_table(lo) -> None:
    """Per fit corpus, predicted by the models fitted on the others: abstentions (the question model's and
    the `floor`'s), the confidence's ECE and AUROC over the answered, and the answers labelled as
    answering at the fitted `sure` (its precision; an unanswerable question's answer is wrong)."""
    from pipeline.answers import calibrate

    sure, floor = calibrate.sure_threshold(lo), calibrate.floor_threshold(lo)
    print(
        f"leaving one fit corpus out (sure = {sure:.3f}: precision {calibrate.SURE_PRECISION} at its lower "
        f"bound, z = {calibrate.SURE_Z}; floor = {floor}):"
    )
    names = np.array(lo.corpus)
    answered = lo.answered & (lo.confidence >= floor)
    conf, right_reply = lo.reply(sure)  # the confidence reported and whether the reply holds the answer
    for name in [*sorted(set(lo.corpus)), None]:
        c = names == name if name else np.ones(len(names), dtype=bool)
        m = answered & c
        ece, auroc = calibrate.calibration(conf[m], right_reply[m])
        _, chosen = calibrate.calibration(lo.confidence[m], right_reply[m])
        lab = m & (lo.confidence >= sure)
        right = int((c & ~lo.answerable & ~answered).sum())
        wrong = int((c & lo.answerable & ~answered).sum())
        print(
            f"  {name or 'all':<16} abstained right {right}/{int((c & ~lo.answerable).sum())}, wrong "
            f"{wrong}/{int((c & lo.answerable).sum())}; answered {int(m.sum())}, reply right "
            f"{int(right_reply[m].sum())}; ECE {ece:.3f} AUROC {auroc:.3f} (one answer's {chosen:.3f}); "
            f"labelled {int(lab.sum())}, right {int((lab & lo.holds).sum())}"
        )


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--stores", type=Path, help="where each corpus's store is kept (required but with --smoke)")
    ap.add_argument("--only", help="comma-separated corpus names")
    ap.add_argument("--sets", type=Path, help="the labelled sets' folder and its corpora.yml (default bench/sets)")
    ap.add_argument("--whole", action="store_true", help="index whole corpora (`whole` in corpora.yml), not pages")
    ap.add_argument("--report-only", action="store_true", help="no fit: report with the shipped parameters")
    ap.add_argument("--out", type=Path, help="the params file to write (default: the model's shipped one)")
    ap.add_argument("--asked", type=Path, help="keep the asked fit questions here (pickle): a refit reuses them")
    ap.add_argument("--no-report", action="store_true", help="fit only")
    ap.add_argument("--index-only", action="store_true", help="only index the stores (ahead of a fit or report)")
    ap.add_argument("--collect-only", action="store_true", help="only ask the fit questions into --asked")
    ap.add_argument("--embedded", help="comma-separated numbers of lines embedded: answers kept, from --asked")
    ap.add_argument("--targets", help="comma-separated precision targets: abstentions leaving one fit corpus out")
    ap.add_argument("--no-ingest", action="store_true", help="ask the stores as they are, without an ingest")
    ap.add_argument("--verbose", "-v", action="store_true")
    ap.add_argument("--smoke", action="store_true", help="fit and report on a tiny made-up corpus (bench/smoke.py)")
    args = ap.parse_args()
    if not args.smoke and not args.stores:
        ap.error("--stores is required (or --smoke)")
    return args


def main() -> None:
    global INGEST, SETS
    args = parse_args()
    INGEST = not args.no_ingest
    if args.sets:
        SETS = args.sets.resolve()
    if args.smoke:
        from smoke import scratch, tiny_sets

        tmp = scratch()
        SETS, args.stores, args.out = tiny_sets(tmp / "sets"), tmp / "stores", tmp / "params.json"
    from pipeline.answers import extractive, fit, params

    only = set(args.only.split(",")) if args.only else None
    entries = [e for e in corpora() if only is None or e["name"] in only]
    configs: dict[str, Path] = {}
    for e in entries:
        c = store(e, args.stores.resolve(), args.whole)
        if isinstance(c, str):
            print(f"  {e['name']}: skipped: {c}")
        else:
            configs[e["name"]] = c
    split = {e["name"]: e["split"] for e in entries}
    if args.index_only:
        for c in configs.values():
            open_store(c).close()
        return
    if not args.report_only:
        asked, model = [], None
        kinds = fit.KINDS
        if args.asked and args.asked.exists():  # features do not depend on the weights: asked once, refit often
            model, asked = pickle.loads(args.asked.read_bytes())
            asked = refreshed(asked)
        for name, c in configs.items():
            if split[name] != "fit" or any(a.corpus == name for a in asked):
                continue
            with open_store(c) as a:
                model = a._model_id()
                asked += fit.ask(a, name, questions(name), fit.prior(kinds))
            if args.asked:  # after each corpus: a run cut short keeps what it asked
                args.asked.write_bytes(pickle.dumps((model, asked)))
        if args.collect_only:
            return
        if not asked or model is None:
            sys.exit("no fit corpus is available")
        if args.embedded:
            embedded_lines(asked, [int(k) for k in args.embedded.split(",")])
            return
        if args.targets:
            wrapped_targets(fit.abstentions_left_out(asked, [float(t) for t in args.targets.split(",")]))
            return
        out = args.out or params.file_for(model)
        lo = fit.left_out(asked, extractive.MAX_LINES)
        raw = fit.fit(asked, kinds, extractive.MAX_LINES, lo)
        params.write(out, raw)
        print(f"wrote {out}: {json.dumps(raw['fitted'])}")
        left_out_table(lo)
    for role in () if args.no_report else ("report", "fit"):
        names = [n for n in configs if split[n] == role]
        if not names:
            continue
        print(f"{role} corpora ({'never fitted on' if role == 'report' else 'fitted on'}):")
        rows = []
        for name in names:
            with open_store(configs[name]) as a:
                rows.append(report(a, name, questions(name), args.verbose))
        tot = {k: sum(r[k] for r in rows) for k in rows[0] if k not in ("p", "y")}
        print_row(f"all {role}", tot, [x for r in rows for x in r["p"]], [x for r in rows for x in r["y"]])


if __name__ == "__main__":
    main()

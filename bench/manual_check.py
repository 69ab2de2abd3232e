"""A manual as a new user meets it: ingested ad hoc, asked and verified through the real commands.

    python bench/manual_check.py --corpus mutt --path /usr/share/doc/mutt/html [--work /tmp/mc]
    python bench/manual_check.py --corpus db53 --path /usr/share/doc/db5.3-doc/programmer_reference
    python bench/manual_check.py --smoke      # a made-up manual and set (bench/smoke.py), seconds

`docforge ingest PATH` into a fresh home (WORK/<corpus>/home; kept, so a rerun is a no-op ingest),
then every question of bench/sets/<corpus>/questions.jsonl through `docforge ask --json`, one process
each as a user runs it, and every claim of claims.jsonl through `docforge verify`. Scored as issues 45
and 46 check, by plain string tests (not the answerer's own matching):
  phrase      an answerable question's answer phrase (any of its `phrases`, case and spacing folded)
              occurs in the reply's claims, candidates included;
  labelled    replies with `addresses_question` (unanswerable ones included) and how many are right;
  abstained   wrong (an answerable question) and right (an unanswerable one);
  ECE, AUROC  of `confidence` over the answered (not abstained): right against wrong
              (pipeline.answers.calibrate.calibration);
  verify      accuracy, supported accepted, unsupported refused; logical edits refused, verbatim kept.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
SETS = ROOT / "bench" / "sets"
BIN = Path(sys.executable).parent


def folded(text: str) -> str:
    return " ".join(text.split()).casefold()


def run(args: list[str], env: dict, cwd: Path, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(args, env=env, cwd=cwd, input=stdin, capture_output=True, text=True, timeout=600)


def ask_all(rows: list[dict], env: dict, cwd: Path, verbose: bool) -> dict:
    t = {"hit": 0, "n": 0, "wrong_abst": 0, "none": 0, "right_abst": 0, "labelled": 0, "labelled_right": 0}
    p: list[float] = []
    y: list[bool] = []
    for r in rows:
        res = run([str(BIN / "docforge"), "ask", "--json", r["question"]], env, cwd)
        if res.returncode != 0:
            print(f"    ERROR {r['question'][:60]}: {res.stderr.strip()[-300:]}")
            continue
        a = json.loads(res.stdout)
        body = folded(" ".join(c["text"] for c in a.get("claims") or []))
        phrases = r.get("phrases")
        right = bool(phrases) and any(folded(ph) in body for ph in phrases)
        if phrases:
            t["n"] += 1
            t["hit"] += right
            t["wrong_abst"] += bool(a["abstained"])
        else:
            t["none"] += 1
            t["right_abst"] += bool(a["abstained"])
        if not a["abstained"]:
            p.append(float(a["confidence"]))
            y.append(right)
            if a.get("addresses_question"):
                t["labelled"] += 1
                t["labelled_right"] += right
        if verbose:
            said = "+" if a.get("addresses_question") else "?"
            tag = "ABST" if a["abstained"] else ("OK  " if right else "MISS") + said
            print(f"    {tag} {float(a['confidence']):.2f} {r['question'][:90]}")
    return {**t, "p": p, "y": y}


def verify_all(claims: list[dict], env: dict, cwd: Path) -> dict:
    lines = "".join(json.dumps({"id": c["id"], "answer": c["claim"], "evidence": c["evidence"]}) + "\n" for c in claims)
    res = run([str(BIN / "docforge"), "verify", "--workers", "1"], env, cwd, stdin=lines)
    got = {v["id"]: bool(v["verified"]) for v in map(json.loads, res.stdout.splitlines()) if "id" in v}
    out: dict[str, list[int]] = {}
    for c in claims:
        ok = got.get(c["id"]) == (c["label"] == "supported")
        for k in ("all", c["label"], c.get("type", "")):
            out.setdefault(k, [0, 0])
            out[k][0] += ok
            out[k][1] += 1
    return out


def check(corpus: str, path: Path, work: Path, verbose: bool) -> None:
    d = work / corpus
    d.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "DOCFORGE_CONFIG")}
    env |= {"DOCFORGE_HOME": str(d / "home"), "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    res = run([str(BIN / "docforge"), "ingest", str(path)], env, d)
    print(f"{corpus}: ingest {path} exit {res.returncode}", flush=True)
    if res.returncode != 0:
        print(res.stderr[-2000:])
    sets = SETS / corpus
    rows = [json.loads(x) for x in (sets / "questions.jsonl").read_text(encoding="utf-8").splitlines() if x.strip()]
    t = ask_all(rows, env, d, verbose)
    from pipeline.answers.calibrate import calibration

    lab = f"{t['labelled_right']}/{t['labelled']}"
    ece, auroc = calibration(t["p"], t["y"])
    print(
        f"  asks: phrase {t['hit']}/{t['n']}, wrong abstentions {t['wrong_abst']}/{t['n']}, right abstentions"
        f" {t['right_abst']}/{t['none']}, labelled answering {lab} right, ECE {ece:.3f}, AUROC {auroc:.3f}"
        f" over {len(t['p'])} answered"
    )
    print("  pooled: " + json.dumps({"p": t["p"], "y": t["y"]}))
    claims_file = sets / "claims.jsonl"
    if claims_file.exists():
        claims = [json.loads(x) for x in claims_file.read_text(encoding="utf-8").splitlines() if x.strip()]
        v = verify_all(claims, env, d)
        print("  verify: " + ", ".join(f"{k} {a}/{n} ({a / n:.0%})" for k, (a, n) in sorted(v.items())))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", help="bench/sets/<corpus> holds its questions.jsonl (and claims.jsonl)")
    ap.add_argument("--path", type=Path, help="the manual's directory, as `docforge ingest PATH` takes it")
    ap.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "manual-check")
    ap.add_argument("--smoke", action="store_true", help="a made-up manual and set, seconds")
    ap.add_argument("-v", "--verbose", action="store_true", help="one line per question")
    args = ap.parse_args()
    if args.smoke:
        smoke()
        return
    if not args.corpus or not args.path:
        ap.error("--corpus and --path are needed (or --smoke)")
    check(args.corpus, args.path, args.work, args.verbose)


def smoke() -> None:
    """A two-page manual with one question of each kind and two claims, through the real commands."""
    global SETS
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        manual = root / "manual"
        manual.mkdir()
        (manual / "limits.html").write_text(
            "<html><head><title>Limits</title></head><body><h1>Limits</h1><h2>max_size</h2>"
            "<p>The largest message the server accepts. The default is 10M.</p></body></html>"
        )
        (manual / "ports.html").write_text(
            "<html><head><title>Ports</title></head><body><h1>Ports</h1>"
            "<p>The daemon listens on port 4411 unless another port is configured.</p></body></html>"
        )
        sets = root / "sets" / "smoke"
        sets.mkdir(parents=True)
        qs = [
            {"question": "what port does the daemon listen on?", "phrases": ["4411"]},
            {"question": "how do I configure the kubernetes operator?", "phrases": None},
        ]
        (sets / "questions.jsonl").write_text("".join(json.dumps(q) + "\n" for q in qs))
        ev = "The daemon listens on port 4411 unless another port is configured."
        cs = [
            {"id": "s/1", "evidence": ev, "claim": "The daemon uses port 4411 by default.", "label": "supported"},
            {"id": "s/2", "evidence": ev, "claim": "The daemon listens on port 4412.", "label": "unsupported"},
        ]
        (sets / "claims.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cs))
        SETS = root / "sets"
        check("smoke", manual, root / "work", verbose=True)


if __name__ == "__main__":
    main()

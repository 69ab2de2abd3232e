"""answers.py's part 1: the labelled claim set, made from a git corpus's prose by fixed rules in a seeded
order (true quotes, paraphrases, fabrications, negations, wrong pointers, wrong numbers, one-word edits),
the verifier and the bare rule measured on it, and `docforge verify`'s throughput as a user runs it."""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
import time
from pathlib import Path

from pipeline.answers import words as tx
from pipeline.answers.verify import verify

CATEGORIES = ("true_quote", "paraphrase", "fabricated", "negated", "wrong_pointer", "wrong_number", "one_word_edit")


TRUE = {"true_quote", "paraphrase"}


_ADVERBS = {
    "also",
    "currently",
    "simply",
    "just",
    "really",
    "actually",
    "generally",
    "usually",
    "typically",
    "basically",
    "still",
    "already",
    "only",
    "very",
}


_NEGATABLE = re.compile(r"\b(is|are|was|were|can|will|should|must|does|do)\b(?! not)")


_NEGATED = re.compile(
    r"\b(is|are|was|were|can|will|should|must|does|do) not\b|\b(isn't|aren't|can't|cannot|"
    r"won't|doesn't|don't)\b"
)


_NUMBER_WORDS = {"two": "three", "three": "four", "four": "five", "five": "two", "six": "seven", "ten": "eleven"}


def prose_blocks(markdown: str) -> list[str]:
    """Paragraphs and list items of a markdown RFC (the claims' evidence blocks): code fences, tables,
    headings and HTML left out. Only this bench reads markdown so; the answer layer reads typed blocks."""
    blocks: list[str] = []
    cur: list[str] = []
    fenced = False

    def flush():
        if cur:
            blocks.append(" ".join(cur))
            cur.clear()

    for line in markdown.splitlines():
        s = line.strip()
        if s.startswith(("```", "~~~")):
            fenced = not fenced
            flush()
            continue
        if fenced or line.startswith(("    ", "\t")) and not cur:
            continue
        if not s or s.startswith(("#", "|", "<", ">", "[^")) or re.fullmatch(r"[-=*_ ]{3,}", s):
            flush()
            continue
        if re.match(r"([-*+]|\d+[.)])\s+", s):  # a list item starts a block of its own
            flush()
        cur.append(s)
    flush()
    return blocks


def rfc_paragraphs(repo: Path) -> dict[str, list[str]]:
    """Prose paragraphs of every RFC, with at least three sentences each."""
    out = {}
    for f in sorted((repo / "text").glob("*.md")):
        paras = [
            p for p in prose_blocks(f.read_text(encoding="utf-8")) if len(tx.split_sentences(p)) >= 3 and "[E" not in p
        ]
        if paras:
            out[f.stem] = paras
    return out


def _good(s: str) -> bool:
    n = len(tx.words(s))
    return 6 <= n <= 45 and sum(c.isalpha() for c in s) > 0.6 * len(s)


def claim_set(repo: Path, n_blocks: int = 400, seed: int = 7) -> list[dict]:
    rng = random.Random(seed)
    paras = rfc_paragraphs(repo)
    names = sorted(paras)
    vocab = sorted({w for ps in paras.values() for p in ps for w in re.findall(r"\b[a-z]{5,}\b", p)})
    items: list[dict] = []
    for _ in range(n_blocks):
        name, other = rng.sample(names, 2)
        block = rng.choice(paras[name])
        other_block = rng.choice(paras[other])
        sents = [s for s in tx.split_sentences(block) if _good(s)]
        foreign = [s for s in tx.split_sentences(other_block) if _good(s)]
        if not sents or not foreign:
            continue
        s = rng.choice(sents)
        ev = {"E1": block, "E2": other_block}

        def add(label: str, answer: str, evidence=ev, rfc=name):
            items.append({"label": label, "rfc": rfc, "answer": answer, "evidence": evidence})

        add("true_quote", f"{s} [E1]" if rng.random() < 0.7 else f'The RFC says "{s.rstrip(".")}". [E1]')
        para = _paraphrase(s, rng)
        if para and para != s:
            add("paraphrase", f"{para} [E1]")
        add("one_word_edit", f"{_replace_word(s, block, vocab, rng)} [E1]")
        add("fabricated", f"{rng.choice(foreign)} [E1]")
        splice = _splice(s, rng.choice(foreign))
        if splice:
            add("fabricated", f"{splice} [E1]")
        neg = _negate(s)
        if neg:
            add("negated", f"{neg} [E1]")
        add("wrong_pointer", f"{s} [E2]" if rng.random() < 0.5 else f"{s} [E3]")
        num = _change_number(s, rng)
        if num:
            add("wrong_number", f"{num} [E1]")
    return items


def _paraphrase(s: str, rng: random.Random) -> str | None:
    out = re.sub(r"\s*\([^()]{1,80}\)", "", s)
    out = " ".join(w for w in out.split() if w.lower().strip(",") not in _ADVERBS)
    m = re.search(r"\b(\w+) and (\w+)\b", out)
    if m and rng.random() < 0.5:
        out = out[: m.start()] + f"{m.group(2)} and {m.group(1)}" + out[m.end() :]
    words = out.split()
    idx = [i for i, w in enumerate(words) if re.fullmatch(r"[a-z]{4,}[^s]s", w)]
    if idx and rng.random() < 0.5:
        i = rng.choice(idx)
        words[i] = words[i][:-1]
    return " ".join(words)


def _replace_word(s: str, block: str, vocab: list[str], rng: random.Random) -> str:
    words = s.split()
    idx = [i for i, w in enumerate(words) if re.fullmatch(r"[a-z]{5,}", w) and w not in tx.STOPWORDS]
    present = set(tx.content_keys(block))
    if not idx:
        return s + " It was removed in Rust 2.0."
    i = rng.choice(idx)
    for _ in range(50):
        w = rng.choice(vocab)
        if tx.key(w) not in present:
            words[i] = w
            return " ".join(words)
    return s + " It was removed in Rust 2.0."


def _splice(s: str, foreign: str) -> str | None:
    a, b = s.split(), foreign.split()
    if len(a) < 6 or len(b) < 6:
        return None
    return " ".join(a[: len(a) // 2] + b[len(b) // 2 :])


def _negate(s: str) -> str | None:
    if _NEGATED.search(s):
        return _NEGATED.sub(
            lambda m: (
                m.group(1)
                or {
                    "isn't": "is",
                    "aren't": "are",
                    "can't": "can",
                    "cannot": "can",
                    "won't": "will",
                    "doesn't": "does",
                    "don't": "do",
                }[m.group(2).lower()]
            ),
            s,
            count=1,
        )
    if _NEGATABLE.search(s):
        return _NEGATABLE.sub(lambda m: m.group(1) + " not", s, count=1)
    return None


def _change_number(s: str, rng: random.Random) -> str | None:
    m = re.search(r"\b(\d{4})-(\d{2})-(\d{2})\b", s)
    if m:
        return s[: m.start()] + f"{int(m.group(1)) + rng.randint(1, 3)}-{m.group(2)}-{m.group(3)}" + s[m.end() :]
    m = re.search(r"\b\d+\b", s)
    if m:
        return s[: m.start()] + str(int(m.group(0)) + rng.randint(1, 9)) + s[m.end() :]
    m = re.search(r"\b(" + "|".join(_NUMBER_WORDS) + r")\b", s)
    if m:
        return s[: m.start()] + _NUMBER_WORDS[m.group(1)] + s[m.end() :]
    return None


def bare_rule(answer: str, evidence: dict[str, str]) -> bool:
    """The baseline: every non-stopword word of the answer occurs somewhere in the evidence."""
    text = re.sub(r"\[E\d+\]", " ", answer)
    have = {w for t in evidence.values() for w in tx.words(t)}
    return all(w in have for w in tx.words(text) if tx.is_content(w))


def bench_verifier(repo: Path, claims_out: Path | None, answers: int = 5000, blocks: int = 400) -> None:
    items = claim_set(repo, n_blocks=blocks)
    counts = {c: [0, 0, 0] for c in CATEGORIES}  # passed by us, total, passed by the bare rule
    t = time.perf_counter()
    verdicts = [verify(i["answer"], i["evidence"]).verified for i in items]
    per_claim_ms = (time.perf_counter() - t) * 1000 / len(items)
    ours = base = 0
    for item, ok in zip(items, verdicts, strict=False):
        c = counts[item["label"]]
        c[0] += ok
        c[1] += 1
        b = bare_rule(item["answer"], {k: v for k, v in item["evidence"].items() if f"[{k}]" in item["answer"]})
        c[2] += b
        truth = item["label"] in TRUE
        ours += ok == truth
        base += b == truth
    print(f"labelled claims: {len(items)} from {len({i['rfc'] for i in items})} RFCs (rust-rfcs snapshot-5)")
    print(f"  {'category':<14} {'n':>5}  {'verifier passes':>16}  {'bare rule passes':>17}")
    for cat in CATEGORIES:
        ok, n, b = counts[cat]
        want = "pass" if cat in TRUE else "flag"
        print(f"  {cat:<14} {n:>5}  {ok:>7} ({ok / n:6.1%})  {b:>8} ({b / n:6.1%})   should {want}")
    subtle = [(i, ok) for i, ok in zip(items, verdicts, strict=False) if i["label"] != "one_word_edit"]
    ours_x = sum(ok == (i["label"] in TRUE) for i, ok in subtle)
    base_x = sum(
        bare_rule(i["answer"], {k: v for k, v in i["evidence"].items() if f"[{k}]" in i["answer"]})
        == (i["label"] in TRUE)
        for i, _ in subtle
    )
    print(
        f"  accuracy: verifier {ours / len(items):.1%}, bare rule {base / len(items):.1%}; without one_word_edit: "
        f"verifier {ours_x / len(subtle):.1%}, bare rule {base_x / len(subtle):.1%}; "
        f"{per_claim_ms:.2f} ms per claim in process"
    )
    if claims_out:
        claims_out.write_text("".join(json.dumps(i) + "\n" for i in items))
        bench_verify_command(repo, claims_out.with_name(f"verify-{answers}.jsonl"), answers)


def bench_verify_command(repo: Path, path: Path, n: int = 5000) -> None:
    """`docforge verify` as a user runs it, process start included, over n distinct answers: one worker
    (the baseline) against the default (one per CPU) and one per CPU named."""
    items, seen = [], set()
    for i in claim_set(repo, n_blocks=900, seed=11):
        key = (i["answer"], json.dumps(i["evidence"], sort_keys=True))
        if key not in seen:
            seen.add(key)
            items.append(i)
    items = items[:n]
    path.write_text("".join(json.dumps(i) + "\n" for i in items))
    exe = str(Path(sys.executable).parent / "docforge")
    rates = {}
    cpus = len(os.sched_getaffinity(0))
    runs = (("1 worker", ["--workers", "1"]), ("default", []), (f"{cpus} workers", ["--workers", str(cpus)]))
    for label, extra in runs:
        t = time.perf_counter()
        res = subprocess.run([exe, "verify", str(path), "-o", os.devnull, *extra], capture_output=True, text=True)
        s = time.perf_counter() - t
        rates[label] = len(items) / s
        print(
            f"  `docforge verify` ({label}, {os.cpu_count()} CPUs): {len(items):,} answers in {s:.2f} s, "
            f"{rates[label]:,.0f} answers/s, process start included (exit {res.returncode})"
        )
    print("  against 1 worker: " + ", ".join(f"{k} {v / rates['1 worker']:.2f}x" for k, v in rates.items()))

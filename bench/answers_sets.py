"""answers.py's parts 3 and 5: the labelled answer set (bench/answers_dev.jsonl) over one corpus's store,
extractive and with the scripted LLM, by confidence band; and extractive `ask` speed, cold and warm."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

from metrics import pct

DEV_SET = Path(__file__).with_name("answers_dev.jsonl")


BANDS = ((0.0, 0.5), (0.5, 0.7), (0.7, 0.8), (0.8, 1.01))


CORPORA = {"uv": "uv-docs.bundle", "rfcs": "rust-rfcs-md.bundle"}


def dev_rows(corpus: str, split: str) -> list[dict]:
    rows = [json.loads(line) for line in DEV_SET.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [r for r in rows if r["corpus"] == corpus and split in ("all", r["split"])]


def dev_store(store: Path, corpus: str, data: Path) -> Path:
    """DIR/sources.yml over DIR/repo (cloned from the corpus bundle when absent), ingested into DIR/home."""
    config = store / "sources.yml"
    if not config.exists():
        store.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "clone", "-q", str(data / "corpus" / CORPORA[corpus]), str(store / "repo")], check=True)
        config.write_text(f"sources:\n  - name: {corpus}\n    type: git\n    repo: repo\n    globs: ['**/*.md']\n")
    os.environ["DOCFORGE_HOME"] = str(store / "home")
    os.environ.pop("DATABASE_URL", None)
    return config


def bench_dev(args) -> None:
    from pydantic import SecretStr

    from pipeline.answers import Answerer
    from pipeline.answers.fit import holds_phrase
    from pipeline.answers.llm import ChatClient
    from pipeline.config import LLMConfig, load_settings
    from pipeline.ingest import IngestContext, ingest_source
    from pipeline.query import Searcher
    from tests.llm_double import LLMDouble

    config = dev_store(args.store, args.dev, args.data)
    os.chdir(config.parent)
    settings = load_settings(config)
    ingest_source(IngestContext(settings), settings.sources[0].name)  # a no-op on a kept store
    rows = dev_rows(args.dev, args.split)
    searcher = Searcher(settings)
    searcher.search("warm up the model", 1)

    def run(answerer, label: str) -> None:
        hit = wrong = right = n_ans = n_none = 0
        bands = {b: [0, 0] for b in BANDS}
        for r in rows:
            a = answerer.ask(r["question"], use_cache=False)
            body = "\n".join(c["text"] for c in a.claims)
            if r["phrases"] is None:
                n_none += 1
                right += a.abstained or a.audit_mode == "UNGROUNDED"
                continue
            n_ans += 1
            ok = holds_phrase(body, r["phrases"])
            hit += ok
            wrong += a.abstained
            if not a.abstained:
                band = next(b for b in BANDS if b[0] <= a.confidence < b[1])
                bands[band][0] += ok
                bands[band][1] += 1
            if args.verbose:
                print(f"    {'OK  ' if ok else 'MISS'} {a.confidence:.2f} {r['question']}")
        print(
            f"{label} ({args.dev}, split {args.split}): phrase in the answer {hit}/{n_ans}, wrong abstentions "
            f"{wrong}/{n_ans}, right abstentions {right}/{n_none}"
        )
        for (lo, hi), (ok, n) in bands.items():
            if n:
                print(f"    confidence {lo:.1f}–{min(hi, 1.0):.1f}: {n:>3} answers, {ok / n:6.1%} contain the phrase")

    with Answerer(settings, searcher=searcher, llm=None) as a:
        run(a, "extractive")
    with LLMDouble() as llm:
        client = ChatClient(LLMConfig(base_url=llm.base_url, model="scripted", api_key=SecretStr("bench")))
        with Answerer(settings, searcher=searcher, llm=client) as a:
            run(a, "scripted LLM (first sentence of E1)")
    searcher.close()


def bench_ask_speed(args) -> None:
    """Extractive `ask` over a --dev store: the labelled questions once cold (line vectors computed and
    stored), then again warm (looked up), single client p50/p95, then 8 client threads answered/s; the
    warm answers must equal the cold ones (the cache of vectors changes no answer)."""
    import threading

    from pipeline.answers import Answerer
    from pipeline.config import load_settings
    from pipeline.ingest import IngestContext, ingest_source
    from pipeline.query import Searcher

    config = dev_store(args.store, args.dev, args.data)
    os.chdir(config.parent)
    settings = load_settings(config)
    ingest_source(IngestContext(settings), settings.sources[0].name)
    qs = [r["question"] for r in dev_rows(args.dev, "all")]
    searcher = Searcher(settings)
    searcher.search("warm up the model", 1)

    def once(a, q):
        t = time.perf_counter()
        r = a.ask(q, use_cache=False)
        return (time.perf_counter() - t) * 1000, [c["text"] for c in r.claims]

    def cold_pass() -> list:
        """Each question once on a new searcher (no vectors in the process) over no stored line vectors."""
        fresh = Searcher(settings)
        fresh.search("warm up the model", 1)
        with fresh.connection() as conn:  # the ingest above migrated the store
            conn.execute("DELETE FROM sentence_vectors")
        with Answerer(settings, searcher=fresh, llm=None) as a:
            out = [once(a, q) for q in qs]
        fresh.close()
        return out

    from pipeline.answers import extractive

    shipped, extractive.EMBEDDED = extractive.EMBEDDED, 0  # the baseline: every candidate line embedded
    every = cold_pass()
    extractive.EMBEDDED = shipped
    cold = cold_pass()
    with Answerer(settings, searcher=searcher, llm=None) as a:  # a new process would see the same: the store
        warm = [once(a, q) for q in qs]
        same = sum(c[1] == w[1] for c, w in zip(cold, warm, strict=True))
        done, lock = [], threading.Lock()
        t0 = time.perf_counter()

        def client(k: int) -> None:
            for q in qs[k::8]:
                ms, _ = once(a, q)
                with lock:
                    done.append(ms)

        threads = [threading.Thread(target=client, args=(k,)) for k in range(8)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        rate = len(done) / (time.perf_counter() - t0)
    rows = (
        (f"cold, all {extractive.MAX_CANDIDATES} embedded", [c[0] for c in every]),
        (f"cold, {shipped} embedded", [c[0] for c in cold]),
        (f"warm, {shipped} embedded", [w[0] for w in warm]),
    )
    for label, xs in rows:
        print(f"extractive ask, {label:<20} p50 {pct(xs, 50):7.1f} ms   p95 {pct(xs, 95):7.1f} ms")
    print(
        f"cold p50, {shipped} embedded ÷ all: {pct(rows[1][1], 50) / pct(rows[0][1], 50):.2f}; "
        f"same answers as all embedded {sum(e[1] == c[1] for e, c in zip(every, cold, strict=True))}/{len(qs)}"
    )
    print(f"8 clients, warm: {rate:5.2f} answered/s (p50 {pct(done, 50):.0f} ms); same answers {same}/{len(qs)}")
    searcher.close()

"""answers.py's part 2: `ask` latency per stage over an indexed corpus, extractive and against a scripted
OpenAI-compatible server, cache hits, and how many dev questions are STRICT and cite the expected file."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from metrics import pct

# Dev questions over the rfcs corpus, asked as a user would (not titles), with the RFC that answers them.
QUESTIONS = [
    ("How can a closure be turned into a plain function pointer?", "1558-closure-to-fn-coercion"),
    ("Is there a method to restrict a number to lie between a minimum and a maximum?", "1961-clamp"),
    ("How do I match several alternatives in one match arm pattern?", "2535-or-patterns"),
    ("How do the nightly, beta and stable release channels relate?", "0507-release-channels"),
    ("How can I swap the value inside a RefCell and get the old one back?", "2057-refcell-replace"),
    ("How do I spawn a child process in a new process group?", "3228-process-process_group"),
    ("Can I write true and false directly inside a cfg attribute?", "3695-cfg-boolean-literals"),
    ("When can lifetimes be left out of function signatures?", "0141-lifetime-elision"),
    ("How are changes to the language proposed and accepted through RFCs?", "0002-rfc-process"),
    (
        "How can a crate declare which of its dependencies are public and which private?",
        "1977-public-private-dependencies",
    ),
    ("Can I bound an associated type inline, like T: Iterator<Item: Debug>?", "2289-associated-type-bounds"),
    ("Why was the green threading runtime taken out of the standard library?", "0230-remove-runtime"),
    ("How can someone delete a crate they published on crates.io?", "3660-crates-io-crate-deletions"),
    ("How should doc comments on public APIs be written?", "0505-api-comment-conventions"),
    ("How should traits that extend existing types be named?", "0445-extension-trait-conventions"),
    ("Should enum variants be namespaced under their enum?", "0234-variants-namespace"),
    ("What does the operational semantics team do?", "3346-t-opsem"),
    ("How are unions with fields that need dropping initialized?", "2514-union-initialization-and-drop"),
    ("Can byte string literals be concatenated at compile time?", "2509-byte-concat"),
    ("What is the Rust Foundation Maintainer Fund?", "3931-rfmf-rust-foundation-maintainer-fund"),
    ("How can I link a native library with modifiers such as whole-archive?", "2951-native-link-modifiers"),
    ("Can cfg attributes be applied to individual bounds in a where clause?", "3399-cfg-attribute-in-where"),
    ("Is the field order of a struct without a repr attribute guaranteed?", "0079-undefined-struct-layout"),
    ("How can security mitigations be enforced consistently across all crates?", "3855-mitigation-enforcement"),
    ("How can I set a different edition for one build target in Cargo?", "3772-build-target-edition"),
    ("How can trait objects and generic types carry lifetime bounds?", "0192-bounds-on-object-and-generic-types"),
    ("How do I make a Cell that can move values in and out?", "1651-movecell"),
    ("How do macros match literal tokens in their arguments?", "1576-macros-literal-matcher"),
    ("How is the standard library split into a facade over smaller crates?", "0040-libstd-facade"),
    ("How should the error type of a function chain to an underlying cause?", "0201-error-chaining"),
]


def bench_ask(args, repo: Path) -> None:
    from pydantic import SecretStr

    from pipeline.answers import Answerer
    from pipeline.answers.llm import ChatClient
    from pipeline.config import LLMConfig, load_settings
    from pipeline.ingest import IngestContext, ingest_source
    from pipeline.query import Searcher
    from tests.llm_double import LLMDouble

    cfg = args.home / "sources.yml"
    cfg.write_text(
        json.dumps(
            {
                "sources": [{"name": "rfcs", "type": "git", "repo": str(repo), "globs": ["**/*.md"]}],
                "embedding": {"backend": args.backend},
            }
        )
    )
    os.environ["DOCFORGE_HOME"] = str(args.home / "home")
    settings = load_settings(cfg)
    t = time.perf_counter()
    stats = ingest_source(IngestContext(settings), "rfcs")
    print(
        f"index: {stats.files_added + stats.files_updated + stats.files_unchanged} documents, "
        f"{stats.chunks_indexed + stats.chunks_reused} chunks ({time.perf_counter() - t:.1f} s to ingest or check)"
    )
    searcher = Searcher(settings)
    searcher.search("warm up the model", 1)

    def run(answerer, label: str, questions, llm_ms_known: bool) -> None:
        stage: dict[str, list[float]] = {}
        overhead, total, hits = [], [], []
        for q, _ in questions:
            a = answerer.ask(q, use_cache=False)
            for k, v in a.timings.items():
                stage.setdefault(k, []).append(v)
            total.append(a.latency_ms)
            overhead.append(a.latency_ms - a.llm_ms)
        for q, _ in questions:
            h = answerer.ask(q)
            assert h.cache == "hit", h.cache
            hits.append(h.latency_ms)
        print(f"{label}: {len(questions)} questions")
        for k in ("cache_lookup", "classify", "retrieve", "reason", "respond", "verify", "cache_write"):
            if k in stage:
                print(f"  {k:<13} p50 {pct(stage[k], 50):7.2f} ms   p95 {pct(stage[k], 95):7.2f} ms")
        print(f"  ask total     p50 {pct(total, 50):7.2f} ms   p95 {pct(total, 95):7.2f} ms")
        if llm_ms_known:
            print(
                f"  ask minus LLM p50 {pct(overhead, 50):7.2f} ms   p95 {pct(overhead, 95):7.2f} ms  (target p50 ≤ 60)"
            )
        print(f"  cache hit     p50 {pct(hits, 50):7.2f} ms   p95 {pct(hits, 95):7.2f} ms  (target p50 ≤ 10)")

    with Answerer(settings, searcher=searcher, llm=None) as a:
        strict = right = 0
        for q, rfc in QUESTIONS:
            r = a.ask(q, use_cache=False)
            strict += r.audit_mode == "STRICT"
            cited = [c.doc_key for c in r.citations]
            ok = any(rfc in k for k in cited)
            right += r.audit_mode == "STRICT" and ok
            if args.verbose:
                print(f"  {'OK ' if ok else 'MISS'} {r.audit_mode:<10} {rfc:<45} {q}\n      cites {cited}")
        print(
            f"extractive dev questions: {strict}/{len(QUESTIONS)} STRICT, {right}/{len(QUESTIONS)} STRICT and "
            f"citing the expected RFC (target ≥ 90 %)"
        )
        run(a, "extractive (no LLM)", QUESTIONS, llm_ms_known=False)
    with LLMDouble() as llm:
        client = ChatClient(LLMConfig(base_url=llm.base_url, model="scripted", api_key=SecretStr("bench")))
        with Answerer(settings, searcher=searcher, llm=client) as a:
            run(a, "scripted LLM server (classify, 1 reason, respond)", QUESTIONS, llm_ms_known=True)
    searcher.close()

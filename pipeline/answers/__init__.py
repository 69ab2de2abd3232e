"""Grounded answers: retrieve, reason, respond with cited claims that are verified, cached and provable.

loop        Answerer.ask: cache → classify → retrieve ⇄ reason → respond → verify → render → record
run         the loop's values: Run (accumulated), Draft (an unverified answer), Checked (verified)
llm         an OpenAI-compatible chat client (httpx): retries, clear errors, no key in any output
prompts     the three prompts and tolerant parsing of their replies
retrieve    search scope and the numbered, deduplicated evidence pool
extractive  answers without an LLM: verbatim best-supported sentences
verify      the deterministic lexical verifier (also `docforge verify`), a package cut by job
render      the answer as people read it
cache       the cache key and the `answers` table
provenance  the hash chain of an answer's stages, and its re-check
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pipeline.answers.loop import Answerer
    from pipeline.answers.model import Answer, Claim, Evidence, Verdict

# (`verify` stays the module: pipeline.answers.verify.verify is the verifier's entry point.)
__all__ = ["Answer", "Answerer", "Claim", "Evidence", "Verdict"]
_HOME = {"Answerer": "loop", "Answer": "model", "Claim": "model", "Evidence": "model", "Verdict": "model"}


def __getattr__(name: str):
    """Loaded on first use: `docforge verify` needs the verifier, not the store and the embedding stack."""
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_HOME[name]}"), name)

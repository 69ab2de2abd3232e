"""The answer cache's key: sha256 over everything an answer depends on.

The key is sha256 over canonical JSON of:

- the state of the indexed sources in scope: a digest of (document key, content hash, access) of every
  document of those sources (count, and XOR and sum of two seeded 64-bit hashes), so an ingest that
  changes a document, or who may read it, changes it and a no-op ingest does not; plus the chunking
  fingerprints of the ledger and the store's embedding model;
- the question in its canonical form (`canonical_question`, mode `strict` or `equivalence`);
- the model profile (base_url, model, temperature, max_tokens, prompts' version; or the extractive
  answerer's version), the conversation's prior turns, the request's scope (the caller's access
  fingerprint: `full`, or a hash of its sorted principals, so one caller's answer is never served to
  another who may read otherwise; filters, a `filter_repo` among them, mode, rerank, boost tags;
  max_iterations with an LLM), the search and answers settings, the schema version, CANON_VERSION,
  the verifier's policy, and the verifier's code-and-parameters digest (`verifier_digest`), for LLM
  answers as for extractive ones.

The store runs the statements (pipeline.store.answers): the store's state read for the key, and the
`answers` table, whose `lookup` serves a stored answer only while its evidence is what the store holds
now (every chunk each evidence block joins, re-read and hashed in the statement that finds the answer).
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from pathlib import Path
from typing import Any

from pipeline.answers import words as tx

CANON_VERSION = "1"
KEY_VERSION = "1"
# Words a rephrasing adds or drops without changing the question (equivalence mode).
_FILLER = frozenset(
    """please pls kindly can could would you tell me explain know i we want wanted like to
hey hi hello thanks thank quick question""".split()
)


def canonical_question(question: str, mode: str = "strict") -> str:
    """`strict`: case, width and whitespace folded, trailing punctuation dropped.
    `equivalence`: also punctuation, stopwords and filler words dropped, each word stemmed
    (word order kept: "does A cause B" and "does B cause A" stay different)."""
    folded = " ".join(tx.fold(question).split()).rstrip(" ?!.")
    if mode == "strict":
        return folded
    if mode != "equivalence":
        raise ValueError(f"unknown cache mode {mode!r}")
    out = []
    for w in tx.words(folded):
        if w in _FILLER or (w in tx.STOPWORDS and w not in _KEEP):
            continue
        out.append(tx.key(w))
    return " ".join(out)


# Question words and negations decide what is asked: never dropped.
_KEEP = frozenset({"what", "why", "how", "when", "where", "which", "who", "whom", "whose", "whether"})


def scope_sources(filters: dict | None) -> list[str] | None:
    """Source names a filter pins at its top level ({"source": "x"} / $eq / $in), else None (all)."""
    if not isinstance(filters, dict):
        return None
    if "$and" in filters and isinstance(filters["$and"], list):
        for part in filters["$and"]:
            found = scope_sources(part)
            if found is not None:
                return found
    v = filters.get("source")
    if isinstance(v, str):
        return [v]
    if isinstance(v, list) and all(isinstance(x, str) for x in v):
        return sorted(v)
    if isinstance(v, dict) and len(v) == 1:
        ((op, arg),) = v.items()
        if op == "$eq" and isinstance(arg, str):
            return [arg]
        if op == "$in" and isinstance(arg, list) and all(isinstance(x, str) for x in arg):
            return sorted(arg)
    return None


def cache_key(parts: dict[str, Any]) -> str:
    return hashlib.sha256(
        canonical_json({"key_version": KEY_VERSION, "canon_version": CANON_VERSION, **parts}).encode()
    ).hexdigest()


ANSWERS = Path(__file__).parent  # pipeline/answers


@functools.cache
def verifier_digest() -> str:
    """sha256 of what a verdict depends on: the source of the verifier package (pipeline/answers/verify)
    and of every pipeline.answers module it imports, directly or not (found by reading their imports, so
    it stays right as the verifier changes), and every parameters file under pipeline/answers/params/
    (the verifier's own among them; the policy in force, a config path's included, is in the key apart)."""
    files = set((ANSWERS / "verify").rglob("*.py"))
    todo = list(files)
    while todo:
        for name in _answers_imports(todo.pop()):
            rel = Path(*name.split(".")[2:])
            for f in (ANSWERS / rel.with_suffix(".py"), ANSWERS / rel / "__init__.py"):
                if f.is_file() and f not in files:
                    files.add(f)
                    todo.append(f)
    files |= {f for f in (ANSWERS / "params").rglob("*") if f.is_file()}
    h = hashlib.sha256()
    for f in sorted(files):
        h.update(f.relative_to(ANSWERS).as_posix().encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()


_FROM = re.compile(r"^\s*from\s+(pipeline\.answers[\w.]*)\s+import\s+(\([^)]*\)|[^\n]*)", re.M)
_IMPORT = re.compile(r"^\s*import\s+(pipeline\.answers\.[\w.]+)", re.M)


def _answers_imports(path: Path) -> list[str]:
    """The pipeline.answers modules `path` imports (`from pipeline.answers import words` names a module)."""
    text = re.sub(r"#[^\n]*", "", path.read_text(encoding="utf-8"))
    out = _IMPORT.findall(text)
    for module, names in _FROM.findall(text):
        out += [module, *(f"{module}.{n.split()[0]}" for n in names.strip("()").split(",") if n.strip())]
    return [n for n in out if n.startswith("pipeline.answers.")]


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)

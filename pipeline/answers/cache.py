"""The answer cache: a key over everything an answer depends on, and the `answers` table (migration 0005).

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

A stored answer is served only while its evidence is what the store holds now (`lookup`): every chunk
each evidence block joins, re-read and hashed in the statement that finds the answer. A chunk changed
under it (without an ingest, which would change the key) makes it a miss, and the answer is recomputed.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from pipeline.answers import words as tx
from pipeline.query.hits import JOIN

CANON_VERSION = "1"
KEY_VERSION = "1"
# Words a rephrasing adds or drops without changing the question (equivalence mode).
_FILLER = frozenset(
    """please pls kindly can could would you tell me explain know i we want wanted like to
hey hi hello thanks thank quick question""".split()
)

# The documents' digest: XOR and sum of two differently seeded 64-bit hashes of (key, content hash, access):
# order-free, so no sort, and one pass (0.3-0.5 ms at 650 documents where an md5 over the sorted
# rows took 3); keys are unique, so no two rows cancel out in the XOR.
_STATE = """
SELECT (SELECT count(*) || ':' || coalesce(bit_xor(hashtextextended(x.line, 0)), 0)
               || ':' || coalesce(sum(hashtextextended(x.line, 1)::numeric), 0)
          FROM documents d
          CROSS JOIN LATERAL (SELECT d.key || ':' || d.content_hash || coalesce(d.access::text, '') AS line) x
          WHERE %(all)s OR d.source = ANY(%(sources)s)),
       (SELECT coalesce(string_agg(DISTINCT chunker, ',' ORDER BY chunker), '') FROM ledger),
       (SELECT max(version) FROM schema_migrations),
       (SELECT coalesce(string_agg(key || '=' || value, ',' ORDER BY key), '') FROM docforge_meta)
           || ';generation=' || coalesce((SELECT id::text FROM generations WHERE state = 'live'), '')  -- 0007
"""


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


def store_state(conn: psycopg.Connection, sources: list[str] | None) -> dict[str, Any]:
    """What the answer depends on in the store (one round trip)."""
    row = conn.execute(_STATE, {"all": sources is None, "sources": sources or []}).fetchone()
    assert row is not None  # an aggregate always returns a row
    return {"documents": row[0], "chunkers": row[1], "schema": row[2], "meta": row[3], "sources": sources}


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


# --- the table ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Stored:
    id: str
    cache_key: str
    question: str
    model: str
    audit_mode: str
    dag_root: str
    answer: dict[str, Any]
    stages: list[dict[str, Any]]
    created_at: Any
    hits: int
    fresh: bool = True  # its evidence is what the store holds now (`lookup`; `get` does not look)


_COLS = "id, cache_key, question, model, audit_mode, dag_root, answer, stages, created_at, hits"

# The newest answer under a key, whether every evidence block of it is still what its chunks hold (their
# texts now, joined as the search joined them, hash to the block's recorded hash; a block recorded with
# one chunk id is read as that chunk), and a hit counted only when it is. Each chunk is read by its key
# (a subquery per id): joined, the planner guessed 100 ids per JSON array and hashed the whole chunks
# table on every lookup, which a cold store reads from disk (seconds on a large index).
_LOOKUP = f"""
WITH newest AS (
    SELECT {_COLS} FROM answers WHERE cache_key = %(key)s ORDER BY created_at DESC LIMIT 1
), blocks AS (
    SELECT b.value AS block, b.ordinality AS n
    FROM newest,
         LATERAL (SELECT s->'payload' AS p FROM jsonb_array_elements(newest.stages) s
                  WHERE s->>'stage' = 'evidence') ev,
         LATERAL jsonb_array_elements(CASE WHEN jsonb_typeof(ev.p) = 'array' THEN ev.p ELSE '[]' END)
             WITH ORDINALITY b
), changed AS (
    SELECT count(*) AS n FROM (
        SELECT bl.block->>'text_hash' AS recorded,
               encode(sha256(convert_to(string_agg(part.text, %(join)s ORDER BY part.i), 'UTF8')), 'hex') AS now,
               count(part.text) AS found, count(*) AS wanted
        FROM blocks bl
        CROSS JOIN LATERAL (
            SELECT p.i, (SELECT c.text FROM chunks c WHERE c.id = p.id) AS text  -- by its key, one at a time
            FROM jsonb_array_elements_text(
                CASE WHEN jsonb_typeof(bl.block->'chunk_ids') = 'array'
                          AND jsonb_array_length(bl.block->'chunk_ids') > 0
                     THEN bl.block->'chunk_ids' ELSE jsonb_build_array(bl.block->'chunk_id') END
            ) WITH ORDINALITY p(id, i)
        ) part
        GROUP BY bl.n, bl.block->>'text_hash'
    ) b WHERE b.found < b.wanted OR b.now IS DISTINCT FROM b.recorded
), counted AS (
    UPDATE answers a SET hits = a.hits + 1, last_hit_at = now()
    FROM newest, changed WHERE a.id = newest.id AND changed.n = 0
    RETURNING a.hits
)
SELECT {_COLS.replace("hits", "coalesce((SELECT hits FROM counted), newest.hits)")}, changed.n = 0
FROM newest, changed
"""


def lookup(conn: psycopg.Connection, key: str) -> Stored | None:
    """The newest answer stored under `key`, counted as a hit when its evidence is unchanged; one whose
    evidence changed comes back with `fresh` False and uncounted (the caller answers afresh)."""
    row = conn.execute(_LOOKUP, {"key": key, "join": JOIN}).fetchone()
    return Stored(*row) if row else None


def get(conn: psycopg.Connection, answer_id: str) -> Stored | None:
    row = conn.execute(f"SELECT {_COLS} FROM answers WHERE id = %s", (answer_id,)).fetchone()
    return Stored(*row) if row else None


def store(
    conn: psycopg.Connection,
    *,
    answer_id: str,
    key: str,
    question: str,
    model: str,
    audit_mode: str,
    dag_root: str,
    answer: dict[str, Any],
    stages: list[dict[str, Any]],
) -> None:
    conn.execute(
        "INSERT INTO answers (id, cache_key, question, model, audit_mode, dag_root, answer, stages) "
        "VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
        (answer_id, key, question, model, audit_mode, dag_root, Jsonb(answer), Jsonb(stages)),
    )


def purge(conn: psycopg.Connection) -> int:
    """Delete every stored answer; returns how many there were."""
    if not (conn.execute("SELECT to_regclass('answers')").fetchone() or [None])[0]:
        return 0
    return conn.execute("DELETE FROM answers").rowcount

"""The keyword index's count of the chunks that hold a word: what the answer layer weighs a question's
words by (IDF, pipeline.answers.subject.corpus_stats)."""

from __future__ import annotations

from collections.abc import Sequence

import psycopg
from psycopg import sql

from pipeline.query.statements import text


def term_counts(conn: psycopg.Connection, words: Sequence[str]) -> list[tuple[str, str | None, int, int | None]]:
    """Per word: (the word, its lexeme or None for a keyword-index stopword, chunks holding it, chunks
    indexed or None without keyword statistics); [] for a store without the keyword index's tables."""
    try:
        return conn.execute(sql.SQL(text("terms")), {"words": list(words)}).fetchall()
    except psycopg.Error:
        conn.rollback()
        return []


def anchor_counts(conn: psycopg.Connection, anchors: Sequence[str], cap: int) -> dict[str, int]:
    """Per anchor as written: the chunks holding it as a phrase, up to `cap` (an anchor of stopwords only
    is left out); {} for a store without the keyword index."""
    if not anchors:
        return {}
    try:
        rows = conn.execute(sql.SQL(text("anchors")), {"anchors": list(anchors), "cap": cap}).fetchall()
    except psycopg.Error:
        conn.rollback()
        return {}
    return {a: int(n) for a, n in rows if n is not None}


def token_parts(conn: psycopg.Connection, words: Sequence[str]) -> set[str]:
    """The `words` (lowercase) the keyword index holds only inside a longer token, as its first part
    ("settings" of "settings.toml"); none for a store without the keyword index's tables."""
    if not words:
        return set()
    try:
        return {w for (w,) in conn.execute(sql.SQL(text("parts")), {"words": list(words)}).fetchall()}
    except psycopg.Error:
        conn.rollback()
        return set()

"""Gaps see what users did not get: answers shown as candidates and asks followed by a rephrasing."""

from __future__ import annotations

import hashlib
import math
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import numpy as np
import psycopg

from pipeline.config import UsageConfig
from pipeline.store.schema import ensure_schema
from pipeline.usage import record
from pipeline.usage.report import REPHRASE_S, gaps


def _bag(texts: list[str]) -> np.ndarray:
    """A deterministic embedding: a normalised bag of lowercased words hashed into 64 slots."""
    out = np.zeros((len(texts), 64))
    for i, t in enumerate(texts):
        for w in t.lower().replace("?", "").split():
            out[i, int(hashlib.md5(w.encode()).hexdigest(), 16) % 64] += 1.0
        out[i] /= math.sqrt((out[i] ** 2).sum()) or 1.0
    return out


def test_an_answer_shown_as_candidates_is_recorded_as_unsure():
    cfg = UsageConfig()
    answer = SimpleNamespace(
        abstained=False, addresses_question=False, audit_mode="STRICT", confidence=0.4, citations=[]
    )
    assert record.for_ask(cfg, "cli", "ann", "q", "hybrid", answer, 1.0).label == record.UNSURE
    sure = SimpleNamespace(**{**vars(answer), "addresses_question": True, "confidence": 0.9})
    assert record.for_ask(cfg, "cli", "ann", "q", "hybrid", sure, 1.0).label == "STRICT"
    gone = SimpleNamespace(**{**vars(answer), "abstained": True, "audit_mode": "UNGROUNDED"})
    assert record.for_ask(cfg, "cli", "ann", "q", "hybrid", gone, 1.0).label == "UNGROUNDED"


def test_gaps_count_unsure_and_rephrased_asks_with_the_unanswered(database_url):
    now = datetime.now(UTC)
    rows = [  # (principal, seconds ago, question, abstained, confidence, label)
        ("ann", 3000, "how big can a message be", False, 0.9, "STRICT"),  # answered, then rephrased:
        ("ann", 2950, "how big may a message be", False, 0.9, "STRICT"),
        ("bob", 2000, "which port does the proxy listen on", False, 0.42, record.UNSURE),  # candidates
        ("bob", 1000, "how do I rotate the logs", False, 0.95, "STRICT"),  # answered, next ask unrelated
        ("bob", 990, "which port does the proxy listen on", False, 0.95, "STRICT"),
        ("cy", 5000, "how big can a message be", False, 0.9, "STRICT"),  # rephrased, but much later
        ("cy", 5000 - REPHRASE_S - 60, "how big may a message be", False, 0.9, "STRICT"),
    ]
    with psycopg.connect(database_url, autocommit=True) as conn:
        ensure_schema(conn, "m", 4)
        for who, ago, q, abst, conf, label in rows:
            conn.execute(
                "INSERT INTO usage_events (at, kind, surface, question, question_sha, principal, mode, abstained,"
                " confidence, label, latency_ms) VALUES (%s, 'ask', 'cli', %s, %s, %s, 'hybrid', %s, %s, %s, 1)",
                (now - timedelta(seconds=ago), q, record.digest(q), who, abst, conf, label),
            )
        g = gaps(conn, UsageConfig(), _bag, lambda q, k, mode: [], 30)
    by = {grp.representative: grp for grp in g.groups}
    assert g.asks == len(rows) and g.gap_asks == 2  # ann's first wording (rephrased) and bob's candidates
    assert by["how big can a message be"].rephrased == 1
    port = by["which port does the proxy listen on"]
    assert (port.unsure, port.abstained, port.count) == (1, 0, 1)
    assert "how do I rotate the logs" not in by  # followed by an ask of another meaning: answered

"""The keyword index's impact order: BM25 with fixed parameters, as migration 0003 built it.

Migration 0003 orders each term's posting list by a BM25 term weight whose
constants are written into the index (`bm25_postings_impact`): k1 and b, the
search configuration's defaults (BM25's usual values), and a nominal chunk
length standing in for the corpus average (which changes with every ingest; an
index expression cannot). The keyword query reads candidates in that order, so
its ORDER BY must be the index's expression exactly, or Postgres reads and
sorts whole lists: `impact_order` writes it, and tests/test_query.py checks it
against the live index. Exact scores use the configured k1 and b; changing
their defaults (or the length) means a migration that rebuilds the index.
"""

from __future__ import annotations

from pipeline.config import SearchConfig

K1: float = SearchConfig.model_fields["bm25_k1"].default  # term-frequency saturation
B: float = SearchConfig.model_fields["bm25_b"].default  # length normalisation
IMPACT_LENGTH = 100  # nominal chunk length, in lexeme occurrences
IMPACT_INDEX = "bm25_postings_impact"


def impact_order(alias: str = "") -> str:
    """The impact index's ordering expression over bm25_postings' tf and dl, qualified by `alias`."""
    p = f"{alias}." if alias else ""
    return f"({p}tf::real / ({p}tf + {K1} * ({1 - B} + {B} * {p}dl / {IMPACT_LENGTH:.1f})))"

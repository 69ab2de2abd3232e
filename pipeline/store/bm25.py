"""The keyword index's layout and impact order (migrations 0003, 0008 and 0009).

Each term's posting list is kept in impact order: a BM25 term weight with fixed
parameters, k1 and b at the search configuration's defaults (BM25's usual
values) and a nominal chunk length standing in for the corpus average (which
changes with every ingest; a stored order cannot). A query reads the best
`per_term` postings of each term in that order, so every reader and writer of the
lists must use the same expression: migration 0009 defines it once, in SQL, as
`docforge_bm25_impact(tf, dl)` (0003's weight, in float8 arithmetic), and
tests/test_postings.py checks that it gives the very bits `impact` below does.
Exact scores use the configured k1 and b; changing the defaults below (or the
length) means a migration that rebuilds the lists.

Migration 0008 stores the lists packed, `BLOCK` postings at most per row of
`bm25_blocks`, a posting in 8 bytes; `docforge_bm25_top(term_ids, k)` (0009)
returns the best k postings of each term, with the term's place in `term_ids`.
"""

from __future__ import annotations

from pipeline.config import SearchConfig

K1: float = SearchConfig.model_fields["bm25_k1"].default  # term-frequency saturation
B: float = SearchConfig.model_fields["bm25_b"].default  # length normalisation
IMPACT_LENGTH = 100  # nominal chunk length, in lexeme occurrences
IMPACT_FUNCTION = "docforge_bm25_impact"
BLOCK = 128  # postings per bm25_blocks row at most: 1 kB, under Postgres's 2 kB TOAST threshold


def impact(tf: int, dl: int) -> float:
    """The list order's weight of a posting (term frequency tf in a chunk of length dl): the SQL
    function's operations, in the same order, so the same IEEE doubles."""
    return tf / (tf + K1 * (1 - B + B * dl / IMPACT_LENGTH))

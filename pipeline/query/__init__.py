"""Search the index: dense, keyword (BM25) and hybrid, with filters and optional rerank.

`search` runs the statements, `plan` checks what a search asks, `ranking` orders its
candidates (`fusion` for hybrid), `filters` compiles metadata filters, `rerank` is the
optional second stage and `hits` holds the result type they all share.
"""

from pipeline.query.hits import Hit
from pipeline.query.plan import MODES, Mode
from pipeline.query.search import SearchConfig, Searcher

__all__ = ["MODES", "Hit", "Mode", "SearchConfig", "Searcher"]

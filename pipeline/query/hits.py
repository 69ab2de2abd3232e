"""The search result type, a leaf every query module and surface shares."""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Hit:
    """One search result with everything needed to cite it."""

    chunk_id: str
    source: str  # the source document's key
    partition: str  # the sources.yml source name
    type: str
    url: str
    title: str
    section: str
    chunk_index: int
    text: str
    score: float
    page: int | None = None  # page number, for sources that have pages
    rerank_score: float | None = None
    dense_rank: int | None = None  # 1-based rank in the dense candidates, None if absent
    keyword_rank: int | None = None

    def as_dict(self) -> dict:
        return asdict(self)

"""What one search asks, checked: its mode, its text, the hits it wants and how to rank them."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from psycopg import sql

from pipeline.errors import QueryError
from pipeline.parse.text import first_surrogate

Mode = Literal["dense", "keyword", "hybrid"]
MODES = ("dense", "keyword", "hybrid")


@dataclass(frozen=True)
class Plan:
    """What one search asks, whatever its depth: the mode, how many hits, the per-document cap (None: no
    limit), the compiled filter, and the hybrid fusion's knobs."""

    mode: str
    n: int
    cap: int | None
    where: sql.Composable
    fparams: dict
    rrf_k: int
    weights: tuple[float, float]
    tags: frozenset[str]  # lower-case tags that earn the tag boost
    may_read: sql.Composable  # the reader's access condition over `doc` (pipeline.access), also in `where`
    abinds: dict  # its bind parameters (none for full access)


def tags_to_boost(query: str, extra) -> set[str]:
    """Tags that earn the hybrid boost: words of the query plus any given (team, area...)."""
    # a tag is matched whole, dots and hyphens in it ("node.js", "on-call"): not the answer layer's words
    words = {w for w in re.findall(r"[\w.-]+", query.lower()) if len(w) > 1}
    return words | {t.lower() for t in extra if t}


def check_text(what: str, text: str) -> None:
    """Refuse text with no UTF-8 form (a lone surrogate, e.g. from a JSON "\\ud800" escape)."""
    if (i := first_surrogate(text)) is not None:
        raise QueryError(f"{what} is not valid Unicode: a lone surrogate U+{ord(text[i]):04X} at character {i}")

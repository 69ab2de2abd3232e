"""Where chunk boundaries fall: anchored to the content, so an edit moves only the cuts near it.

A greedy cutter (fill a chunk, cut, fill the next from there) lets every cut depend on all
the text before it: one sentence added early in a long section moves each cut after it, and
each chunk after it is new text to embed. Here a run of items (the pieces between candidate
cuts of a long section, or the whole sections packed into chunks) is split recursively: a run
that fits is one chunk; one that does not is cut once, at the candidate that is strongest (a
break between blocks before a line break before a sentence end …) and, among equals, whose
neighbouring text hashes highest, then each side is split the same way. The hash is of the
text either side of the cut alone, so a cut chosen stays chosen whatever changes elsewhere,
and an edit changes the chunks of the side it falls in, down to the one piece it touches.

The candidate must leave each side a share of the run that still packs into as few chunks as
the whole needs (`quota`): a run of n tokens needs k = ⌈n / budget⌉ chunks, its left side at
most ⌈k/2⌉ budgets, its right side the rest. So the chunk count stays that of greedy filling
(give or take a chunk where no candidate lies near the ideal place) and no piece is cut
below MIN_FILL of a budget while a cut further in allows it.
"""

from __future__ import annotations

import bisect
import itertools
import re
import zlib
from collections import deque
from collections.abc import Callable, Sequence

REACH = 0.5  # a cut is the best candidate within half a budget either side: chunks of half a budget or more
BREAKS = (re.compile(r"\n[ \t]*\n"), re.compile(r"\n"), re.compile(r"[.!?;:][)\"']?\s"), re.compile(r"\s"))
MIN_FILL = 0.4  # never cut a piece below 40 % of the budget where another candidate allows it: no runts
_CONTEXT = 48  # characters either side of a cut its hash reads: a sentence's worth, local to the cut


def mark(text: str, at: int) -> int:
    """The content hash of a cut at offset `at` of `text`: the text around it alone."""
    return zlib.crc32(text[max(0, at - _CONTEXT) : at + _CONTEXT].encode("utf-8", "surrogatepass"))


def partition(
    weights: Sequence[int],
    budget: int,
    rank: Callable[[int], tuple[int, int]],
    fits: Callable[[int, int], bool] | None = None,
) -> list[tuple[int, int]]:
    """Items 0..len(weights)-1 grouped into consecutive runs [lo, hi), each fitting the budget.

    `weights`: each item's tokens (a join's cost included); `rank(j)`: how good a cut before item j
    is, (strength, hash), higher better; `fits(lo, hi)`: whether a run fits exactly (default: its
    weights sum to at most the budget). A single item always makes a run of its own.
    """
    sums = [0]
    for w in weights:
        sums.append(sums[-1] + w)
    fits = fits or (lambda lo, hi: sums[hi] - sums[lo] <= budget)
    if fits(0, len(weights)):
        return [(0, len(weights))]
    marks = [0, *_anchors(sums, budget, rank), len(weights)]
    out: list[tuple[int, int]] = []
    for a, b in zip(marks, marks[1:], strict=False):
        todo = [(a, b)]  # a stack: the last run comes next in order
        while todo:
            lo, hi = todo.pop()
            if hi - lo <= 1 or fits(lo, hi):
                out.append((lo, hi))
                continue
            j = _best(sums, lo, hi, budget, rank)
            todo += [(j, hi), (lo, j)]
    return out


def _anchors(sums: list[int], budget: int, rank: Callable[[int], tuple[int, int]]) -> list[int]:
    """The cuts that are the best-ranked candidate within REACH of a budget either side: each depends on
    the text within that reach alone, and no two lie closer than it. Not within MIN_FILL of an end."""
    reach, floor, total = int(REACH * budget), int(MIN_FILL * budget), sums[-1]
    js = [j for j in range(1, len(sums) - 1) if sums[j] >= floor and total - sums[j] >= floor]
    ranks = [rank(j) for j in js]
    before = _window_max(js, ranks, sums, reach)
    after = _window_max(js[::-1], ranks[::-1], sums, reach)[::-1]
    return [
        j for j, r, b, a in zip(js, ranks, before, after, strict=True) if (b is None or r > b) and (a is None or r > a)
    ]


def _window_max(js: list[int], ranks: list, sums: list[int], reach: int) -> list:
    """For each candidate in order, the best rank among those before it (in that order) within `reach`
    tokens, or None: a monotonic queue, one pass."""
    out: list = []
    queue: deque[int] = deque()  # indices into js, ranks decreasing
    for i, j in enumerate(js):
        while queue and abs(sums[j] - sums[js[queue[0]]]) >= reach:
            queue.popleft()
        out.append(ranks[queue[0]] if queue else None)
        while queue and ranks[queue[-1]] <= ranks[i]:
            queue.pop()
        queue.append(i)
    return out


def _best(sums: list[int], lo: int, hi: int, budget: int, rank: Callable[[int], tuple[int, int]]) -> int:
    """The cut of an over-budget run [lo, hi): the best-ranked candidate inside its quota, else the one
    nearest to it."""
    n = sums[hi] - sums[lo]
    k = max(2, -(-n // max(1, budget)))
    left_max = -(-k // 2) * budget
    right_max = (k - -(-k // 2)) * budget
    floor = int(MIN_FILL * budget)
    best, key = None, None
    for j in range(lo + 1, hi):
        left, right = sums[j] - sums[lo], sums[hi] - sums[j]
        if left > left_max or right > right_max or min(left, right) < min(floor, n // 2):
            continue
        r = rank(j)
        if key is None or r > key:
            best, key = j, r
    if best is not None:
        return best
    target = sums[lo] + min(left_max, n // 2)
    return min(range(lo + 1, hi), key=lambda j: (abs(sums[j] - target), j))


def anchored(body: str, starts: list[int], budget: int, between: tuple[list[int], list[int]]) -> list[tuple[int, int]]:
    """The body's pieces, cut where pipeline.cuts chooses among its candidate cuts (between blocks, then
    paragraph, line, sentence and word breaks), each within `budget` tokens."""
    strength: dict[int, int] = {}
    for level, found in ((5, between[0]), (4, between[1])):
        for c in found:
            strength[c] = max(strength.get(c, level), level)
    for level, pattern in zip((3, 2, 1, 0), BREAKS, strict=True):
        for m in pattern.finditer(body):
            strength.setdefault(m.end(), level)
    edges = [0, *sorted(c for c in strength if 0 < c < len(body)), len(body)]
    firsts = [bisect.bisect_left(starts, c) for c in edges]
    weights = [b - a for a, b in itertools.pairwise(firsts)]
    rank = lambda j: (strength[edges[j]], mark(body, edges[j]))  # noqa: E731
    runs = partition(weights, budget, rank)
    out = [strip_span(body, edges[lo], edges[hi]) for lo, hi in runs]
    # A single item over the budget (one run of text without a break): cut at token boundaries.
    fitted: list[tuple[int, int]] = []
    for s, e in out:
        i, j = bisect.bisect_left(starts, s), bisect.bisect_left(starts, e)
        while j - i > budget:
            cut = starts[i + budget]
            fitted.append(strip_span(body, s, cut))
            s, i = cut, i + budget
        fitted.append(strip_span(body, s, e))
    return fitted


def greedy(
    body: str,
    offsets: list[tuple[int, int]],
    budget: int,
    overlap: int,
    between: tuple[list[int], list[int]],
) -> list[tuple[int, int]]:
    """Pieces filled greedily, each from where the one before ends less `overlap` tokens (with overlap
    configured, where anchoring cannot hold: each piece's start depends on the one before)."""
    starts = [o[0] for o in offsets]
    out, pos, ti = [], 0, 0
    while ti < len(offsets):
        if len(offsets) - ti <= budget:
            out.append(strip_span(body, pos, len(body)))
            break
        cut = _greedy_cut(body, pos, offsets[ti + budget - 1][1], between)
        out.append(strip_span(body, pos, cut))
        next_ti = max(ti + 1, bisect.bisect_left(starts, cut))
        next_ti = max(ti + 1, next_ti - overlap)
        pos, ti = min(cut, starts[next_ti]) if next_ti < len(starts) else cut, next_ti
    return out


def _greedy_cut(body: str, pos: int, end_char: int, between: tuple[list[int], list[int]] = ([], [])) -> int:
    """Where to end a chunk that may not reach past end_char."""
    floor = pos + int((end_char - pos) * MIN_FILL)
    for found in between:  # between two blocks first
        i = bisect.bisect_right(found, end_char)
        if i and found[i - 1] > floor:
            return found[i - 1]
    window = body[floor:end_char]
    for pattern in BREAKS:
        if matches := list(pattern.finditer(window)):
            return floor + matches[-1].end()
    return end_char  # one long run without spaces: cut at the token boundary


def halve(text: str, offsets: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Two shorter stripped pieces cut at a token boundary near the middle, as spans; [] if there is none."""
    ends = sorted({e for _, e in offsets if 0 < e < len(text)}, key=lambda e: abs(e - len(text) // 2))
    for cut in ends:
        spans = [strip_span(text, 0, cut), strip_span(text, cut, len(text))]
        if all(e > s for s, e in spans):
            return spans
    return []


def strip_span(body: str, start: int, end: int) -> tuple[int, int]:
    """The span of body[start:end] with surrounding whitespace left out."""
    piece = body[start:end]
    return start + len(piece) - len(piece.lstrip()), start + len(piece.rstrip())

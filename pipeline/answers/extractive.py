"""Answers without an LLM: the best-supported sentences of the top evidence, verbatim, each with its pointer.

Sentences come from the prose of the retrieved chunks (code, tables and headings
left out). Each is scored by how much of the question it covers (question words
weighted by their rarity among the candidate sentences, stemmed) plus a prior
for its document's and chunk's retrieval rank; the best few are kept — first
one per document, then a second where lines are left — best first. Every line
is a sentence of the block it cites, so the verifier passes it by `span` (or
`quote`): STRICT by construction — and a line that would not pass is dropped
rather than shown.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from pipeline.answers import text as tx
from pipeline.answers.model import Evidence
from pipeline.answers.verify import POINTER_GROUP

EXTRACTIVE_VERSION = "1"
MIN_WORDS, MAX_WORDS = 5, 70
MIN_COVERAGE = 0.15  # below this, nothing retrieved speaks to the question: abstain
FLOOR = 0.5  # a further sentence must cover at least this share of what the best one covers
# Sentences per document, pass by pass: the best sentence of each of the top documents first (a
# question's answer is often not in the first-ranked document: on the bench's dev questions, one
# sentence from each of up to four documents cites the expected RFC in 27 of 30, two from the top
# documents in 24), then second sentences where lines are left.
PER_DOC_PASSES = (1, 2)
# Words of a question that say what kind of answer is wanted, not what it is about.
_ASK_WORDS = frozenset(
    tx.stem(w)
    for w in """explain describe tell mean means meaning work works happen
happens difference different differ compare versus vs purpose idea need want know way ways doe use used using
possible allowed""".split()
)
_BULLET = re.compile(r"^\s*(?:[-*+]|\d{1,3}[.)])\s+")


@dataclass(frozen=True)
class Sentence:
    text: str
    evidence: Evidence
    doc_rank: int
    chunk_rank: int
    position: int  # of the sentence within its chunk
    keys: frozenset[str]


@dataclass(frozen=True)
class Extract:
    lines: list[tuple[str, Evidence]]  # (sentence, the evidence it is quoted from), best first
    coverage: float  # of the question by the best sentence, 0..1


def question_keys(question: str) -> list[str]:
    return [k for k in dict.fromkeys(tx.content_keys(question)) if k not in _ASK_WORDS]


def candidates(evidence: list[Evidence]) -> list[Sentence]:
    docs: dict[str, int] = {}
    out = []
    for rank, e in enumerate(evidence, 1):
        doc_rank = docs.setdefault(e.doc_key, len(docs) + 1)
        pos = 0
        for block in tx.prose_blocks(e.text):
            for s in tx.split_sentences(_BULLET.sub("", block)):
                pos += 1
                n = len(tx.words(s))
                if not MIN_WORDS <= n <= MAX_WORDS or POINTER_GROUP.search(s) or _markup_heavy(s):
                    continue
                out.append(Sentence(s, e, doc_rank, rank, pos, frozenset(tx.content_keys(s))))
    return out


def _markup_heavy(s: str) -> bool:
    letters = sum(map(str.isalpha, s))
    return letters < 0.5 * len(s) or s.rstrip().endswith(":") or "http" in s and letters < 0.7 * len(s)


def extract(question: str, evidence: list[Evidence], max_sentences: int = 4) -> Extract:
    """The best-supported sentences for `question` among `evidence` (ordered by retrieval rank)."""
    q = question_keys(question) or list(dict.fromkeys(tx.content_keys(question)))
    sents = candidates(evidence)
    if not q or not sents:
        return Extract([], 0.0)
    n = len(sents)
    df = {k: sum(k in s.keys for s in sents) for k in q}
    idf = {k: math.log(1 + n / (1 + df[k])) for k in q}
    total = sum(idf.values()) or 1.0

    def coverage(s: Sentence) -> float:
        return sum(idf[k] for k in q if k in s.keys) / total

    def score(s: Sentence) -> float:
        prior = 0.25 / s.doc_rank + 0.05 / s.chunk_rank + (0.03 if s.position == 1 else 0.0)
        length = 0.02 * max(0, len(s.keys) - 30) / 10  # long sentences say less per word
        return coverage(s) + prior - length

    ranked = sorted(sents, key=score, reverse=True)
    best_cov = coverage(ranked[0])
    if best_cov < MIN_COVERAGE:
        return Extract([], best_cov)
    chosen: list[Sentence] = []
    per: dict[str, int] = {}
    for per_doc in PER_DOC_PASSES:  # first one sentence per document (breadth), then a second (depth)
        for s in ranked:
            if len(chosen) >= max_sentences:
                break
            if s in chosen or per.get(s.evidence.doc_key, 0) >= per_doc or coverage(s) < FLOOR * best_cov:
                continue
            if any(_overlap(s.keys, c.keys) > 0.6 for c in chosen):
                continue  # says the same as a chosen sentence
            chosen.append(s)
            per[s.evidence.doc_key] = per.get(s.evidence.doc_key, 0) + 1
    chosen.sort(key=ranked.index)
    return Extract([(s.text, s.evidence) for s in chosen], round(best_cov, 3))


def _overlap(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / (min(len(a), len(b)) or 1)


def answer_text(lines: list[tuple[str, Evidence]]) -> str:
    """The raw answer: one verbatim sentence per line, ending with its pointer."""
    return "\n".join(f"{' '.join(s.split())} [{e.pointer}]" for s, e in lines)

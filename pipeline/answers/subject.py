"""What a question is about and what kind of answer it wants: the warrant layer's anchors.

    subject   the question's content words (ask words such as "explain" or "command" aside), each weighted
              by its rarity in the index (IDF from the keyword index's statistics: a word the index lacks
              weighs most), and its hard anchors — proper nouns, code identifiers, quoted strings — that an
              answer must carry;
    shape     what the question asks for in so many words: an environment variable, a number or a date;
    carried   whether evidence carries the subject: every hard anchor, and at least MIN_SUBJECT of the
              subject's weight. When the best document does not, the answer abstains (extractive), or is
              flagged as a deflection (an LLM's answer whose cited evidence does not).

Lexical and deterministic, like the verifier.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from pipeline.answers import words as tx

MIN_SUBJECT = 0.15  # share of the subject's IDF weight the best document must carry
FRAME_SHARE = 0.2  # of the rest of the subject, a line naming the question's name must carry (unframed)
MAX_ABSENT = 0.6  # share of the subject's weight in words the whole index lacks: it is about something else
STOP_WEIGHT = 0.2  # a word the keyword index treats as a stopword: weighs little
# Words that say what kind of answer is wanted, not what it is about.
ASK_WORDS = frozenset(
    tx.stem(w)
    for w in """explain describe tell mean means meaning work works happen happens difference different
differ compare versus vs purpose idea need want know way ways doe use used using possible allowed get make
made let lets go goes find show shows give gives like thing things kind sort actually really exactly
command commands option options flag flags variable variables env environment var vars
syntax setting settings value values name names called call
specify specified set sets run runs write written type types""".split()
)
_CAPITALISED = re.compile(r"(?<![\w`])([A-Z][A-Za-z0-9]*(?:[-.][A-Za-z0-9]+)*)")
_NAME = re.compile(r"[A-Z][A-Za-z]*[a-z][A-Za-z]*")  # a capitalised name with lowercase letters; not an acronym

# Kinds of value a question may ask for by its own words, and what a line holding one looks like: the
# verifier's deflection check (an answer to "how many" that holds no number does not answer it). The
# extractive answerer tells kinds apart by the model instead (pipeline.answers.features).
_SHAPES: list[tuple[str, re.Pattern[str], re.Pattern[str]]] = [
    (  # a shell environment variable is written in capitals joined by underscores, on every platform
        "env",
        re.compile(r"\b(env(ironment)?\s*var(iable)?s?|env vars?)\b", re.I),
        re.compile(r"\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b"),
    ),
    (
        "number",
        re.compile(r"\b(how (many|much|long|often)|what (number|version|port|percentage))\b", re.I),
        re.compile(r"\d"),
    ),
    ("date", re.compile(r"\b(when was|what year|which year|what date)\b", re.I), re.compile(r"\b\d{4}\b")),
]
# Shapes an answer must hold to address the question (the deflection check), as a reader would name them.
VALUE_SHAPES = {"env": "an environment variable", "number": "a number", "date": "a date"}


@dataclass(frozen=True)
class Subject:
    keys: tuple[str, ...]  # content keys, in order
    weights: dict[str, float]  # key → weight (IDF)
    hard: tuple[str, ...] = ()  # anchors an answer must carry (as written)
    hard_keys: tuple[frozenset[str], ...] = field(default=())
    absent: frozenset[str] = frozenset()  # keys the whole index lacks
    spelled: dict[str, str] = field(default_factory=dict)  # key → the question's word, for what people read

    def said(self, keys: Iterable[str]) -> str:
        """Keys as the question wrote them: "reset, Jira", not "reset, jira" or "cach"."""
        return ", ".join(self.spelled.get(k, k) for k in keys)

    @property
    def absent_share(self) -> float:
        return sum(self.weights[k] for k in self.absent if k in self.weights) / (sum(self.weights.values()) or 1.0)


@dataclass(frozen=True)
class Carried:
    ok: bool
    coverage: float
    reason: str = ""


def question_words(question: str) -> list[str]:
    return [w for w in tx.words(question) if tx.is_content(w) and tx.key(w) not in ASK_WORDS]


def hard_anchors(question: str) -> list[str]:
    """Proper nouns (capitalised, not the question's first word), code identifiers, quoted strings, in
    the order the question has them (the identifiers and quotes of pipeline.answers.words)."""
    found: list[tuple[int, str]] = [
        (m.start(), m.group(1) or m.group(2) or m.group(0)) for m in tx.IDENT.finditer(question)
    ]
    found += [(m.start(), m.group(1)) for m in tx.QUOTED.finditer(tx.ascii_quotes(question))]
    first = True
    for m in _CAPITALISED.finditer(question):
        w = m.group(1)
        start = m.start() == len(question) - len(question.lstrip()) or question[: m.start()].rstrip().endswith(
            (".", "?", "!", ":")
        )
        if start or first and m.start() < 2:
            first = False
            continue
        if w in {"I", "I'm", "I've"} or w.lower() in tx.STOPWORDS:
            continue
        found.append((m.start(), w))
    return list(dict.fromkeys(a for _, a in sorted(found, key=lambda f: f[0]) if tx.words(a)))


def subject(question: str, idf: dict[str, float] | None = None, absent: Iterable[str] = ()) -> Subject:
    keys = tuple(dict.fromkeys(tx.key(w) for w in question_words(question)))
    if not keys:  # "what does it do?": every content word is the subject
        keys = tuple(dict.fromkeys(tx.content_keys(question)))
    weights = {k: (idf or {}).get(k, 1.0) for k in keys}
    hard = hard_anchors(question)
    hard_keys = tuple(frozenset(tx.content_keys(a)) or frozenset(tx.key(w) for w in tx.words(a)) for a in hard)
    spelled = {tx.key(tx.fold(w)): w for w in reversed(re.findall(r"[^\W_]+(?:'[^\W_]+)?", question))}
    return Subject(keys, weights, tuple(hard), hard_keys, frozenset(absent) & frozenset(keys), spelled)


def _keys(evidence: Iterable) -> set[str]:
    have: set[str] = set()
    for e in evidence:
        text = e if isinstance(e, str) else f"{e.title}\n{e.section}\n{e.text}"
        have.update(tx.key(w) for w in tx.words(text))
    return have


def _bare(key: str) -> str:
    return key.lower().rstrip("s")


def carried(subj: Subject, evidence: Iterable, minimum: float = MIN_SUBJECT, pool: Iterable = ()) -> Carried:
    """Whether the evidence texts (with their titles and sections) carry the question's subject: its
    words (IDF-weighted share ≥ minimum) in `evidence`, its hard anchors there or anywhere in `pool`."""
    have = _keys(evidence)
    anywhere = {_bare(k) for k in have | _keys(pool)}  # "APIs" is carried by "API"
    missing = [
        a for a, ks in zip(subj.hard, subj.hard_keys, strict=True) if ks and not {_bare(k) for k in ks} <= anywhere
    ]
    total = sum(subj.weights.values()) or 1.0
    coverage = sum(w for k, w in subj.weights.items() if k in have) / total
    if subj.absent_share >= MAX_ABSENT:
        absent = [k for k in subj.keys if k in subj.absent][:3]
        return Carried(False, coverage, f"the index does not know {subj.said(absent)}")
    if missing:
        return Carried(False, coverage, f"the evidence does not mention {', '.join(missing[:3])}")
    if coverage < minimum:
        absent = [k for k in subj.keys if k not in have][:3]
        return Carried(False, coverage, f"the evidence does not cover the question ({subj.said(absent)} missing)")
    return Carried(True, coverage)


UNFRAMED = "no passage speaks of {} and the question together"  # why an answer abstains (unframed)


def unframed(subj: Subject, lines: Iterable, share: float = FRAME_SHARE) -> str | None:
    """The name that frames the question ("in <Product>", "a <Language> keyword") when no line speaks of
    it and of the question together — lines that mention the name in passing and others about the topic
    do not answer how that product does it. A name is a capitalised word with lowercase letters (an acronym
    such as HTTPS is often written otherwise). `lines`: texts, or evidence read with its title and section."""
    names = [(a, ks) for a, ks in zip(subj.hard, subj.hard_keys, strict=True) if _NAME.fullmatch(a) and ks]
    if not names:
        return None
    named = set().union(*(ks for _, ks in names))
    rest = {k: w for k, w in subj.weights.items() if k not in named}
    total = sum(rest.values())
    texts = [_keys([t]) for t in lines]

    def speaks(have: set[str], name: set[str]) -> bool:
        carries = sum(w for k, w in rest.items() if k in have)
        return name <= {_bare(k) for k in have} and (not total or carries / total >= share)

    for a, ks in names:
        if not any(speaks(have, {_bare(k) for k in ks}) for have in texts):
            return a
    return None


def shape(question: str) -> str | None:
    """The kind of value asked for by the question's own words (a number, a date), else None."""
    return next((name for name, ask, _ in _SHAPES if ask.search(question)), None)


def has_shape(text: str, shape_name: str | None) -> float:
    """1.0 when `text` holds the kind of value the question asks for, else 0.0."""
    if shape_name is None:
        return 0.0
    pattern = next(p for n, _, p in _SHAPES if n == shape_name)
    return 1.0 if pattern.search(text) else 0.0


# --- corpus statistics --------------------------------------------------------------------------------------

_DF_SQL = """
SELECT w, l.lexeme, coalesce(b.df, 0), (SELECT n FROM bm25_stats LIMIT 1)
FROM unnest(%s::text[]) AS w
LEFT JOIN LATERAL (SELECT (tsvector_to_array(to_tsvector('english', w)))[1] AS lexeme) l ON true
LEFT JOIN bm25_terms b ON b.term = l.lexeme
"""
# An anchor as written ("tune.http.maxbody", "dmarc_report_interval", "--preserve-timestamps", "OpenDKIM"):
# the chunks holding it as a phrase of the keyword index's lexemes in order (a dotted or hyphenated token
# is also one lexeme of its own), counted up to ANCHOR_DF_CAP (the GIN index finds them; no scan of the
# text). An option the index never names counts 0 though its parts are common words; an anchor of
# stopwords only is no phrase (NULL).
ANCHOR_DF_CAP = 100
_ANCHOR_DF_SQL = """
SELECT a, CASE WHEN numnode(q) = 0 THEN NULL
               ELSE (SELECT count(*) FROM (SELECT 1 FROM chunks WHERE tsv @@ q LIMIT %s) m) END
FROM unnest(%s::text[]) AS a, LATERAL phraseto_tsquery('english', a) AS q
"""


@dataclass(frozen=True)
class CorpusStats:
    idf: dict[str, float] = field(default_factory=dict)  # key → IDF over the index's chunks
    absent: frozenset[str] = frozenset()  # keys of words the index lacks
    df: dict[str, int] = field(default_factory=dict)  # key → chunks holding it (stopwords left out)
    anchor_df: dict[str, int] = field(default_factory=dict)  # hard anchor as written → chunks holding it
    chunks: int = 0  # chunks in the index


def corpus_stats(conn, words: Sequence[str], anchors: Sequence[str] = ()) -> CorpusStats:
    """IDF of each word's key over the index's chunks (one statement); a word the index lacks weighs
    log(1 + N), one the keyword index drops as a stopword STOP_WEIGHT. With `anchors` (hard_anchors),
    each one's document frequency as written (one more statement). Empty when there are no stats."""
    words = list(dict.fromkeys(words))
    if not words:
        return CorpusStats()
    try:
        rows = conn.execute(_DF_SQL, (words,)).fetchall()
        named = list(dict.fromkeys(anchors))
        found = conn.execute(_ANCHOR_DF_SQL, (ANCHOR_DF_CAP, named)).fetchall() if named else []
    except Exception:  # noqa: BLE001 — an index without keyword statistics: the candidates' IDF instead
        conn.rollback()
        return CorpusStats()
    idf: dict[str, float] = {}
    dfs: dict[str, int] = {}
    absent: set[str] = set()
    for w, lexeme, df, n in rows:
        if not n:
            return CorpusStats()
        k = tx.key(w)
        idf[k] = max(idf.get(k, 0.0), STOP_WEIGHT if lexeme is None else math.log(1 + n / (1 + df)))
        if lexeme is not None:
            dfs[k] = min(dfs.get(k, int(df)), int(df))
        if lexeme is not None and not df and not w.endswith("ly"):
            absent.add(k)
    gone = absent - {tx.key(w) for w, lx, df, _ in rows if df}
    return CorpusStats(idf, frozenset(gone), dfs, {a: int(df) for a, df in found if df is not None}, int(rows[0][3]))

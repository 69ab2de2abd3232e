"""A question as the answer layer reads it (`Question`, made by `read`: the one record of a question), what
it is about and what kind of answer it wants: the warrant layer's anchors.

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
from dataclasses import MISSING, dataclass, field, fields
from typing import Any

from pipeline.answers import lexicon
from pipeline.answers import words as tx
from pipeline.query.terms import anchor_counts, term_counts, token_parts

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
class Question:
    """A question as the answer layer reads it: the one record of it. `read` fills what every reader uses;
    the extractive answerer adds what its model reads (`want`, `near`: pipeline.answers.features.question).
    Two readings of its words: `keys` in context (a run of number words is one number), as the extractive
    answerer's features match lines; `subject` word by word, as `carried` matches evidence."""

    keys: dict[str, float]  # its content words' keys (read in context) → weight (IDF over the index)
    unseen: float = 0.0  # share of that weight in words the index lacks altogether
    want: dict[str, float] = field(default_factory=dict)  # kind → how much more it asks for it than the average
    anchors: tuple[frozenset[str], ...] = ()  # keys of each hard anchor that has content words
    near: dict[str, frozenset[str]] = field(default_factory=dict)  # key → its WordNet synonyms' keys
    text: str = ""  # as asked
    subject: dict[str, float] = field(default_factory=dict)  # what it is about: key → weight, in order
    hard: tuple[str, ...] = ()  # anchors an answer must carry (as written)
    hard_keys: tuple[frozenset[str], ...] = ()  # keys of each (of every word, for one without content words)
    absent: frozenset[str] = frozenset()  # subject keys the whole index lacks
    df: dict[str, int] = field(default_factory=dict)  # key → chunks of the index holding it (empty: no stats)
    anchor_df: tuple[int, ...] = ()  # per hard anchor with content words: chunks holding it as written

    def said(self, keys: Iterable[str]) -> str:
        """`keys` as the question wrote them (pipeline.answers.words.as_written), comma-separated."""
        return ", ".join(tx.as_written(self.text, keys))

    def __setstate__(self, state: dict[str, Any]) -> None:
        """One pickled before it held every field (`bench/fit_answers.py --asked` files): the rest at their
        defaults."""
        for f in fields(self):
            if f.name not in state:
                state[f.name] = f.default if f.default_factory is MISSING else f.default_factory()
        self.__dict__.update(state)

    def unknown(self) -> list[str]:
        """Words naming something the index has never seen: absent from every chunk and from English
        (no WordNet base form), such as a product or option the documentation never mentions. Measured on the
        fit corpora's asks (bench/fit_answers.py --asked, 711 questions over 15 corpora): 24 of 133
        unanswerable questions hold one, none of 578 answerable ones; the fitted question model answered 4
        of those 24, so the answerer abstains on any, naming it. Without WordNet every word would look
        foreign: nothing is said to be unknown then."""
        if not self.absent or not lexicon.available():
            return []
        words = [w for w in tx.words(self.text) if tx.is_content(w) and re.search(r"[^\W\d_]", w)]
        keys = [tx.key(w) for w in words if tx.key(w) in self.absent and not _english(w)]
        return tx.as_written(self.text, list(dict.fromkeys(keys)))

    @property
    def absent_share(self) -> float:
        return sum(self.subject[k] for k in self.absent if k in self.subject) / (sum(self.subject.values()) or 1.0)


# English that WordNet does not hold: its closed classes (a user asks "How do I delete everything in the
# cache?"), and a word made by an English prefix on one it holds ("precompile", "prefetch"; the rest at
# least PREFIXED_REST letters: a short rest is too often a product name's tail, "re" + a three-letter word).
_CLOSED = frozenset(
    """everything anything something nothing everyone anyone someone everybody anybody somebody nobody
    whatever whichever whoever whenever wherever however""".split()
)
_PREFIXES = ("pre", "re", "un", "non", "de", "dis", "mis", "over", "under", "sub", "super", "auto", "multi", "co",
             "inter", "post", "semi", "anti", "counter")  # fmt: skip
PREFIXED_REST = 4


def _english(word: str) -> bool:
    """Whether `word` is English, as far as WordNet and these closed classes and prefixes tell."""
    w = word.lower()
    if w in _CLOSED or lexicon.base_forms(w):
        return True
    rest = [w[len(p) :].lstrip("-") for p in _PREFIXES if w.startswith(p)]
    return any(len(r) >= PREFIXED_REST and lexicon.base_forms(r) for r in rest)


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
        if start or first and m.start() < 2:  # its first word (after a quote or bracket): capitalised anyway
            first = False
            continue
        if w in {"I", "I'm", "I've"} or w.lower() in tx.STOPWORDS:
            continue
        found.append((m.start(), w))
    return list(dict.fromkeys(a for _, a in sorted(found, key=lambda f: f[0]) if tx.words(a)))


def read(question: str, weights: dict[str, float] | None = None, absent: Iterable[str] = ()) -> Question:
    """The question's words weighed by `weights` (IDF; a word it lacks: 1), its subject and hard anchors;
    `absent`: keys of words the whole index lacks."""
    weights, absent = weights or {}, frozenset(absent)
    keys = {k: weights.get(k, 1.0) for k in dict.fromkeys(tx.content_keys(question))}
    unseen = sum(w for k, w in keys.items() if k in absent) / (sum(keys.values()) or 1.0)
    about = tuple(dict.fromkeys(tx.key(w) for w in question_words(question)))
    if not about:  # "what does it do?": every content word is the subject
        about = tuple(dict.fromkeys(tx.content_keys(question)))
    hard = hard_anchors(question)
    anchors = tuple(a for a in (frozenset(tx.content_keys(h)) for h in hard) if a)
    hard_keys = tuple(frozenset(tx.content_keys(a)) or frozenset(tx.key(w) for w in tx.words(a)) for a in hard)
    subj = {k: weights.get(k, 1.0) for k in about}
    return Question(keys, unseen, {}, anchors, {}, question, subj, tuple(hard), hard_keys, absent & frozenset(about))


def _keys(evidence: Iterable) -> set[str]:
    have: set[str] = set()
    for e in evidence:
        text = e if isinstance(e, str) else f"{e.title}\n{e.section}\n{e.text}"
        have.update(tx.key(w) for w in tx.words(text))
    return have


def _bare(key: str) -> str:
    return key.lower().rstrip("s")


def carried(subj: Question, evidence: Iterable, minimum: float = MIN_SUBJECT, pool: Iterable = ()) -> Carried:
    """Whether the evidence texts (with their titles and sections) carry the question's subject: its
    words (IDF-weighted share ≥ minimum) in `evidence`, its hard anchors there or anywhere in `pool`."""
    have = _keys(evidence)
    anywhere = {_bare(k) for k in have | _keys(pool)}  # "APIs" is carried by "API"
    missing = [
        a for a, ks in zip(subj.hard, subj.hard_keys, strict=True) if ks and not {_bare(k) for k in ks} <= anywhere
    ]
    total = sum(subj.subject.values()) or 1.0
    coverage = sum(w for k, w in subj.subject.items() if k in have) / total
    if subj.absent_share >= MAX_ABSENT:
        absent = [k for k in subj.subject if k in subj.absent][:3]
        return Carried(False, coverage, f"the index does not know {subj.said(absent)}")
    if missing:
        return Carried(False, coverage, f"the evidence does not mention {', '.join(missing[:3])}")
    if coverage < minimum:
        absent = [k for k in subj.subject if k not in have][:3]
        return Carried(False, coverage, f"the evidence does not cover the question ({subj.said(absent)} missing)")
    return Carried(True, coverage)


UNFRAMED = "no passage speaks of {} and the question together"  # why an answer abstains (unframed)


def unframed(subj: Question, lines: Iterable, share: float = FRAME_SHARE) -> str | None:
    """The name that frames the question ("in <Product>", "a <Language> keyword") when no line speaks of
    it and of the question together — lines that mention the name in passing and others about the topic
    do not answer how that product does it. A name is a capitalised word with lowercase letters (an acronym
    such as HTTPS is often written otherwise). `lines`: texts, or evidence read with its title and section."""
    names = [(a, ks) for a, ks in zip(subj.hard, subj.hard_keys, strict=True) if _NAME.fullmatch(a) and ks]
    if not names:
        return None
    named = set().union(*(ks for _, ks in names))
    rest = {k: w for k, w in subj.subject.items() if k not in named}
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


@dataclass(frozen=True)
class CorpusStats:
    idf: dict[str, float] = field(default_factory=dict)  # key → IDF over the index's chunks
    absent: frozenset[str] = frozenset()  # keys of words the index lacks
    df: dict[str, int] = field(default_factory=dict)  # key → chunks holding it (stopwords left out)
    anchor_df: dict[str, int] = field(default_factory=dict)  # hard anchor as written → chunks holding it
    chunks: int = 0  # chunks in the index


def idf(n: int, df: int) -> float:
    """The weight of a word that `df` of `n` texts hold: rarer weighs more; one no text holds, log(1 + n)."""
    return math.log(1 + n / (1 + df))


# An anchor's chunks are counted up to this many: enough to tell none or a few (another product's name, an
# option that does not exist) from many, and the count stops early (pipeline/query/sql/anchors.sql).
ANCHOR_DF_CAP = 100


def corpus_stats(conn, words: Sequence[str], anchors: Sequence[str] = ()) -> CorpusStats:
    """IDF of each word's key over the index's chunks (one statement); a word the index lacks weighs
    log(1 + N), one the keyword index drops as a stopword STOP_WEIGHT. With `anchors` (hard_anchors),
    each one's document frequency as written (one more statement). Empty when there are no stats."""
    words = list(dict.fromkeys(words))
    if not words:
        return CorpusStats()
    rows = term_counts(conn, words)  # none: an index without keyword statistics (the candidates' IDF instead)
    weights: dict[str, float] = {}
    dfs: dict[str, int] = {}
    absent: set[str] = set()
    for w, lexeme, df, n in rows:
        if not n:
            return CorpusStats()
        k = tx.key(w)
        weights[k] = max(weights.get(k, 0.0), STOP_WEIGHT if lexeme is None else idf(n, df))
        if lexeme is not None:
            dfs[k] = min(dfs.get(k, int(df)), int(df))
        if lexeme is not None and not df and not w.endswith("ly"):
            absent.add(k)
    gone = frozenset(absent - {tx.key(w) for w, lx, df, _ in rows if df})
    if gone:  # a word the index holds only inside a file name ("settings" of "settings.toml") is known
        gone -= {tx.key(w) for w in token_parts(conn, [w.lower() for w in words if tx.key(w) in gone])}
    named = anchor_counts(conn, list(dict.fromkeys(anchors)), ANCHOR_DF_CAP) if rows else {}
    return CorpusStats(weights, gone, dfs, named, int(rows[0][3] or 0) if rows else 0)

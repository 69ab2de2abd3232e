"""Lexical primitives shared by the verifier, the extractive answerer and the cache key.

Everything here is deterministic and dependency-free: normalisation (case,
width, quotes, diacritics, punctuation), word tokens with a light stemmer, number
words ↔ digits, stopwords, negation cues and a markdown-aware sentence splitter.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

# Function words that carry no claim of their own. Negations, numbers and
# question words are deliberately absent: they change what a sentence says.
STOPWORDS = frozenset(
    """
a about above after again against all also am an and any are as at be because been before being below
between both but by can could did do does doing down during each else etc even ever every few for from
further had has have having he her here hers herself him himself his i if in into is it its itself just
let lets may me might more most must my myself of off on once only or other ought our ours ourselves out
over own per same shall she should so some such than that the their theirs them themselves then there
these they this those through thus to too under until up upon us very via was we were what whatever when
where whether which while who whom whose why will with within would yet you your yours yourself yourselves
how s t d ll m re ve e g eg ie i.e e.g also already still however therefore instead rather
""".split()
)
NEGATIONS = frozenset(
    """not no never none nobody nothing neither nor cannot without n't isn't aren't wasn't
weren't don't doesn't didn't won't wouldn't can't couldn't shouldn't mustn't hasn't haven't hadn't
unable fails fail failed lacks lack""".split()
)
NUMBER_WORDS = {
    "zero": 0,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "thirteen": 13,
    "fourteen": 14,
    "fifteen": 15,
    "sixteen": 16,
    "seventeen": 17,
    "eighteen": 18,
    "nineteen": 19,
    "twenty": 20,
    "thirty": 30,
    "forty": 40,
    "fifty": 50,
    "sixty": 60,
    "seventy": 70,
    "eighty": 80,
    "ninety": 90,
    "hundred": 100,
    "thousand": 1000,
    "million": 1_000_000,
    "billion": 1_000_000_000,
    "dozen": 12,
    "single": 1,
    "twice": 2,
    "double": 2,
    "triple": 3,
    "half": 0.5,
}
ORDINALS = {
    "first": 1,
    "second": 2,
    "third": 3,
    "fourth": 4,
    "fifth": 5,
    "sixth": 6,
    "seventh": 7,
    "eighth": 8,
    "ninth": 9,
    "tenth": 10,
    "eleventh": 11,
    "twelfth": 12,
}
MONTHS = {
    m: i
    for i, m in enumerate(
        "january february march april may june july august september october november december".split(), 1
    )
}
MONTHS.update({m[:3]: i for m, i in list(MONTHS.items())})
MONTHS["sept"] = 9

_WORD = re.compile(r"\d+(?:[.,]\d+)*(?:[^\W\d_]+)?|[^\W_]+(?:['’][^\W_]+)*", re.UNICODE)
_QUOTES = str.maketrans(
    {
        "“": '"',
        "”": '"',
        "„": '"',
        "«": '"',
        "»": '"',
        "‘": "'",
        "’": "'",
        "‚": "'",
        "–": "-",
        "—": "-",
        "‐": "-",
        "‑": "-",
        "\u00a0": " ",
    }
)


@lru_cache(maxsize=8192)
def fold(text: str) -> str:
    """Unicode-fold: NFKC, typographic quotes and dashes to ASCII, diacritics dropped, casefolded."""
    if text.isascii():
        return text.lower()
    text = unicodedata.normalize("NFKC", text).translate(_QUOTES)
    text = "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))
    return text.casefold()


def cased_words(text: str) -> list[str]:
    """The tokens of `words(text)` as written (case kept): who is named where, for the role checks."""
    if not text.isascii():
        text = unicodedata.normalize("NFKC", text).translate(_QUOTES)
        text = "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))
    return _WORD.findall(text)


def normalise(text: str) -> str:
    """For span matching: folded, every run of punctuation/whitespace one space, padded with spaces."""
    words = _WORD.findall(fold(text))
    return " " + " ".join(_norm_word(w) for w in words) + " " if words else " "


@lru_cache(maxsize=131072)
def _norm_word(w: str) -> str:
    w = w.replace("'", "")  # "don't" → "dont", "arthur's" → "arthurs": the same on both sides
    if w[0].isdigit():
        w = w.replace(",", "")  # 1,500 → 1500
    return w


def words(text: str) -> list[str]:
    """Folded word tokens, apostrophes kept inside words ("doesn't")."""
    return _WORD.findall(fold(text))


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """A light English suffix stripper: enough to match inflections (starts/started/starting)."""
    w = (word[:-2] if word.endswith("'s") else word).replace("'", "")  # "Ellis's" is Ellis
    w = _IRREGULAR.get(w, w)  # "wrote", "written" → "write"
    if len(w) <= 3 or w[0].isdigit():
        return w
    for suffix, repl, min_len in _SUFFIXES:
        if w.endswith(suffix) and len(w) - len(suffix) >= min_len:
            w = w[: len(w) - len(suffix)] + repl
            break
    if len(w) > 4 and w[-1] == w[-2] and w[-1] not in "lsz":  # stopped → stopp → stop
        w = w[:-1]
    if len(w) > 4 and w.endswith("e"):
        w = w[:-1]
    return w


# Irregular verb forms (past, participle) → the base form; "found", "left", "saw" stay (they are words of
# their own too).
_IRREGULAR = {
    form: base
    for base, forms in {
        "write": "wrote written",
        "begin": "began begun",
        "build": "built",
        "win": "won",
        "lead": "led",
        "make": "made",
        "take": "took taken",
        "give": "gave given",
        "hold": "held",
        "sell": "sold",
        "buy": "bought",
        "know": "knew known",
        "grow": "grew grown",
        "become": "became",
        "run": "ran",
        "sing": "sang sung",
        "draw": "drew drawn",
        "choose": "chose chosen",
        "speak": "spoke spoken",
        "bring": "brought",
        "teach": "taught",
        "think": "thought",
        "tell": "told",
        "meet": "met",
        "pay": "paid",
        "send": "sent",
        "spend": "spent",
        "drive": "drove driven",
        "fall": "fell fallen",
        "rise": "rose risen",
        "break": "broke broken",
        "fly": "flew flown",
        "bear": "bore born",
    }.items()
    for form in forms.split()
}
_SUFFIXES = [
    ("ational", "ate", 3),
    ("ization", "ize", 3),
    ("isation", "ize", 3),
    ("fulness", "ful", 3),
    ("iveness", "ive", 3),
    ("ousness", "ous", 3),
    ("ements", "", 4),
    ("ement", "", 4),
    ("ments", "", 4),
    ("ment", "", 4),
    ("ations", "ate", 3),
    ("ation", "ate", 3),
    ("ingly", "", 3),
    ("edly", "", 3),
    ("ities", "", 3),
    ("ity", "", 3),
    ("ies", "y", 2),
    ("ied", "y", 2),
    ("ing", "", 3),
    ("ness", "", 3),
    ("ly", "", 3),
    ("ed", "", 3),
    ("es", "", 3),
    ("s", "", 3),
]


_NUMBER = re.compile(r"(\d+(?:\.\d+)?)(?:st|nd|rd|th|s)?")
_DIGIT_ORDINAL = re.compile(r"\d+(st|nd|rd|th)")


@lru_cache(maxsize=65536)
def number_value(word: str) -> float | None:
    """The number a token names: digits ("1,500", "3.5"), a number word or a digit ordinal (1st)."""
    w = word.replace(",", "")
    if w and w[0].isdigit():
        m = _NUMBER.fullmatch(w)
        return float(m.group(1)) if m else None
    return NUMBER_WORDS.get(w)


@lru_cache(maxsize=131072)
def key(word: str) -> str:
    """The matching key of a folded word: its number if it names one, else its stem."""
    if word in ORDINALS:
        return f"#{ORDINALS[word]}th"
    if _DIGIT_ORDINAL.fullmatch(word):
        return f"#{int(word[:-2])}th"
    n = number_value(word)
    if n is not None:
        return f"#{n:g}"
    return stem(word)


def is_content(word: str) -> bool:
    return word not in STOPWORDS and not (len(word) == 1 and not word.isdigit())


def content_keys(text: str) -> list[str]:
    """Matching keys of the content words, in order (stopwords dropped)."""
    return [key(w) for w in words(text) if is_content(w)]


def has_negation(tokens: list[str]) -> bool:
    return any(t in NEGATIONS or t.endswith("n't") for t in tokens)


_NEG_RE = re.compile(
    r"(?<![\w-])(?:"
    + "|".join(sorted((re.escape(w) for w in NEGATIONS), key=len, reverse=True))
    + r")(?![\w-])|\w+n't(?![\w-])"
)
_CODE = re.compile(r"`[^`]*`")


def negations(text: str) -> int:
    """How many negation cues a text holds; identifiers (`no_std`, `non-null`, code spans) are not cues."""
    return len(_NEG_RE.findall(_CODE.sub(" ", fold(text))))


def negation_scopes(text: str, reach: int = 4) -> list[frozenset[str]]:
    """For each negation cue, the keys of the content words it governs (the next `reach` words)."""
    tokens = re.findall(r"[\w'-]+", _CODE.sub(" ", fold(text)))
    out = []
    for i, t in enumerate(tokens):
        if t in NEGATIONS or t.endswith("n't"):
            governed = [
                w
                for tok in tokens[i + 1 : i + 1 + 2 * reach]
                for w in _WORD.findall(tok)
                if is_content(w) and w not in NEGATIONS
            ]
            out.append(frozenset(key(w) for w in governed[:reach]))
    return out


# --- sentences ---------------------------------------------------------------------------------------------

_ABBREV = re.compile(r"\b(?:e\.g|i\.e|etc|vs|cf|approx|fig|no|mr|mrs|ms|dr|st|jr|sr|inc|ltd|co|v)\.$", re.I)
_SENT_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[`*_]*[A-Z0-9])")


def split_sentences(text: str) -> list[str]:
    """Sentences of one paragraph of prose, verbatim (whitespace inside kept)."""
    out, start = [], 0
    for m in _SENT_END.finditer(text):
        piece = text[start : m.start()]
        if _ABBREV.search(piece.rstrip("\"')]")) or re.search(r"\b[A-Z]\.$", piece):
            continue  # "e.g. Foo", "J. Smith": not a sentence end
        out.append(text[start : m.end()].strip())
        start = m.end()
    tail = text[start:].strip()
    if tail:
        out.append(tail)
    return [s for s in out if s]


def prose_blocks(markdown: str) -> list[str]:
    """Paragraphs and list items of a markdown text: code fences, tables, headings and HTML left out."""
    blocks: list[str] = []
    cur: list[str] = []
    fenced = False

    def flush():
        if cur:
            blocks.append(" ".join(cur))
            cur.clear()

    for line in markdown.splitlines():
        s = line.strip()
        if s.startswith(("```", "~~~")):
            fenced = not fenced
            flush()
            continue
        if fenced or line.startswith(("    ", "\t")) and not cur:
            continue
        if not s or s.startswith(("#", "|", "<", ">", "[^")) or re.fullmatch(r"[-=*_ ]{3,}", s):
            flush()
            continue
        if re.match(r"([-*+]|\d+[.)])\s+", s):  # a list item starts a block of its own
            flush()
        cur.append(s)
    flush()
    return blocks

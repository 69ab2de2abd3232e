"""Words as the answer layer reads them: one tokenizer, one stemmer, one notion of a name, an identifier,
a quoted string, a number and a negation — for the verifier, the extractive answerer and the cache key.

Normalisation (case, width, quotes, diacritics, punctuation); word tokens stemmed with Snowball English,
the stemmer of the keyword index (`to_tsvector('english', …)` in pipeline/store/migrations/0001_init.sql),
so a word means the same here as in search; irregular forms ("wrote") through WordNet's exception lists
(pipeline.answers.lexicon); number words and digits to one key, compound ones ("sixty-four") included;
units to one key ("KiB", "kibibytes"); stopwords, negation cues and a markdown-aware sentence splitter.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from functools import lru_cache

from pipeline.answers import lexicon
from pipeline.answers.numbers import (  # noqa: F401 (part of this module's API)
    ARTICLES,
    COMPOSABLE,
    CONVERSIONS,
    FRACTIONS,
    NUMBER_WORDS,
    ORDINALS,
    UNITS,
    fraction_at,
    join_compounds,
    number_run,
)
from pipeline.answers.sentences import split_sentences  # noqa: F401 (part of this module's API)

# Words that say nothing, one list per use: STOPWORDS, function words that carry no claim of their own
# (verifier, extractive answerer, cache key; negations and numbers absent: they change what is said); the
# keyword index's, Postgres' English list (what search cannot find: subject.STOP_WEIGHT); the hits' marks'
# (docforge/cli/render.py and the page's app.js: the commonest question words, a list a browser holds too).
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
# Words that turn round what follows them: a passage right after one is not asserted ("not <span>").
NEGATORS = frozenset("not no never cannot nor without".split())
# Every word that negates: the negators, negative pronouns, contractions, and verbs of failing or lacking.
NEGATIONS = NEGATORS | frozenset(
    """none nobody nothing neither n't isn't aren't wasn't
weren't don't doesn't didn't won't wouldn't can't couldn't shouldn't mustn't hasn't haven't hadn't
unable fails fail failed failing lacks lack lacked lacking""".split()
)
MONTHS = {
    m: i
    for i, m in enumerate(
        "january february march april may june july august september october november december".split(), 1
    )
}
MONTHS.update({m[:3]: i for m, i in list(MONTHS.items())})
MONTHS["sept"] = 9

# The one word tokeniser (`words`, `cased_words`, `normalise`, `as_written`): the answer layer, its cache key
# and the verifier read words through it; a module that splits otherwise says why beside its pattern.
# A number keeps an ordinal or plural suffix ("2nd", "1980s"); any other letters after it are a word of
# their own ("64KiB" → "64", "kib"; "2h" → "2", "h"), so a unit reads the same glued on or spelt out.
_WORD = re.compile(r"\d+(?:[.,]\d+)*(?:st|nd|rd|th|s)?(?![^\W_])|\d+(?:[.,]\d+)*|[^\W_]+(?:['’][^\W_]+)*", re.UNICODE)
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


def ascii_quotes(text: str) -> str:
    """Typographic quotes as ASCII ones, case kept: what QUOTED reads."""
    return text if text.isascii() else text.translate(_QUOTES)


# A dash opening a word is an option's "--" set by typography ("–libnames" in a page rendered from
# "--libnames"); between words or before a number it is punctuation.
_OPTION_DASH = re.compile(r"(?<![\w-])[\u2013\u2014](?=[^\W\d_])")


def _typed(text: str) -> str:
    """NFKC, typographic quotes and dashes as ASCII, a dash opening a word as "--"; case kept."""
    return unicodedata.normalize("NFKC", _OPTION_DASH.sub("--", text)).translate(_QUOTES)


@lru_cache(maxsize=8192)
def fold(text: str) -> str:
    """Unicode-fold: NFKC, typographic quotes and dashes to ASCII (a dash opening a word to "--"),
    diacritics dropped, casefolded."""
    if text.isascii():
        return text.lower()
    text = _typed(text)
    text = "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))
    return text.casefold()


def cased_words(text: str) -> list[str]:
    """The tokens of `words(text)` as written (case kept): who is named where, for the role checks."""
    if not text.isascii():
        text = _typed(text)
        text = "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))
    return _WORD.findall(text)


def as_written(text: str, keys: Iterable[str]) -> list[str]:
    """Matching keys as `text` wrote them: "reset, Jira", not "reset, jira" or "cach" (a key no word of
    it has, as it is)."""
    spelled: dict[str, str] = {}
    for w in _WORD.findall(text):  # case and diacritics kept: what the reader typed
        spelled.setdefault(key(fold(w)), w)
    return [spelled.get(k, k) for k in keys]


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
    return list(_words(text))


@lru_cache(maxsize=16384)
def _words(text: str) -> tuple[str, ...]:  # a claim's sentence is read by several checks
    text = _BY.sub(r"\1 x \2", fold(text)).replace("%", " percent ")  # "10 %" reads as "ten percent"
    return tuple(_WORD.findall(text))


# "80x24", "1920x1080": two numbers (a size), not a number and a word; "0x1f" (hex) and "1x234" (a string
# of a format's example) stay as they are.
_BY = re.compile(r"(?<![\w.])([1-9]\d+)x(\d{2,})\b")


try:  # PyStemmer, what snowballstemmer returns when it is installed; importing snowballstemmer itself loads
    import Stemmer  # the pure-Python stemmer of every language (~0.1-0.3 s of each process's start)

    _SNOWBALL = Stemmer.Stemmer("english")
except ImportError:
    import snowballstemmer

    _SNOWBALL = snowballstemmer.stemmer("english")


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """Snowball English (the keyword index's stemmer) of the word's base form: "wrote" → "write" by
    WordNet's exception lists, "Ellis's" → "ellis"."""
    w = (word[:-2] if word.endswith("'s") else word).replace("'", "")
    if len(w) <= 2 or w[0].isdigit():  # as Snowball keeps them (and "is", "am" not read as "be")
        return w
    return _SNOWBALL.stemWord(lexicon.irregular_base(w) or w)


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


def keys(tokens: list[str]) -> list[str]:
    return list(_keys(tuple(tokens)))


@lru_cache(maxsize=16384)
def _keys(tokens: tuple[str, ...]) -> tuple[str, ...]:
    """The matching key of each token (see `key`), read in context: a run of number words is one number
    ("two hundred fifty-six" → #256 on each of its tokens, "nine point five" → #9.5), and a unit right
    after a number is its unit key ("64 kibibytes" and "64KiB" → #64 kib)."""
    out = [key(w) for w in tokens]
    quantities: list[tuple[int, int, int]] = []  # numbers read with a converted unit: start, end, unit
    i, n = 0, len(tokens)
    while i < n:
        j, value = number_run(tokens, i) if tokens[i] in COMPOSABLE else (i + 1, 0.0)
        if j > i + 1:
            out[i:j] = [f"#{value:g}"] * (j - i)
        count = float(out[i][1:]) if out[i].startswith("#") and not out[i].endswith("th") else None
        if (tokens[i] in ARTICLES or tokens[i] in FRACTIONS or count is not None) and (
            part := fraction_at(tokens, i, count)
        ):
            said, u, value = part  # "a quarter of a minute": #15 on "a quarter", the unit's base on the unit
            out[i:said] = [f"#{value:.6g}"] * (said - i)
            out[u] = CONVERSIONS[UNITS[tokens[u]]][0]
            quantities.append((i, said, u))
            i = u + 1
            continue
        u = j + 1 if j + 1 < n and tokens[j] in ARTICLES and out[i].startswith("#") else j  # "half an hour"
        # a unit spelt out, not a one- or two-letter symbol ("a m" is no quantity)
        spelt_unit = j < n and len(tokens[j]) > 2 and UNITS.get(tokens[j]) in CONVERSIONS
        if tokens[i] in ARTICLES and spelt_unit and not _ordinal_second(tokens, j):
            out[i] = "#1"  # "a week", "an hour"
        if out[i].startswith("#") and u < n and tokens[u] in UNITS:
            out[u] = UNITS[tokens[u]]
            if out[u] in CONVERSIONS and not out[i].endswith("th"):
                base, factor = CONVERSIONS[out[u]]
                half = 0.5 if tokens[u + 1 : u + 4] == ("and", "a", "half") else 0.0  # "an hour and a half"
                out[i:j] = [f"#{(float(out[i][1:]) + half) * factor:.6g}"] * (j - i)
                out[u] = base
                quantities.append((i, j, u))
            j = max(j, u)  # the article of "half an hour" is not "an hour" again
        i = max(j, i + 1)
    join_compounds(tokens, out, quantities)
    return tuple(out)


def _ordinal_second(tokens: tuple[str, ...], j: int) -> bool:
    """ "a second time", "a second server": "second" as the ordinal before a noun, not one second."""
    return tokens[j] == "second" and j + 1 < len(tokens) and tokens[j + 1] not in STOPWORDS


# --- names, identifiers, quoted strings --------------------------------------------------------------------

# An identifier: what a claim must carry exactly (a different flag, option, path, variable or format
# string is a different claim): a code span, a flag (-x, --name[=value]), an environment variable, a path,
# a qualified name (a.b, a::b, a->b), a call or manual reference (name(), name(3)), snake/SCREAMING case,
# camelCase or PascalCase with an inner capital, a word with digits, a format string (HH:MM:SS).
IDENT = re.compile(
    r"`([^`\n]{1,80})`"
    r"|(?<![\w-])--?[A-Za-z][\w-]*(?:=[^\s,;)]+)?"
    r"|\$\{?[A-Za-z_]\w*\}?"
    r"|(?<![\w/])(?:~|\.{1,2})?/[\w.@%+-]+(?:/[\w.@%*+-]+)*"
    r"|\b[A-Za-z_]\w*(?:(?:::|\.|->)[A-Za-z_*]\w*)+(?:\(\))?"
    r"|\b[A-Za-z_][\w-]*\((?:\d\w*)?\)"
    r"|\b[A-Za-z][A-Za-z0-9]*_\w+"
    r"|\b[A-Za-z][a-z]+[A-Z]\w*\b"
    r"|\b[A-Za-z]+\d+[A-Za-z\d]*\b"
    r"|\b[A-Za-z]{1,4}(?::[A-Za-z]{1,4})+\b"
    r"|(?<![\w'])'([^'\s]{1,40})'(?![\w'])"
)
# A "…"-quoted string (typographic quotes folded first).
QUOTED = re.compile(r'"([^"\n]{2,}?)"')
# Lower-case words that may join the words of one name ("Bank of England", "Ludwig van Beethoven").
NAME_CONNECTORS = frozenset({"of", "for", "the", "and", "&", "de", "von", "van", "der", "la", "le", "du", "del"})


def identifiers(text: str) -> list[str]:
    """The identifiers of a text, folded, as written (punctuation kept), trailing sentence marks dropped."""
    return list(_identifiers(text))


_CODE_SPAN = re.compile(r"`([^`\n]{1,80})`")


def as_read(text: str) -> str:
    """`text` as a reader reads it: inline code without its backticks, any run of whitespace one space."""
    return " ".join(_CODE_SPAN.sub(r"\1", text).split())


_MARKED = re.compile(r"[-$/.:_('\d]|[a-z][A-Z]")  # a token without one of these is a plain word


_OPENS = {")": "(", "]": "[", "}": "{"}
_URL = re.compile(r"\]\([^)\s]*\)|<?\b(?:https?|ftp)://[^\s<>)\]]+>?")
_JOINED = re.compile(r"-{0,2}[\w$]+(?:[-.:/][\w$]+)+")  # an option-like "-DD/MM/YY" too


def _whole(tok: str) -> str:
    """A token without the brackets and quotes around it (a closing bracket kept when it closes inside)."""
    tok = tok.lstrip("([{\"'")
    while tok and tok[-1] in ")]}\"'":
        opener = _OPENS.get(tok[-1])
        if opener and tok.count(opener) >= tok.count(tok[-1]):
            break
        tok = tok[:-1]
    return tok


@lru_cache(maxsize=16384)
def _identifiers(text: str) -> tuple[str, ...]:
    # token by token, and only tokens that could be one: the whole pattern over every position of a
    # sentence costs more than the rest of a claim's checks
    raw = text if text.isascii() else _typed(text)
    found = _CODE_SPAN.findall(raw)
    for tok in _URL.sub(" ", _CODE_SPAN.sub(" ", raw)).split():  # a link's target is not what it claims
        tok = tok.rstrip(".,;:!?")
        if _MARKED.search(tok):
            parts = [(m.group(1) or m.group(2) or m.group(0)).rstrip(".,:;") or m.group(2) for m in IDENT.finditer(tok)]
            whole = _whole(tok)
            # a part of a longer hyphenated or dotted name stands for the whole ("aarch64" of
            # "aarch64-unknown-linux-gnu"): the evidence must hold that, not the part alone
            found += [whole if p in whole and _JOINED.fullmatch(whole) else p for p in parts if p]
    # a unit is read with its number, however cased ("KiB", "MiB"): not a name that must occur as typed
    return tuple(dict.fromkeys(f for i in found if (f := fold(i)) and not f.isdigit() and f not in UNITS))


@lru_cache(maxsize=65536)
def _ident_pattern(ident: str) -> re.Pattern:
    # bounded as an identifier: "HH:MM" is not in "HH:MM:SS", "--type" is not in "--type-x"
    return re.compile(r"(?<![\w])(?<!\w[:./_-])" + re.escape(ident) + r"(?![\w]|[:./_-]\w)")


def ident_in(ident: str, folded: str) -> bool:
    """Whether the folded text holds the identifier exactly, not as part of a longer one."""
    return ident in folded and _ident_pattern(ident).search(folded) is not None


def is_content(word: str) -> bool:
    return word not in STOPWORDS and not (len(word) == 1 and not word.isdigit())


def content_keys(text: str) -> list[str]:
    """Matching keys of the content words, in order (stopwords dropped)."""
    ws = words(text)
    return [k for w, k in zip(ws, keys(ws), strict=True) if is_content(w)]


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


def negated_words(text: str, reach: int = 4) -> list[tuple[str, ...]]:
    """For each negation cue, the keys of the content words it governs, in order (the next `reach`: four
    reach the end of "does not enable remote logins by default"; within its clause: a comma, semicolon or
    colon ends what "not" turns around)."""
    return [scope for _, scope in negations_with_scope(text, reach)]


_FAILING_TO = frozenset("unable fails fail failed failing".split())


def negations_with_scope(text: str, reach: int = 4) -> list[tuple[str, tuple[str, ...]]]:
    """Each negation cue (folded) with the keys of the content words it governs (see `negated_words`)."""
    out = []
    for clause in re.split(r"[,;:]\s", _CODE.sub(" ", fold(text))):
        tokens = re.findall(r"[\w'-]+", clause)  # "not-null" whole: an identifier, not a cue; then _WORD
        for i, t in enumerate(tokens):
            if t in NEGATIONS or t.endswith("n't"):
                governed = [
                    w
                    for tok in tokens[i + 1 : i + 1 + 2 * reach]
                    for w in _WORD.findall(tok)
                    if is_content(w) and w not in NEGATIONS
                ]
                # "fails to complete" is "does not complete": a plain negation of the verb after it
                cue = "not" if t in _FAILING_TO and tokens[i + 1 : i + 2] == ["to"] else t
                out.append((cue, tuple(key(w) for w in governed[:reach])))
    return out

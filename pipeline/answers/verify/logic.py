"""Logical words are content: a claim that changes one changes what is asserted.

Documentation lives on a few small words — "must" or "may", "all" or "some", "before" or "after", "at
least" or "at most", "enable" or "disable", an added "only". Word-share checks drop them as stopwords, so
"the file may be removed before the restart" read like "the file must be removed after the restart". Here
each such word has a dimension (what it says something about) and a value on it; a claim is compared with
the evidence sentence it is aligned to, dimension by dimension:

    conflict   the claim says a value the sentence does not, and the sentence says another value of the
               same dimension ("'may' where the evidence says 'must'");
    added      the claim adds a restricting word the sentence has no word of its dimension for (an added
               "only", "always"): it says more than the evidence;
    traded     the claim says the sentence's order, comparison or preference with its two sides traded
               ("A is faster than B" for "B is faster than A", "A rather than B" for "B rather than A");
    replaced   the claim is the sentence edited, a logical word replaced in its place by another value of
               its dimension ("enabled by default" for "disabled by default; … have it enabled"): compared
               by place, as the sentence may say the claim's word elsewhere, of something else.

A word the claim leaves out weakens it ("must" dropped: the claim says less) and is not refused; a claim
without the sentence's qualifier is a partial claim. Words of one value stand for each other ("must" and
"have to", "before" and "prior to"): rewordings keep the value. General English, one table.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

import pipeline.answers.verify.edits as edits
from pipeline.answers import words as tx
from pipeline.answers.verify.polarity import asserted

# dimension → value → its words (phrases as space-joined words, matched longest first).
TABLE: dict[str, dict[str, tuple[str, ...]]] = {
    "modality": {  # what is required, advised or merely possible
        "necessary": ("must", "shall", "have to", "has to", "need to", "needs to", "required", "mandatory"),
        "advised": ("should", "ought to", "recommended"),
        "possible": ("may", "might", "can", "could", "optional", "optionally", "possible", "able to"),
    },
    "quantity": {  # of how many the claim speaks
        "all": ("all", "every", "each", "any"),
        "most": ("most",),
        "some": ("some", "several", "certain", "a few", "few"),
    },
    "order": {  # when, relative to another event
        "before": ("before", "prior to", "until", "earlier than", "ahead of"),
        "after": ("after", "following", "once", "later than"),
    },
    "rank": {"first": ("first",), "last": ("last", "final")},
    "frequency": {  # how often
        "always": ("always", "invariably"),
        "usually": ("usually", "typically", "normally", "generally", "often", "frequently", "by default"),
        "sometimes": ("sometimes", "occasionally", "at times"),
        "rarely": ("rarely", "seldom", "hardly ever"),
        "never": ("never",),
    },
    "bound": {  # a limit's side
        "lower": ("at least", "no less than", "no fewer than", "not less than", "minimum", "minimal", "min"),
        "upper": ("at most", "no more than", "not more than", "up to", "maximum", "maximal", "max"),
    },
    "comparison": {  # more or less of something
        "more": ("more", "greater", "larger", "largest", "bigger", "biggest", "higher", "highest", "longer", "above"),
        "less": ("less", "fewer", "smaller", "smallest", "lower", "lowest", "shorter", "below"),
    },
    "direction": {  # a change's direction, a switch's position, a gate's answer
        "increase": ("increase", "raise", "grow", "extend"),
        "decrease": ("decrease", "reduce", "shrink", "shorten"),
        "enable": ("enable", "activate", "turn on", "switch on"),
        "disable": ("disable", "deactivate", "turn off", "switch off"),
        "allow": ("allow", "accept", "permit"),
        "deny": ("deny", "refuse", "reject", "forbid"),
    },
    "scope": {  # to what the statement is restricted
        "only": ("only", "solely", "exclusively"),
        "except": ("except", "excluding", "other than", "apart from"),
        "unless": ("unless",),
        "if": ("if", "when", "whenever", "provided that", "in case"),
        # the condition does not matter: "unless the rules match" says it does
        "regardless": (
            "regardless",
            "irrespective",
            "despite",
            "in spite of",
            "even if",
            "even when",
            "whether or not",
        ),
    },
}
# Values whose addition restricts what is said: a claim that adds one says more than evidence with no word
# of its dimension ("only root can …" against "root can …"; "always" against no frequency; "unless" or
# "except" an exception the evidence does not make: 2 wrong claims of the round-16 fit sets more refused,
# no true fit claim). A universal quantifier is not among them: "each"/"every"/"any" are how a rewording
# says a plural ("every window").
RESTRICTING = frozenset({("scope", "only"), ("scope", "unless"), ("scope", "except"), ("frequency", "always")})
_ALL = ("quantity", "all")
# A claim's value the evidence's satisfies: a claim that something "should" be done says less than
# evidence that it "must" (the other way round it says more).
SATISFIED_BY = {("modality", "advised"): frozenset({"necessary"})}
# Dimensions compared only where the evidence sentence holds the same dimension: "if" and "when" open
# clauses a rewording may add or drop freely, so the scope dimension conflicts only on only/except/unless.
_CONDITION_FREE = frozenset({("scope", "if")})


# Dimensions whose two values say one relation from either end: "A before B" is "B after A", "A is
# smaller than B" is "B is larger than A" (a converse the claim may say; _converse).
_CONVERSE = frozenset({"order", "comparison"})
# Dimensions a negation turns round: "does not accept" says what "rejects" says, "is not enabled" what "is
# disabled" does; where one of the two is negated, the polarity check (sense.py) compares them instead.
_TURNED_BY_NEGATION = frozenset({"direction"})


# Verbs are matched on their Snowball stem ("enables", "enabled", "enabling"); other words as written
# (a stem would make "optional" the noun "option").
_INFLECTED = frozenset({"direction"})


@lru_cache(maxsize=1)
def _phrases() -> list[tuple[tuple[str, ...], bool, str, str]]:
    out = [
        (tuple(tx.stem(w) if dim in _INFLECTED else w for w in phrase.split()), dim in _INFLECTED, dim, value)
        for dim, values in TABLE.items()
        for value, phrases in values.items()
        for phrase in phrases
    ]
    return sorted(out, key=lambda p: -len(p[0]))


@lru_cache(maxsize=1)
def _by_first() -> dict[tuple[bool, str], list[int]]:
    """(whether stemmed, a phrase's first word) → the phrases (their places in `_phrases`) it begins."""
    out: dict[tuple[bool, str], list[int]] = {}
    for j, (phrase, inflected, _, _) in enumerate(_phrases()):
        out.setdefault((inflected, phrase[0]), []).append(j)
    return out


@lru_cache(maxsize=4096)
def marks(text: str) -> dict[tuple[str, str], str]:
    """The logical values a text holds ((dimension, value) → the words that say it), each word read once
    (longest phrase first: "at least" is a bound, not "least"; "no more than" an upper bound, not "more")."""
    ws = tx.words(tx.as_read(text))
    stems = [tx.stem(w) for w in ws]
    starts: dict[tuple[bool, str], list[int]] = {}  # where each word begins (a phrase is tried only there)
    for i, (w, st) in enumerate(zip(ws, stems, strict=True)):
        starts.setdefault((False, w), []).append(i)
        starts.setdefault((True, st), []).append(i)
    out: dict[tuple[str, str], str] = {}
    used = [False] * len(ws)
    first = _by_first()
    phrases = _phrases()
    for j in sorted({j for k in starts for j in first.get(k, ())}):  # the phrases that may match, in order
        phrase, inflected, dim, value = phrases[j]
        n, seq = len(phrase), stems if inflected else ws
        for i in starts.get((inflected, phrase[0]), ()):
            if i + n <= len(ws) and tuple(seq[i : i + n]) == phrase and not any(used[i : i + n]):
                used[i : i + n] = [True] * n
                out.setdefault((dim, value), " ".join(ws[i : i + n]))
    return out


def _said(m: dict[tuple[str, str], str], dim: str) -> Iterable[tuple[str, str]]:
    return ((v, w) for (d, v), w in m.items() if d == dim)


def changed(claim: str, sentence: str, evidence: str = "") -> str | None:
    """Why the claim's logical words assert something the evidence sentence does not, or None: the claim's
    word and the sentence's ("'may' where the evidence says 'must'"). A value said anywhere in the
    `evidence` (the sentence's whole text by default) is no change: a rewording may join sentences. Texts
    are read as they assert (polarity.asserted): "can't … more than 60 s" bounds from above, as "at most"."""
    if why := _preference_traded(claim, sentence, evidence):
        return why
    if why := _substituted(claim, sentence):
        return why
    claim, sentence, told = asserted(claim), asserted(sentence), asserted(evidence)
    mine, theirs = marks(claim), marks(sentence)
    anywhere = marks(told) if evidence else theirs
    turned = (tx.negations(claim) > 0) != (tx.negations(sentence) > 0)
    for (dim, value), word in mine.items():
        said = theirs.get((dim, value)) if dim in _CONVERSE else None  # the same word: its sides must agree
        if said and (why := _traded(claim, word, sentence, said, told, dim)):
            return why
        if (dim, value) in anywhere or (dim in _TURNED_BY_NEGATION and turned):
            continue
        other = [(v, w) for v, w in _said(theirs, dim) if (dim, v) not in _CONDITION_FREE]
        if (dim, value) in _CONDITION_FREE:  # "if" for "unless" turns the condition round; "if" for "when" does not
            other = [(v, w) for v, w in other if v == "unless" and (dim, v) not in mine]
        other = [(v, w) for v, w in other if v not in SATISFIED_BY.get((dim, value), ())]
        if other and dim in _CONVERSE and _converse(claim, word, sentence, other[0][1], told, dim):
            continue
        if other:
            return f"{word!r} where the evidence says {other[0][1]!r}"
        if (dim, value) in RESTRICTING and not any(d == dim for d, _ in theirs):
            return f"{word!r}, which the evidence does not say"
    # "at any point" for "only in the first three updates", "any number of files" for "only for a single file":
    # a claim of all where the sentence restricts with "only" (and the claim does not) drops the restriction
    # and says the opposite of it. On the fit claims: 5 wrong ones more refused, no true one.
    if (only := theirs.get(("scope", "only"))) and ("scope", "only") not in mine and (every := mine.get(_ALL)):
        return f"{every!r} where the evidence says {only!r}"
    return None


def _substituted(claim: str, sentence: str) -> str | None:
    """Why the claim is the sentence edited with a logical word replaced by another value of its dimension
    in its place ("enabled by default" for "disabled by default", "more conservative" where the sentence
    says "less conservative … more likely"), or None (edits.py: the sentence may say the claim's word
    elsewhere, of something else)."""
    e = edits.edit(claim, sentence)
    for mine, theirs in e.spans() if e else ():
        if tx.negations(mine) or tx.negations(theirs):
            continue  # "not enabled" for "disabled": the polarity check compares those
        a, b = marks(mine), marks(theirs)
        for (dim, value), word in a.items():
            for (d, v), said in b.items():
                if d != dim or v == value or v in SATISFIED_BY.get((dim, value), ()):
                    continue
                if dim in _CONVERSE and _converse(claim, word, sentence, said, "", dim):
                    continue  # "memory is more expensive than disk" for "disk is less expensive than memory"
                return f"{word!r} where the evidence says {said!r}"
    return None


def _sides(text: str, word: str) -> tuple[set[str], set[str]] | None:
    """The content keys before and after the first place `text` says `word` (a phrase), or None."""
    ws, phrase = tx.words(text), tx.words(word)
    n = len(phrase)
    at = next((i for i in range(len(ws) - n + 1) if ws[i : i + n] == phrase), None)
    if at is None:
        return None
    return set(tx.content_keys(" ".join(ws[:at]))), set(tx.content_keys(" ".join(ws[at + n :])))


def _converse(claim: str, word: str, sentence: str, said: str, evidence: str, dim: str) -> bool:
    """Whether the claim says the sentence's order or comparison from the other end: "A before B" for "B
    after A", "A is smaller than B" for "B is greater than A". What stands after the claim's word stands
    before the sentence's (in the sentence, or earlier in the evidence: "This duration …" named before),
    what stands before it after the sentence's, and nothing after the sentence's word is after the claim's
    too. A sentence with one word changed keeps each side where it was: never a converse."""
    mine, theirs = _sides(claim, word), _sides(sentence, said)
    if dim == "comparison" and (compared := _sides_of(claim, word, dim)) and (them := _sides_of(sentence, said, dim)):
        mine, theirs = compared, them  # what is compared, not the adjective both say ("more expensive than")
    if mine is None or theirs is None:
        return False
    left, right = mine
    e_left, e_right = theirs
    e_left |= set(tx.content_keys(evidence.split(sentence)[0])) if sentence and sentence in evidence else set()
    only_left, only_right = e_left - e_right, e_right - e_left
    return bool(right & only_left) and bool(left & only_right) and not right & only_right


# Where a clause ends: its punctuation, or a word that opens another clause.
_CLAUSE_END = re.compile(
    r"[,;:()]|(?<![\w-])(?:and|or|but|so|therefore|thus|hence|which|because|since|while|whereas|if|unless|when"
    r"|whenever)(?![\w-])",
    re.IGNORECASE,
)
_THAN = re.compile(r"(?:\s+[\w-]+){0,2}?\s+than(?![\w-])", re.IGNORECASE)  # "more conservative than"
_PREFERENCE = ("rather than", "instead of")  # "A rather than B": A chosen over B


def _sides_of(text: str, word: str, dim: str) -> tuple[set[str], set[str]] | None:
    """The content keys of the clause before `word` (a phrase) and of what it relates to after it (after
    "than" for a comparison: "A is faster than B"), each within its clause; None where `text` does not
    say it so (a comparison without "than", "above 4", compares nothing named)."""
    m = re.search(_phrase(word), text, re.IGNORECASE)
    if m is None:
        return None
    end = m.end()
    if dim == "comparison":
        than = _THAN.match(text, end)
        if than is None:
            return None
        end = than.end()
    before, after = text[: m.start()], text[end:]
    before = before.rstrip(" ,;:")  # "the file, rather than the shell": a comma before the word ends no clause
    cut = [b.end() for b in _CLAUSE_END.finditer(before)]
    stop = _CLAUSE_END.search(after)
    left = before[cut[-1] :] if cut else before
    return set(tx.content_keys(left)), set(tx.content_keys(after[: stop.start()] if stop else after))


def _traded(claim: str, word: str, sentence: str, said: str, evidence: str, dim: str) -> str | None:
    """Why the claim says the sentence's order, comparison or preference with its two sides traded ("A is
    faster than B" for "B is faster than A", "run A before B" for "run B before A"), or None: what the
    claim puts after its word stands before the sentence's (or earlier in the evidence: "This command
    …" named before), what it puts before stands after, and the two never share what follows."""
    mine, theirs = _sides_of(claim, word, dim), _sides_of(sentence, said, dim)
    if mine is None or theirs is None:
        return None
    (left, right), (e_left, e_right) = mine, theirs
    if sentence and sentence in evidence:
        e_left |= set(tx.content_keys(evidence.split(sentence)[0]))
    # each side's own words ("full-upgrade" and "safe-upgrade" share "upgrade")
    left, right, e_left, e_right = left - right, right - left, e_left - e_right, e_right - e_left
    if right & e_left and left & e_right and not right & e_right:
        return f"the two sides of {word!r} trade places against the evidence"
    return None


def _preference_traded(claim: str, sentence: str, evidence: str) -> str | None:
    """ "A rather than B" (or "instead of") where the sentence says "B rather than A": `_traded`, on the
    texts as written (as they assert, "rather than" reads as "not")."""
    mine = next((p for p in _PREFERENCE if _says(claim, p)), None)
    theirs = next((p for p in _PREFERENCE if _says(sentence, p)), None)
    return _traded(claim, mine, sentence, theirs, evidence, "preference") if mine and theirs else None


def _phrase(words: str) -> str:
    """A pattern for `words` (a phrase) as whole words, any spacing."""
    return r"(?<![\w-])" + r"\s+".join(map(re.escape, words.split())) + r"(?![\w-])"


def _says(text: str, phrase: str) -> bool:
    return re.search(_phrase(phrase), text, re.IGNORECASE) is not None


def align(claim: str, sentences: list[str]) -> str:
    """The sentence (of the evidence's) that says most of the claim's content words (ties: the shorter)."""
    keys = set(tx.content_keys(claim))
    best, best_score = "", (-1, 0)
    for s in sentences:
        sk = set(tx.content_keys(s))
        score = (len(keys & sk), -len(sk))
        if score > best_score:
            best, best_score = s, score
    return best


def problem(claim: str, sentences: list[str], aligned: str | None = None) -> str | None:
    """The logical change of `claim` against the evidence sentence it is aligned to (`aligned`, where the
    caller has it: `align`), as a violation."""
    if not sentences:
        return None
    why = changed(claim, align(claim, sentences) if aligned is None else aligned, " ".join(sentences))
    return f"logical word changed: {why}" if why else None

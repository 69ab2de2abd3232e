"""The deterministic lexical verifier: every claim against the exact evidence it cites.

    parse     one claim per line; the pointers ([E1], [E1,E3]) anywhere on the line are what it rests on.
              A line without a pointer is an unsupported claim; a pointer naming no block is a violation.
    strategy  first success wins:
              quote       every "…"-quoted span occurs verbatim in one cited block, and the words around
                          the quotes (attribution aside) occur there too;
              span        the whole claim, normalised for case/whitespace/punctuation, is a substring of a
                          cited block (and not one that a negation right before it turns around);
              entity      its anchors (multi-word proper nouns, numbers, identifiers) all occur in one cited
                          block within WINDOW tokens (names in one sentence), and ≥ 80 % of its other content
                          words (≥ 85 % with a single anchor) occur in the sentences that hold them;
              paraphrase  ≥ 85 % of its content words (stemmed; numbers in digit or word form) occur in
                          one cited block.
    anchors   on top, whatever passed: a date (month + year, day) must occur as such in a cited block; a
              count must occur in digit or word form; a claim naming proper nouns needs one of them in a
              cited block; every number and code identifier must occur. For entity and paraphrase also:
              the claim's negation must agree with the evidence sentence it matches best, and two anchors
              found in that sentence must not appear in swapped order.
    audit     STRICT: every claim passed by quote or span; HYBRID: every claim passed, some only by entity
              or paraphrase; UNGROUNDED otherwise, or when no claim could be parsed.

Long claims are checked sentence by sentence (each must pass; the weakest strategy counts).
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections import Counter
from dataclasses import dataclass, replace
from functools import cached_property

from pipeline.answers import subject as sj
from pipeline.answers import text as tx
from pipeline.answers.model import STRATEGIES, STRICT_STRATEGIES, Claim, Verdict

POLICY_VERSION = "2"  # 2: the question-aware layer (addresses_question, deflection → HYBRID); no new content word
PARAPHRASE_MIN = 0.85
ENTITY_OTHER_MIN = 0.8
ENTITY_SINGLE_MIN = 0.85  # an entity claim with a single anchor needs this much of its other words
WINDOW = 40  # "near each other", in tokens
TIGHT = 12  # names outside one sentence must be this close
POLICY = {
    "version": POLICY_VERSION,
    "paraphrase_min": PARAPHRASE_MIN,
    "entity_other_min": ENTITY_OTHER_MIN,
    "entity_single_min": ENTITY_SINGLE_MIN,
    "window": WINDOW,
    "tight": TIGHT,
}

_PTR = r"E\s*[1-9]\d{0,2}"
POINTER_GROUP = re.compile(rf"[\[(【]\s*((?:{_PTR})(?:\s*(?:[,;&/]|and)\s*E?\s*[1-9]\d{{0,2}})*)\s*[\])】]", re.I)
_BULLET = re.compile(r"^\s*(?:[-*+•·]|\d{1,3}[.)]|\(\d{1,3}\)|[a-z][.)](?=\s))\s+")
_QUOTED = re.compile(r'"([^"]{3,}?)"')
_ATTRIBUTION = frozenset(
    tx.stem(w)
    for w in """say says said state states stated note notes noted write writes
wrote written describe describes described call calls called explain explains explained mention mentions
mentioned read reads according rfc document documentation section evidence text quote quoted put word words
phrase term define defines defined refer refers referred specify specifies specified""".split()
)
_LIGHT = frozenset(
    tx.stem(w)
    for w in """also thus therefore hence instead rather simply just really actually generally usually
typically basically currently still already only very quite mainly mostly often sometimes now then way
thing things kind sort able make makes made get gets got give gives given take takes let lets allow allows
allowed need needs needed want wants help helps use uses used using provide provides provided well like
one ones""".split()
)
_VERDICT_WORDS = frozenset({"yes", "no", "true", "false", "correct", "incorrect", "right", "wrong"})
_NEG_BEFORE = frozenset({"not", "no", "never", "cannot", "nor", "without"})
_ISO_DATE = re.compile(r"\b(\d{4})-(\d{1,2})(?:-(\d{1,2}))?\b")
_MONTH = (
    r"(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?"
    r"|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?"
)
_DATE_MDY = re.compile(rf"\b{_MONTH}\s+(?:(\d{{1,2}})(?:st|nd|rd|th)?,?\s+)?(\d{{4}})\b")
_DATE_DMY = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH},?\s+(\d{{4}})\b")
_IDENT = re.compile(
    r"`([^`\n]{1,80})`|\b[A-Za-z_][\w]*(?:(?:::|\.)[A-Za-z_]\w*)+(?:\(\))?"
    r"|\b[a-z]+_[a-z_0-9]+\b|\b[a-z]+[A-Z]\w*\b|\b[A-Za-z]+\d+[A-Za-z\d]*\b"
)
_CAP = re.compile(r"[A-Z][\w'’.-]*")
_CONNECT = frozenset({"of", "for", "the", "de", "von", "van", "der", "la", "le", "du", "del"})
_NOT_COUNTS = frozenset({"one", "single", "half", "double", "twice", "triple", "dozen"})


# --- parsing -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ParsedClaim:
    text: str
    pointers: tuple[str, ...]


def parse_claims(answer: str) -> list[ParsedClaim]:
    """One claim per non-empty line; pointers are collected from anywhere on the line."""
    claims = []
    for line in answer.splitlines():
        pointers: list[str] = []
        for m in POINTER_GROUP.finditer(line):
            for num in re.findall(r"\d+", m.group(1)):
                p = f"E{int(num)}"
                if p not in pointers:
                    pointers.append(p)
        text = POINTER_GROUP.sub(" ", line)
        text = _BULLET.sub("", text)
        text = re.sub(r"\s+", " ", text).strip()
        text = re.sub(r"\s+([.,;:!?])", r"\1", text)
        if not re.search(r"\w", text):
            continue  # separators, a bare pointer list
        claims.append(ParsedClaim(text, tuple(pointers)))
    return claims


# --- evidence blocks ---------------------------------------------------------------------------------------

_MD_LINK = re.compile(r"!?\[([^\]\n]*)\]\([^)\s]*(?:\s+\"[^\"]*\")?\)|!?\[([^\]\n]+)\]\[[^\]\n]*\]|<https?://[^>]+>")


class Block:
    """A cited evidence text, preprocessed once for every claim that cites it."""

    def __init__(self, text: str):
        self.text = text
        self.norm = tx.normalise(text)
        plain = _MD_LINK.sub(lambda m: m.group(1) or m.group(2) or " ", text)
        self.norm_plain = tx.normalise(plain) if plain != text else self.norm

    # Lazy: a claim that passes by span never needs them.
    @cached_property
    def words(self) -> list[str]:
        return tx.words(self.text)

    @cached_property
    def keys(self) -> list[str]:
        return [tx.key(w) for w in self.words]

    @cached_property
    def keyset(self) -> frozenset[str]:
        return frozenset(self.keys)

    @cached_property
    def folded(self) -> str:
        return tx.fold(self.text)

    @cached_property
    def positions(self) -> dict[str, list[int]]:
        pos: dict[str, list[int]] = {}
        for i, k in enumerate(self.keys):
            pos.setdefault(k, []).append(i)
        return pos

    @cached_property
    def sentences(self) -> list[tuple[int, int]]:
        """Token ranges [start, end) of the block's sentences (lines count as boundaries)."""
        out, start = [], 0
        self._sentence_texts: dict[tuple[int, int], str] = {}
        for line in self.text.splitlines():
            for s in tx.split_sentences(line):
                n = len(tx.words(s))
                if n:
                    out.append((start, start + n))
                    self._sentence_texts[(start, start + n)] = s
                    start += n
        return out or [(0, len(self.words))]

    def sentence_text(self, lo: int, hi: int) -> str:
        self.sentences  # noqa: B018 — fills _sentence_texts
        return self._sentence_texts.get((lo, hi), " ".join(self.words[lo:hi]))

    @cached_property
    def dates(self) -> set[tuple[int, int | None, int]]:
        return set(_dates(self.folded))

    def phrase_at(self, phrase_norm: str) -> list[int]:
        """Token positions where a normalised phrase starts (remembered: claims repeat their anchors)."""
        if (known := self._phrases.get(phrase_norm)) is not None:
            return known
        out, i, last, spaces = [], self.norm.find(phrase_norm), 0, 0
        while i >= 0:
            spaces += self.norm.count(" ", last, i)  # counted from the last hit, not from 0: linear in the text
            out.append(spaces)
            last, i = i, self.norm.find(phrase_norm, i + 1)
        if not out and phrase_norm in self.norm_plain:
            out.append(-1)  # present (in link text), position unknown
        self._phrases[phrase_norm] = out
        return out

    @cached_property
    def _phrases(self) -> dict[str, list[int]]:
        return {}

    def words_of(self, hay: str) -> frozenset[str]:
        """The words of `norm` or `norm_plain` (whichever `hay` is), as a span match needs them all."""
        if hay is self.norm:
            return self._norm_words
        return self._plain_words

    @cached_property
    def _norm_words(self) -> frozenset[str]:
        return frozenset(self.norm.split())

    @cached_property
    def _plain_words(self) -> frozenset[str]:
        return frozenset(self.norm_plain.split())

    # Sentence lookups, so a claim costs what its own words cost, not a pass over every sentence.
    @cached_property
    def sentence_of(self) -> list[int]:
        """The sentence number of each token position."""
        out = [0] * len(self.keys)
        for n, (lo, hi) in enumerate(self.sentences):
            out[lo:hi] = [n] * (hi - lo)
        return out

    @cached_property
    def sentence_keys(self) -> list[frozenset[str]]:
        return [frozenset(self.keys[lo:hi]) for lo, hi in self.sentences]

    def sentences_with(self, positions: list[int]) -> set[int]:
        """The sentence numbers holding these token positions (unknown ones, -1, left out)."""
        return {self.sentence_of[p] for p in positions if 0 <= p < len(self.sentence_of)}

    @cached_property
    def key_sentences(self) -> dict[str, set[int]]:
        return {k: self.sentences_with(ps) for k, ps in self.positions.items()}


class LazyBlocks(dict):
    """Blocks built on first use: most inputs cite few of the blocks they carry."""

    def __init__(self, texts: dict[str, str]):
        super().__init__()
        self.texts = texts

    def __contains__(self, pointer) -> bool:
        return pointer in self.texts

    def __missing__(self, pointer: str) -> Block:
        block = self[pointer] = Block(self.texts[pointer])
        return block


def _dates(folded: str) -> list[tuple[int, int | None, int]]:
    """(month, day or None, year) of every date written in a text."""
    out = []
    for m in _DATE_MDY.finditer(folded):
        out.append(
            (
                tx.MONTHS[m.group(1)[:3] if m.group(1)[:4] != "sept" else "sep"],
                int(m.group(2)) if m.group(2) else None,
                int(m.group(3)),
            )
        )
    for m in _DATE_DMY.finditer(folded):
        out.append((tx.MONTHS[m.group(2)[:3]], int(m.group(1)), int(m.group(3))))
    for m in _ISO_DATE.finditer(folded):
        if 1 <= int(m.group(2)) <= 12:
            out.append((int(m.group(2)), int(m.group(3)) if m.group(3) else None, int(m.group(1))))
    return out


# --- anchors ----------------------------------------------------------------------------------------------


@dataclass
class Anchors:
    proper: list[str]  # normalised multi-word (or mid-sentence) proper nouns
    numbers: list[str]  # number keys ("#3") that must occur
    idents: list[str]  # normalised code identifiers
    dates: list[tuple[int, int | None, int]]

    @property
    def all(self) -> list[str]:
        return self.proper + self.idents + self.numbers


def anchors(sentence: str) -> Anchors:
    folded_raw = tx.fold(sentence)
    proper = _proper_nouns(sentence)
    idents = []
    for m in _IDENT.finditer(sentence):
        ident = tx.normalise(m.group(1) or m.group(0)).strip()
        if ident and not ident.isdigit() and ident not in idents:
            idents.append(ident)
    numbers = []
    for w in tx.words(sentence):
        if w in _NOT_COUNTS or w in tx.ORDINALS:
            continue
        if tx.number_value(w) is not None:
            k = tx.key(w)
            if k not in numbers:
                numbers.append(k)
    return Anchors(proper, numbers, idents, _dates(folded_raw))


def _proper_nouns(sentence: str) -> list[str]:
    """Runs of capitalised words (inner 'of'/'for'/… allowed): multi-word ones, or single ones not
    at the start of a sentence (a capital there says nothing)."""
    tokens = re.findall(r"[\w'’&-]+(?:\.\w+)*|[.!?:;,()\"]", sentence)
    out: list[str] = []
    run: list[tuple[str, bool]] = []

    def close() -> None:
        words = [w for w, _ in run]
        initial = bool(run) and run[0][1]
        while words and words[-1].lower() in _CONNECT:
            words.pop()
        while words and words[0].lower() in tx.STOPWORDS:  # "The Rust Foundation" → "Rust Foundation"
            words.pop(0)
            initial = False
        if len(words) >= 2 or (len(words) == 1 and not initial):
            phrase = tx.normalise(" ".join(words)).strip()
            if phrase and phrase not in out:
                out.append(phrase)
        run.clear()

    start = True
    for i, t in enumerate(tokens):
        if t in ".!?:;":
            close()
            start = True
            continue
        if t in ',()"':
            close()
            continue
        if t[0].isupper() and t != "I":
            run.append((t, start))
        elif run and t.lower() in _CONNECT and i + 1 < len(tokens) and tokens[i + 1][0].isupper():
            run.append((t, False))
        else:
            close()
        start = False
    close()
    return out


# --- checking one claim -----------------------------------------------------------------------------------


@dataclass
class _Result:
    strategy: str | None
    violations: list[str]


def check_claim(text: str, pointers: tuple[str, ...], blocks: dict[str, Block]) -> Claim:
    """Verify one claim against the blocks it cites."""
    violations = []
    if not pointers:
        return Claim(text, pointers, False, None, ("no pointer: the claim cites no evidence",))
    for p in pointers:
        if p not in blocks:
            violations.append(f"pointer {p} names no evidence block")
    cited = [blocks[p] for p in pointers if p in blocks]
    if not cited:
        return Claim(text, pointers, False, None, tuple(violations))
    whole = _check_sentence(text, cited, whole=True)
    if whole.strategy in STRICT_STRATEGIES or len(tx.split_sentences(text)) < 2:
        result = whole
    else:  # several sentences on one line: each must pass, the weakest strategy counts
        parts = [_check_sentence(s, cited) for s in tx.split_sentences(text) if tx.words(s)]
        failed = [r for r in parts if r.strategy is None]
        if failed:
            result = _Result(None, [v for r in failed for v in r.violations])
        else:
            result = _Result(max((r.strategy for r in parts), key=STRATEGIES.index), [])
    violations += result.violations
    ok = result.strategy is not None and not violations
    return Claim(text, pointers, ok, result.strategy if ok else None, tuple(dict.fromkeys(violations)))


def _check_sentence(s: str, cited: list[Block], whole: bool = False) -> _Result:
    norm = tx.normalise(s)
    if norm.strip() == "":
        return _Result(None, ["empty claim"])
    if set(norm.split()) <= _VERDICT_WORDS:  # a bare "yes" / "no": it asserts nothing the evidence could
        return _Result("paraphrase", [])  # contradict lexically; never STRICT (see docs/answers.md)
    anc = anchors(s)
    strategy = _quote(s, cited) or _span(norm, cited)
    if strategy == "quote":  # "The RFC says …": the attribution is no claim about the evidence
        anc.proper = [p for p in anc.proper if not set(tx.key(w) for w in p.split()) <= _ATTRIBUTION]
    if strategy is None:
        strategy = _entity(s, anc, cited) or _paraphrase(s, anc, cited)
        if strategy is None:
            return _Result(None, _anchor_problems(anc, cited) + [_why_not(s, cited)])
    problems = _anchor_problems(anc, cited)
    if strategy == "quote":  # the words around a quote may turn it around: same negations as the evidence
        problems += [p for p in _sense_problems(s, anc, cited) if p.startswith("negation")]
    elif strategy != "span":
        problems += _sense_problems(s, anc, cited)
    return _Result(None, problems) if problems else _Result(strategy, [])


def _quote(s: str, cited: list[Block]) -> str | None:
    folded = tx.fold(s)
    quotes = [q for q in _QUOTED.findall(folded) if len(tx.words(q)) >= 2]
    if not quotes:
        return None
    rest = _QUOTED.sub(lambda m: m.group(0) if len(tx.words(m.group(1))) < 2 else " ", folded)
    if tx.has_negation(tx.words(rest)):
        return None  # "it is not true that «…»"
    rest_keys = {k for k in tx.content_keys(rest) if k not in _ATTRIBUTION}
    # names outside the quotes must occur as written ("Brooks Garth" is not "Garth Brooks")
    names = [n for n in _proper_nouns(_QUOTED.sub(" ", s)) if len(n.split()) >= 2]
    for b in cited:
        if (
            all(tx.normalise(q) in b.norm or tx.normalise(q) in b.norm_plain for q in quotes)
            and rest_keys <= b.keyset
            and all(b.phrase_at(" " + tx.normalise(n).strip() + " ") for n in names)
        ):
            return "quote"
    return None


def _span(norm: str, cited: list[Block]) -> str | None:
    words = set(norm.split())
    for b in cited:
        for hay in (b.norm, b.norm_plain):
            if not words <= b.words_of(hay):  # a word it lacks: no need to scan the whole text for it
                continue
            i = hay.find(norm)
            while i >= 0:
                before = hay[max(0, i - 40) : i].split()[-2:]
                if not _NEG_BEFORE.intersection(before) and not any(
                    w.endswith("nt") and w[:-2] + "n't" in tx.NEGATIONS for w in before
                ):
                    return "span"
                i = hay.find(norm, i + 1)
    return None


def _entity(s: str, anc: Anchors, cited: list[Block]) -> str | None:
    found_any = anc.all
    if not found_any:
        return None
    other = [k for k in dict.fromkeys(tx.content_keys(s)) if not _is_anchor_key(k, anc)]
    need = ENTITY_OTHER_MIN if len(found_any) >= 2 else ENTITY_SINGLE_MIN
    for b in cited:
        spots = [_positions(a, anc, b) for a in found_any]
        if any(not p for p in spots):
            continue
        if not _near(spots, b) or not _together(anc.proper, anc, b):
            continue
        held = [b.sentences_with(ps) for ps in spots]
        held = [h for h in held if h]

        # the other words must be found in the sentences that hold the anchors, not anywhere in the block
        found = [_held_near(k, b, held) for k in other]
        if other and sum(found) / len(other) < need:
            continue
        if any(not f and not _light(k, b) for k, f in zip(other, found, strict=True)):
            continue  # a changed content word: not a rewording
        return "entity"
    return None


def _paraphrase(s: str, anc: Anchors, cited: list[Block]) -> str | None:
    keys = list(dict.fromkeys(tx.content_keys(s)))
    if not keys:
        return None
    for b in cited:
        if sum(k in b.keyset for k in keys) / len(keys) >= PARAPHRASE_MIN and all(
            k in b.keyset or _light(k, b) for k in keys
        ):
            return "paraphrase"
    return None


def _held_near(k: str, b: Block, held: list) -> bool:
    """Whether `k` occurs in one of the sentences `held` (those holding the anchors), or in the block
    when no sentence holds them."""
    if not held:
        return k in b.keyset
    return any(not b.key_sentences.get(k, set()).isdisjoint(h) for h in held)


def _light(k: str, b: Block) -> bool:
    """A word a rewording may add without changing what is claimed: a generic word, or another form of a
    word of the block (same first five letters). Any other new content word — a swapped name, noun, verb
    or number — makes the claim say something the block does not."""
    if k in _LIGHT or k in tx.NEGATIONS:  # polarity is the negation check's
        return True
    return len(k) >= 6 and not k.startswith("#") and any(o.startswith(k[:5]) for o in b.keyset)


def _is_anchor_key(k: str, anc: Anchors) -> bool:
    if k in anc.numbers:
        return True
    return any(k in (tx.key(w) for w in p.split()) for p in anc.proper + anc.idents)


def _positions(a: str, anc: Anchors, b: Block) -> list[int]:
    if a.startswith("#"):
        return b.positions.get(a, [])
    return b.phrase_at(" " + a + " ")


def _near(spots: list[list[int]], b: Block) -> bool:
    """Some choice of one position per anchor lies within WINDOW tokens (unknown positions match)."""
    known = [[p for p in ps if p >= 0] for ps in spots]
    known = [ps for ps in known if ps]
    if len(known) < 2:
        return True
    return _within(known, WINDOW)


def _within(spots: list[list[int]], span: int) -> bool:
    """Some position of the first list has one of every other list within `span` tokens (lists are
    ascending: a binary search each, not a scan)."""
    return any(
        all((j := bisect_left(ps, start - span)) < len(ps) and ps[j] <= start + span for ps in spots[1:])
        for start in spots[0]
    )


def _together(names: list[str], anc: Anchors, b: Block) -> bool:
    """Two or more names must meet in one sentence of the block (or within TIGHT tokens): names that
    the evidence only mentions apart are the raw material of swapped-entity fabrications."""
    spots = [[p for p in _positions(a, anc, b) if p >= 0] for a in names]
    spots = [ps for ps in spots if ps]
    if len(spots) < 2:
        return True
    if set.intersection(*(b.sentences_with(ps) for ps in spots)):
        return True
    return _within(spots, TIGHT)


def _anchor_problems(anc: Anchors, cited: list[Block]) -> list[str]:
    problems = []
    for d in anc.dates:
        if not any(_date_in(d, b) for b in cited):
            month = list(tx.MONTHS)[d[0] - 1].title()
            day = "" if d[1] is None else f"{d[1]} "
            problems.append(f"date {month} {day}{d[2]} is not in the cited evidence")
    for n in anc.numbers:
        if not any(n in b.keyset for b in cited):
            problems.append(f"number {n[1:]} is not in the cited evidence")
    for ident in anc.idents:
        if not any(f" {ident} " in b.norm or f" {ident} " in b.norm_plain for b in cited):
            problems.append(f"identifier {ident!r} is not in the cited evidence")
    if anc.proper and not any(f" {p} " in b.norm or f" {p} " in b.norm_plain for p in anc.proper for b in cited):
        problems.append(f"none of its names ({', '.join(anc.proper)}) is in the cited evidence")
    return problems


def _date_in(d: tuple[int, int | None, int], b: Block) -> bool:
    month, day, year = d
    return any(m == month and y == year and (day is None or dd == day) for m, dd, y in b.dates)


def _sense_problems(s: str, anc: Anchors, cited: list[Block]) -> list[str]:
    """For claims that only share words with the evidence: same polarity, same order of names."""
    words = tx.words(s)
    for name in anc.proper:  # reworded claims may not bring names of their own
        if not any(all(tx.key(w) in b.keyset for w in name.split() if tx.is_content(w)) for b in cited):
            return [f"name {name!r} is not in the cited evidence"]
    keys = {tx.key(w) for w in words if tx.is_content(w) and w not in tx.NEGATIONS}
    best, best_b, best_r = -1.0, None, (0, 0)
    for b in cited:
        shared = Counter(n for k in keys for n in b.key_sentences.get(k, ()))  # only sentences it shares words with
        for n in sorted(shared) or [0]:
            (lo, hi), sk, hit = b.sentences[n], b.sentence_keys[n], shared[n]
            score = hit / (len(keys) or 1) + 0.01 * hit / (len(sk) or 1)  # ties: the more specific sentence
            if score > best:
                best, best_b, best_r = score, b, (lo, hi)
    if best_b is None:
        return []
    lo, hi = best_r
    claim_neg = _negated(s, keys)
    # a bare name ("Ford Fusion") asserts no polarity
    short = not claim_neg and len(words) <= 4 and all(w[:1].isupper() or w[:1].isdigit() for w in s.split())
    if not short and claim_neg != _negated(best_b.sentence_text(lo, hi), keys):
        return ["negation differs from the evidence sentence it matches"]
    far = [n for n in anc.numbers if not any(lo - WINDOW <= p < hi + WINDOW for p in best_b.positions.get(n, []))]
    if far:
        return [f"number {far[0][1:]} is not where the evidence says what the claim says"]
    if len(anc.proper) >= 2 and not any(_together(anc.proper, anc, b) for b in cited):
        return ["its names never appear together in the cited evidence"]
    named = anc.proper + anc.idents + anc.numbers
    first = re.match(r"\s*([A-Z][\w'’-]+)", s)  # a capital at the start may be a name too
    if first and first.group(1).lower() not in tx.STOPWORDS and tx.normalise(first.group(1)).strip() not in named:
        named = [tx.normalise(first.group(1)).strip()] + named
    if len(named) >= 2 and _swapped(s, named, anc, best_b, lo, hi):
        return ["names appear in swapped roles in the evidence"]
    return []


def _negated(text: str, claim_keys: set[str]) -> int:
    """Negations that govern what the claim talks about (one in an aside of the evidence does not count)."""
    return sum(1 for scope in tx.negation_scopes(text) if scope & claim_keys or not scope)


def _swapped(s: str, named: list[str], anc: Anchors, b: Block, lo: int, hi: int) -> bool:
    """Two names joined by the same relation words in the claim and in the evidence sentence, but in
    the opposite order ("A acquired B" against "B acquired A"); passives ("by") are left alone."""
    claim = Block(s)
    if "by" in claim.words or "by" in b.words[lo:hi]:
        return False
    for i, x in enumerate(named):
        for y in named[i + 1 :]:
            cx, cy = _positions(x, anc, claim), _positions(y, anc, claim)
            ex = [p for p in _positions(x, anc, b) if lo <= p < hi]
            ey = [p for p in _positions(y, anc, b) if lo <= p < hi]
            if not (cx and cy and ex and ey) or cx[0] < 0 or cy[0] < 0:
                continue
            if (cx[0] < cy[0]) == (ex[0] < ey[0]):
                continue
            c_lo, c_hi = sorted((cx[0], cy[0]))
            e_lo, e_hi = sorted((ex[0], ey[0]))
            rel_c = {
                k
                for k, w in zip(claim.keys[c_lo + 1 : c_hi], claim.words[c_lo + 1 : c_hi], strict=False)
                if tx.is_content(w)
            }
            rel_e = {
                k for k, w in zip(b.keys[e_lo + 1 : e_hi], b.words[e_lo + 1 : e_hi], strict=False) if tx.is_content(w)
            }
            rel_c -= set(claim.keys[cx[0] : cx[0] + len(x.split())]) | set(claim.keys[cy[0] : cy[0] + len(y.split())])
            if rel_c and rel_c <= rel_e:
                return True
    return False


def _why_not(s: str, cited: list[Block]) -> str:
    keys = list(dict.fromkeys(tx.content_keys(s)))
    if not keys:
        return "nothing checkable: no content words"
    best = max(cited, key=lambda b: sum(k in b.keyset for k in keys))
    missing = [w for w in dict.fromkeys(tx.words(s)) if tx.is_content(w) and tx.key(w) not in best.keyset]
    share = 1 - len({tx.key(w) for w in missing}) / len(keys)
    return f"not supported: {share:.0%} of its words are in the cited evidence (missing: {', '.join(missing[:6])})"


# --- whole answers ----------------------------------------------------------------------------------------


def audit_mode(claims: list[Claim]) -> str:
    """STRICT: every claim quoted (and, when the question was given, the answer addresses it); HYBRID:
    every claim verified, some only paraphrased — or quoted right but deflecting; UNGROUNDED otherwise."""
    if not claims or not all(c.verified for c in claims):
        return "UNGROUNDED"
    return "STRICT" if all(c.strategy in STRICT_STRATEGIES for c in claims) else "HYBRID"


def verify(
    answer: str, evidence: dict[str, str], *, blocks: dict[str, Block] | None = None, question: str | None = None
) -> Verdict:
    """Parse `answer` into claims and check each against the evidence it cites ({"E1": text, ...}); with
    the question, also whether each claim and the answer address it (the warrant and deflection layers)."""
    blocks = blocks if blocks is not None else LazyBlocks(evidence)
    claims = [check_claim(c.text, c.pointers, blocks) for c in parse_claims(answer)]
    if question is None or not claims:
        return Verdict(tuple(claims), audit_mode(claims))  # type: ignore[arg-type]
    return _addressed(question, claims, blocks)


def _addressed(question: str, claims: list[Claim], blocks: dict[str, Block]) -> Verdict:
    """Warrant: a claim addresses the question when it and the evidence it cites carry the question's
    subject (hard anchors: names, identifiers, quoted strings; and enough of its words). Deflection: the
    answer addresses it when one verified claim does and, for a question that asks for a kind of value
    (an environment variable, an attribute, a flag, a file, a number, a date), one claim holds such a value."""
    subj = sj.subject(question)
    shape = sj.shape(question)
    out = []
    for c in claims:
        cited = [c.text] + [blocks[p].text for p in c.pointers if p in blocks]
        carried = sj.carried(subj, cited)
        reason = "carries the question's subject" if carried.ok else carried.reason
        out.append(replace(c, addresses_question=carried.ok, reason=reason))
    good = [c for c in out if c.verified and c.addresses_question]
    mode = audit_mode(out)
    why = ""
    if not good:
        why = next((c.reason for c in out if c.verified and not c.addresses_question), "no claim verified")
    elif shape in sj.VALUE_SHAPES and not any(sj.has_shape(c.text, shape) for c in good):
        why = f"the question asks for {sj.VALUE_SHAPES[shape]}; no claim holds one"
    if why:  # quoted right, perhaps, but not an answer: never STRICT
        return Verdict(tuple(out), "HYBRID" if mode == "STRICT" else mode, False, f"deflection: {why}")  # type: ignore[arg-type]
    return Verdict(tuple(out), mode, True, f"{len(good)} of {len(out)} claims carry the question's subject")  # type: ignore[arg-type]


def verify_request(req: dict) -> dict:
    """One `docforge verify` input object → its verdict (raises ValueError on a malformed object)."""
    if not isinstance(req, dict):
        raise ValueError("expected a JSON object with 'answer' and 'evidence'")
    answer, evidence = req.get("answer"), req.get("evidence")
    if not isinstance(answer, str):
        raise ValueError("'answer' must be a string")
    if isinstance(evidence, str):
        evidence = {"E1": evidence}
    elif isinstance(evidence, list):
        evidence = {f"E{i}": t for i, t in enumerate(evidence, 1)}
    if not isinstance(evidence, dict) or not all(isinstance(t, str) for t in evidence.values()):
        raise ValueError('\'evidence\' must map pointers to texts, e.g. {"E1": "..."}')
    evidence = {_pointer_name(k): t for k, t in evidence.items()}
    implicit = len(evidence) == 1 and not POINTER_GROUP.search(answer)
    if implicit:  # nothing cited, one block: that block is what every line rests on
        (only,) = evidence
        answer = "\n".join(f"{line} [{only}]" for line in answer.splitlines() if line.strip())
    question = req.get("question")
    if question is not None and not isinstance(question, str):
        raise ValueError("'question' must be a string")
    out = verify(answer, evidence, question=question or None).as_dict()
    if implicit:
        out["implicit_pointers"] = True
    if "id" in req:
        out = {"id": req["id"], **out}
    return out


def _pointer_name(k: str) -> str:
    m = re.fullmatch(r"\s*\[?\s*[Ee]\s*(\d+)\s*\]?\s*", str(k))
    return f"E{int(m.group(1))}" if m else str(k)

"""Evidence blocks: a cited text, preprocessed once (words, keys, sentences, dates) for every claim citing it."""

from __future__ import annotations

import re
from functools import cached_property

from pipeline.answers import words as tx

_ISO_DATE = re.compile(r"\b(\d{4})-(\d{1,2})(?:-(\d{1,2}))?\b")
_MONTH = (
    r"(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?"
    r"|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?"
)
_DATE_MDY = re.compile(rf"\b{_MONTH}\s+(?:(\d{{1,2}})(?:st|nd|rd|th)?,?\s+)?(\d{{4}})\b")
_DATE_DMY = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH},?\s+(\d{{4}})\b")
_GLUED = re.compile(r"(?<=[a-z0-9)\]\"'][.!?])(?=[A-Z][a-z])")  # "…in India.India, officially…": two texts joined
_PRONOUNS = frozenset({"it", "he", "she", "they", "its", "his", "her", "their", "this", "these", "which"})
OPENING = 6  # a sentence's first keys, where it names its subject: what a later "It …" can refer to
# A sentence that opens stating a default ("Defaults to 16.", "The default is 6.", "Default: 300 s.") states
# it of what the sentence before names, as one opening with a pronoun does.
_DEFAULT = tx.key("default")
_NAME_JOINS = tx.NAME_CONNECTORS
_MD_LINK = re.compile(r"!?\[([^\]\n]*)\]\([^)\s]*(?:\s+\"[^\"]*\")?\)|!?\[([^\]\n]+)\]\[[^\]\n]*\]|<https?://[^>]+>")


# Words before a number that bound it from below (+1) or above (-1); longest first: "no more than" is an
# upper bound although it holds "more than".
_BOUNDS = sorted(
    [
        (("at", "least"), 1),
        (("more", "than"), 1),
        (("greater", "than"), 1),
        (("no", "less", "than"), 1),
        (("no", "fewer", "than"), 1),
        (("not", "less", "than"), 1),
        (("minimum", "of"), 1),
        (("over",), 1),
        (("above",), 1),
        (("exceeds",), 1),
        (("at", "most"), -1),
        (("up", "to"), -1),
        (("less", "than"), -1),
        (("fewer", "than"), -1),
        (("no", "more", "than"), -1),
        (("not", "more", "than"), -1),
        (("maximum", "of"), -1),
        (("under",), -1),
        (("below",), -1),
    ],
    key=lambda b: -len(b[0]),
)
_CUE_WORDS = max(len(cue) for cue, _ in _BOUNDS)  # read back as many words as the longest cue has
# A synonym is stemmed and looked up in a block only when a key of it begins with the synonym's first three
# letters: a stem keeps a word's beginning (Snowball changes endings), so the test is cheap and rarely wrong.
KEY_PREFIX = 3
_BY_REACH = 2  # "by" right after the verb or one word on ("directed by X", "directed jointly by X")


def bound_cue(words: list[str], i: int) -> tuple[tuple[str, ...], int]:
    """The bounding words right before position i and the side they bound from (0: none)."""
    before = tuple(words[max(0, i - _CUE_WORDS) : i])
    return next(((cue, d) for cue, d in _BOUNDS if before[len(before) - len(cue) :] == cue), ((), 0))


def number_bounds(words: list[str]) -> dict[str, dict[int, int]]:
    """For each number of a text (its key): the sides the words right before it bound it from, each with
    the position of one such number."""
    keys = tx.keys(words)
    out: dict[str, dict[int, int]] = {}
    for i, k in enumerate(keys):
        if k.startswith("#") and not k.endswith("th") and not (i and keys[i - 1] == k):
            out.setdefault(k, {}).setdefault(bound_cue(words, i)[1], i)
    return out


class CitedBlock:
    """A cited evidence text, preprocessed once for every claim that cites it."""

    def __init__(self, text: str):
        self.text = text
        self.norm = tx.normalise(text)
        plain = _MD_LINK.sub(lambda m: m.group(1) or m.group(2) or " ", text)
        self.norm_plain = tx.normalise(plain) if plain != text else self.norm
        self.folded_plain = tx.fold(plain).replace("\u2013", "-")

    # Lazy: a claim that passes by span never needs them.
    @cached_property
    def words(self) -> list[str]:
        return tx.words(self.text)

    @cached_property
    def keys(self) -> list[str]:
        return tx.keys(self.words)

    def word_of(self, key: str) -> str:
        """The block's first word with this key, as folded."""
        return self.words[self.positions[key][0]]

    @cached_property
    def key_prefixes(self) -> frozenset[str]:
        return frozenset(k[:KEY_PREFIX] for k in self.keyset)

    @cached_property
    def keyset(self) -> frozenset[str]:
        return frozenset(self.keys)

    @cached_property
    def folded(self) -> str:
        return tx.fold(self.text)

    @cached_property
    def roles(self) -> list[tuple[str, frozenset[str]]]:
        return roles(self.text, self.keys)

    @cached_property
    def positions(self) -> dict[str, list[int]]:
        pos: dict[str, list[int]] = {}
        for i, k in enumerate(self.keys):
            pos.setdefault(k, []).append(i)
        return pos

    @cached_property
    def sentences(self) -> list[tuple[int, int]]:
        """Token ranges [start, end) of the block's sentences (lines count as boundaries)."""
        out: list[tuple[int, int]] = []
        start = 0
        self._sentence_texts: dict[tuple[int, int], str] = {}
        self._paragraph_first: list[int] = []  # of each sentence, the first sentence of its paragraph
        for line in self.text.splitlines():
            first = len(out)
            for piece in tx.split_sentences(line):
                for i, s in enumerate(_GLUED.split(piece)):
                    n = len(tx.words(s))
                    if n:
                        first = len(out) if i else first  # text glued on: a paragraph of its own
                        out.append((start, start + n))
                        self._paragraph_first.append(first)
                        self._sentence_texts[(start, start + n)] = s
                        start += n
        if not out:
            self._paragraph_first = [0]
        return out or [(0, len(self.words))]

    def sentence_text(self, lo: int, hi: int) -> str:
        self.sentences  # noqa: B018 — fills _sentence_texts
        return self._sentence_texts.get((lo, hi), " ".join(self.words[lo:hi]))

    @cached_property
    def dates(self) -> set[tuple[int, int | None, int]]:
        return set(find_dates(self.folded))

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

    @cached_property
    def antecedents(self) -> list[tuple[int, ...]]:
        """For each sentence that opens with a pronoun ("It was accepted in 2017") or states a default
        ("Defaults to 16."), the sentences that name what it likely speaks of: its paragraph's first, and
        the last one before it that opens with neither; () for the others."""
        self.sentences  # noqa: B018 — fills _paragraph_first
        out: list[tuple[int, ...]] = []
        last = 0
        for n, (lo, _) in enumerate(self.sentences):
            if n and self.words[lo : lo + 1] and (self._refers(n) or _DEFAULT in self.keys[lo : lo + 2]):
                out.append(tuple({self._paragraph_first[n], last}))
            else:
                out.append(())
                last = n
        return out

    def _opening(self, n: int) -> list[str]:
        lo, hi = self.sentences[n]
        return self.keys[lo : min(hi, lo + OPENING)]

    @cached_property
    def sentence_windows(self) -> list[frozenset[str]]:
        """Each sentence's keys, with its antecedents' openings for one that opens with a pronoun, and all
        of their keys for one that states a default ("This option enforces X on Y. The default is Z.")."""
        return [
            keys.union(*(self._opening(m) if self._refers(n) else self.sentence_keys[m] for m in before))
            for n, (keys, before) in enumerate(zip(self.sentence_keys, self.antecedents, strict=True))
        ]

    def _refers(self, n: int) -> bool:
        """Whether sentence n opens with a pronoun (it refers to what its antecedents' openings name)."""
        return self.words[self.sentences[n][0]] in _PRONOUNS

    def referred(self, positions: list[int]) -> set[int]:
        """The sentences holding these positions, and the pronoun-opened ones whose antecedent names them
        in its opening."""
        out = self.sentences_with(positions)
        opening = {
            m
            for p in positions
            if 0 <= p < len(self.sentence_of)
            for m in [self.sentence_of[p]]
            if p < self.sentences[m][0] + OPENING
        }
        if opening:
            out |= {n for n, before in enumerate(self.antecedents) if opening.intersection(before)}
        return out

    def sentences_with(self, positions: list[int]) -> set[int]:
        """The sentence numbers holding these token positions (unknown ones, -1, left out)."""
        return {self.sentence_of[p] for p in positions if 0 <= p < len(self.sentence_of)}

    @cached_property
    def key_sentences(self) -> dict[str, set[int]]:
        return {k: self.sentences_with(ps) for k, ps in self.positions.items()}


class LazyBlocks(dict):
    """Blocks built on first use: most inputs cite few of the blocks they carry. With `made` (text → block,
    shared by the answers of one batch), a text several answers carry is read once for all of them."""

    def __init__(self, texts: dict[str, str], made: dict[str, CitedBlock] | None = None):
        super().__init__()
        self.texts = texts
        self.made = {} if made is None else made

    def __contains__(self, pointer) -> bool:
        return pointer in self.texts

    def __missing__(self, pointer: str) -> CitedBlock:
        text = self.texts[pointer]
        block = self.made.get(text)
        if block is None:
            block = self.made[text] = CitedBlock(text)
        self[pointer] = block
        return block


def roles(text: str, keys: list[str]) -> list[tuple[str, frozenset[str]]]:
    """(relation key, keys of its agent) a text states: "X directed Y" and "Y, directed by X"; `keys` are
    the text's word keys."""
    cased = tx.cased_words(text)
    if len(cased) != len(keys):
        return []
    out = []
    for i, (w, k) in enumerate(zip(cased, keys, strict=True)):
        if not w[:1].islower() or not tx.is_content(w.lower()) or w.lower() in tx.NEGATIONS:
            continue
        by = next((j for j in range(i + 1, min(i + 1 + _BY_REACH, len(cased))) if cased[j] == "by"), None)
        agent = _name_run(cased, keys, by + 1, 1) if by is not None else _name_run(cased, keys, i - 1, -1)
        if agent:
            out.append((k, agent))
    return out


def _name_run(cased: list[str], keys: list[str], i: int, step: int) -> frozenset[str]:
    """Keys of the capitalised run (connectors inside) starting at token i, read in direction `step`."""
    run: list[str] = []
    while 0 <= i < len(cased):
        w = cased[i]
        if w[:1].isupper() or w[:1].isdigit() and run and step > 0:  # "Windows 95", not "port 8443 and Envoy"
            run.append(keys[i])
        elif not (w.lower() in _NAME_JOINS and (run or step > 0 and w.lower() == "the")):
            break
        i += step
    return frozenset(k for k in run if k not in tx.STOPWORDS and k not in _NAME_JOINS)


def find_dates(folded: str) -> list[tuple[int, int | None, int]]:
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

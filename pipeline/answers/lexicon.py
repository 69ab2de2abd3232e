"""WordNet 3.0 as the verifier reads it: synonyms (words sharing a synset), base forms (the `*.exc` lists) and
near words (a few links apart in its graph, never antonyms).

Debian's `wordnet-base` installs the database's dict files in /usr/share/wordnet (DOCFORGE_WORDNET names
another folder). nltk's WordNetCorpusReader does not open them (it needs a `lexnames` file Debian leaves
out), and the verifier needs two lookups only, so this reads the files much as WordNet's own library does:
an index file is sorted, so a word's line lies between two of its lines sampled every few kilobytes (read
on its first lookup, ~1,500 lines in all) and is found by one search of the bytes between them; a synset's
offset is its byte offset in the data file. Nothing is loaded up front: `docforge verify` starts as fast
without WordNet as with it.

Absent WordNet, every lookup answers "nothing known" and `wordnet_status()` says so: the verifier then
accepts fewer reworded claims (no synonyms), never more.
"""

from __future__ import annotations

import mmap
import os
from bisect import bisect_right
from functools import cache, lru_cache
from pathlib import Path

POS = ("noun", "verb", "adj", "adv")
# WordNet's morphy detachment rules (wnintro(7), "morph"): suffix → ending, per part of speech.
_RULES = {
    "noun": (("s", ""), ("ses", "s"), ("xes", "x"), ("zes", "z"), ("ches", "ch"), ("shes", "sh"), ("ies", "y")),
    "verb": (("s", ""), ("ies", "y"), ("es", "e"), ("es", ""), ("ed", "e"), ("ed", ""), ("ing", "e"), ("ing", "")),
    "adj": (("er", ""), ("est", ""), ("er", "e"), ("est", "e")),
    "adv": (),
}


def folder() -> Path:
    return Path(os.environ.get("DOCFORGE_WORDNET", "/usr/share/wordnet"))


@cache
def available() -> bool:
    return all((folder() / f"{kind}.{p}").is_file() for p in POS for kind in ("index", "data"))


def wordnet_status() -> str:
    if available():
        return f"WordNet: {folder()} (synonyms and base forms on)"
    return (
        f"WordNet: not found in {folder()} — synonyms off, reworded claims are accepted less often; "
        "install it with `apt-get install wordnet-base` (or set DOCFORGE_WORDNET)"
    )


@cache
def _map(kind: str, pos: str) -> mmap.mmap:
    with open(folder() / f"{kind}.{pos}", "rb") as f:
        return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)


_STRIDE = 4096  # bytes of an index file between two of its lines kept in memory (`_sampled`)


@cache
def _sampled(pos: str) -> tuple[list[bytes], list[int]]:
    """Every _STRIDE bytes of the sorted index file, the next line's lemma (with its space) and offset: a
    lemma's line lies between the two samples around it (license lines, first, start with a space)."""
    m = _map("index", pos)
    keys, offsets = [b""], [0]
    for at in range(_STRIDE, len(m), _STRIDE):
        start = m.find(b"\n", at) + 1
        if 0 < start < len(m) and m[start : start + 1] != b" " and start > offsets[-1]:
            keys.append(m[start : m.find(b" ", start) + 1])
            offsets.append(start)
    return keys, offsets


def _index_line(pos: str, lemma: bytes) -> bytes | None:
    """The index line of `lemma`: found between the two samples around it (`_sampled`, bisected), by one
    search of those few kilobytes."""
    want = lemma + b" "
    if want.startswith(b" "):  # no lemma: what would match is a license line
        return None
    m = _map("index", pos)
    keys, offsets = _sampled(pos)
    i = bisect_right(keys, want) - 1
    lo, hi = offsets[i], offsets[i + 1] if i + 1 < len(offsets) else len(m)
    if m[lo : lo + len(want)] == want:
        at = lo
    else:
        found = m.find(b"\n" + want, lo, hi)
        if found < 0:
            return None
        at = found + 1
    end = m.find(b"\n", at)
    return m[at : len(m) if end < 0 else end]


@lru_cache(maxsize=65536)
def synsets(lemma: str, pos: str) -> tuple[int, ...]:
    """Offsets of the synsets `lemma` (a base form, "_" for spaces) belongs to."""
    line = _index_line(pos, lemma.encode())
    if line is None:
        return ()
    f = line.split()
    n_ptr = int(f[3])
    return tuple(int(x) for x in f[6 + n_ptr :])


@lru_cache(maxsize=65536)
def _tagged(lemma: str, pos: str) -> int:
    """How often `lemma` was tagged as `pos` in WordNet's sense-tagged texts (the index's tagsense_cnt)."""
    line = _index_line(pos, lemma.encode())
    if line is None:
        return 0
    f = line.split()
    return int(f[5 + int(f[3])])


@lru_cache(maxsize=65536)
def _words(pos: str, offset: int) -> tuple[str, ...]:
    m = _map("data", pos)
    end = m.find(b"\n", offset)
    f = m[offset:end].split()
    n = int(f[3], 16)
    return tuple(f[4 + 2 * i].decode().lower().split("(")[0] for i in range(n))


_POS_OF = {b"n": "noun", b"v": "verb", b"a": "adj", b"s": "adj", b"r": "adv"}
# Links that keep a word's meaning close: hypernym (instance too), verb group, similar to, entailment, also see.
_NEAR_LINKS = frozenset({b"@", b"@i", b"$", b"&", b"*", b"^"})

Synset = tuple[str, int]  # (part of speech, offset)


@lru_cache(maxsize=65536)
def _links(pos: str, offset: int) -> tuple[tuple[bytes, Synset], ...]:
    """A synset's pointers: (symbol, target synset)."""
    m = _map("data", pos)
    f = m[offset : m.find(b"\n", offset)].split(b"|")[0].split()
    i = 4 + 2 * int(f[3], 16)
    out = []
    for k in range(int(f[i])):
        sym, off, p = f[i + 1 + 4 * k : i + 4 + 4 * k]
        out.append((sym, (_POS_OF[p], int(off))))
    return tuple(out)


@cache
def _exceptions(pos: str) -> dict[str, tuple[str, ...]]:
    path = folder() / f"{pos}.exc"
    out: dict[str, tuple[str, ...]] = {}
    if path.is_file():
        for line in path.read_text().splitlines():
            form, *bases = line.split()
            out[form] = tuple(bases)
    return out


@lru_cache(maxsize=65536)
def base_forms(word: str) -> tuple[tuple[str, str], ...]:
    """(pos, base form) pairs WordNet knows for an inflected word: "sung" → verb "sing", "drives" → "drive"."""
    if not available() or not word.isalpha():
        return ()
    return tuple((pos, c) for pos in POS for c in _candidates(word, pos) if synsets(c, pos))


def _candidates(word: str, pos: str) -> list[str]:
    """The forms `word` may be an inflection of as `pos`, by WordNet's exception lists and morphy's rules."""
    cands = [word, *_exceptions(pos).get(word, ())]
    cands += [word[: -len(s)] + e for s, e in _RULES[pos] if word.endswith(s) and len(word) > len(s) + 1]
    return list(dict.fromkeys(cands))


def _lemmas(word: str, then: str) -> list[tuple[str, str]]:
    """(pos, lemma) pairs for `word` and `then` read as one lemma ("stands", "for" → verb "stand_for")."""
    if not available() or not word.isalpha() or not then.isalpha():
        return []
    return [(pos, f"{c}_{then}") for pos in POS for c in _candidates(word, pos) if synsets(f"{c}_{then}", pos)]


def irregular_base(word: str) -> str | None:
    """The base form the `*.exc` lists give an irregular verb form ("wrote" → "write"), else None."""
    if not available():
        return None
    bases = _exceptions("verb").get(word)
    return bases[0] if bases else None


@lru_cache(maxsize=65536)
def synonyms(word: str, senses: int = 0, then: str = "") -> frozenset[str]:
    """Every word sharing a synset with `word` (itself left out), multi-word lemmas as words joined by
    spaces. With `senses`, only synsets among the first `senses` of both words (WordNet lists a word's
    senses most frequent first): "realize" and "make" share a rare sense, not a common one. With `then`,
    of the two words as one lemma ("stands" then "for": "stand for", whose synonyms hold "represent")."""
    out: set[str] = set()
    for pos, base in _lemmas(word, then) if then else base_forms(word):
        offsets = synsets(base, pos)
        for off in offsets[:senses] if senses else offsets:
            for w in _words(pos, off):
                if not senses or off in synsets(w, pos)[:senses]:
                    out.add(w.replace("_", " "))
    out.discard(word)
    return frozenset(out)


def usual_pos(word: str) -> str | None:
    """The part of speech `word` is most often used as in WordNet's sense-tagged texts (None: never tagged)."""
    counts = {pos: sum(_tagged(b, pos) for p, b in base_forms(word) if p == pos) for pos in POS}
    best = max(counts, key=counts.__getitem__)
    return best if counts[best] else None


def _senses(word: str, pos: str, first: int = 0) -> list[Synset]:
    """The synsets of `word` as `pos` (its first `first` senses of each base form; 0: all)."""
    return [(pos, o) for p, b in base_forms(word) if p == pos for o in synsets(b, pos)[: first or None]]


def _around(synset: Synset, steps: int) -> set[Synset]:
    seen, edge = {synset}, {synset}
    for _ in range(steps):
        edge = {t for s in edge for sym, t in _links(*s) if sym in _NEAR_LINKS} - seen
        seen |= edge
    return seen


def _antonyms(word: str, pos: str) -> set[Synset]:
    """Synsets holding an antonym of a sense of `word` or (adjectives) of a synset it is similar to."""
    heads = {t for s in _senses(word, pos) for t in (s, *(u for sym, u in _links(*s) if sym == b"&"))}
    return {t for s in heads for sym, t in _links(*s) if sym == b"!"}


@lru_cache(maxsize=65536)
def near(a: str, b: str, senses: int, steps: int, pos: tuple[str, ...]) -> bool:
    """Whether two words (of the parts of speech `pos`) say nearly the same thing: they share a synset
    among the first `senses` of either; or, each read as the part of speech it is most used as (the
    same for both), their first senses are each within `steps` links of a common synset ("forward" and
    "pass", "get" and "receive") and no sense of one is an antonym of a sense of the other ("accept",
    "refuse")."""
    if not available() or not a.isalpha() or not b.isalpha():
        return False
    for p in pos:
        sa, sb = set(_senses(a, p)), set(_senses(b, p))
        if sa.intersection(_senses(b, p, senses)) or sb.intersection(_senses(a, p, senses)):
            return True
    u = usual_pos(a)
    if u is None or u not in pos or usual_pos(b) != u:
        return False
    if _antonyms(a, u) & set(_senses(b, u)) or _antonyms(b, u) & set(_senses(a, u)):
        return False
    around_a = set().union(*(_around(s, steps) for s in _senses(a, u, 1)))
    return any(around_a & _around(s, steps) for s in _senses(b, u, 1))


def _direct_antonyms(word: str, pos: str) -> set[Synset]:
    """Synsets holding an antonym of a sense of `word` itself (not of the words it is similar to: "new" is
    similar to "latest", whose antonyms would make "latest" the opposite of "newest")."""
    return {t for s in _senses(word, pos) for sym, t in _links(*s) if sym == b"!"}


@lru_cache(maxsize=65536)
def opposites(word: str) -> frozenset[str]:
    """The words WordNet gives as antonyms of a sense of `word` ("temporary": "permanent"; "include":
    "exclude"), of any part of speech, multi-word lemmas with spaces; none without WordNet. An adverb of
    manner has its adjective's ("manually": "automatic"): WordNet links the adjectives only, so the caller
    reads the other side's adverbs as adjectives too (`adjective_of`)."""
    if not available() or not word.isalpha():
        return frozenset()
    out = {w.replace("_", " ") for p in POS for pos, off in _direct_antonyms(word, p) for w in _words(pos, off)}
    for adj in adjective_of(word):
        out |= {w for pos, off in _direct_antonyms(adj, "adj") for w in _words(pos, off) if w.isalpha()}
    out.discard(word)
    return frozenset(out)


def adjective_of(word: str) -> tuple[str, ...]:
    """The adjectives an adverb in -ly may be made of ("manually": "manual"; "automatically": "automatic")."""
    if not available() or not word.endswith("ly") or len(word) < 6:
        return ()
    return tuple(a for a in (word[:-2], word[:-4] if word.endswith("ally") else "") if a and synsets(a, "adj"))

"""WordNet 3.0 as the verifier reads it: synonyms (words sharing a synset) and base forms (the `*.exc` lists).

Debian's `wordnet-base` installs the database's dict files in /usr/share/wordnet (DOCFORGE_WORDNET names
another folder). nltk's WordNetCorpusReader does not open them (it needs a `lexnames` file Debian leaves
out), and the verifier needs two lookups only, so this reads the files as WordNet's own library does: an
index file is sorted, so a word is found by binary search; a synset's offset is its byte offset in the data
file. Nothing is loaded up front: `docforge verify` starts as fast without WordNet as with it.

Absent WordNet, every lookup answers "nothing known" and `wordnet_status()` says so: the verifier then
accepts fewer reworded claims (no synonyms), never more.
"""

from __future__ import annotations

import mmap
import os
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


def _index_line(pos: str, lemma: bytes) -> bytes | None:
    """The index line of `lemma` (binary search over the sorted file; license lines start with a space)."""
    m = _map("index", pos)
    lo, hi, want = 0, len(m), lemma + b" "
    while lo < hi:
        mid = (lo + hi) // 2
        start = m.rfind(b"\n", 0, mid) + 1
        end = m.find(b"\n", start)
        end = len(m) if end < 0 else end
        line = m[start:end]
        if line.startswith(b" ") or line < want:
            lo = end + 1
        elif line.startswith(want):
            return line
        else:
            hi = start
    return None


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
def _words(pos: str, offset: int) -> tuple[str, ...]:
    m = _map("data", pos)
    end = m.find(b"\n", offset)
    f = m[offset:end].split()
    n = int(f[3], 16)
    return tuple(f[4 + 2 * i].decode().lower().split("(")[0] for i in range(n))


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

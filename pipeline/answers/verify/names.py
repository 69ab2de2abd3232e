"""A name the claim says and its evidence does not: put in the place of one of the evidence's, or added.

A wrong claim often names another thing than its evidence does ("SIGUSR1" where it says "SIGHUP", "the
Indexer" where it says "the Scheduler", "JDBC" where it says "ODBC"): the evidence sentence the claim rests
on then holds a name the claim leaves out. A true claim written by someone who read the page often names
what its evidence leaves implicit — the product or component the page is about ("Zephyr purges the
longest idle sessions" for "the longest idle sessions will be purged"): the evidence sentence then has
no name the claim leaves out. The first kind stands for a name of the evidence's, a sense problem as it
always was; the second adds a name the evidence neither says nor contradicts, a flag of its own that the
calibrated model weighs (pipeline.answers.verify.features: name_extra).

A sentence's names here are its proper nouns, its identifiers and its terms (words WordNet does not know,
pipeline.answers.verify.terms): what a wrong claim puts another of its kind in the place of.

Identifiers the same way (`added_identifiers`): an entry's text says "this option" and a claim names the
option its entry is about ("Setting max_peers to 0 removes the cap" for "A value of zero disables the
limit"); "SIGUSR1" for "SIGHUP", "PREV_STATE" for "STATE" put one in the place of the sentence's own, which
is refused as before. On the fit claims: 6 true claims more accepted, 2 wrong ones more (both naming a
program the sentence leaves implicit); on the report claims as many right as before (bench/verify_docs.py).
"""

from __future__ import annotations

import re

import pipeline.answers.verify.terms as terms
from pipeline.answers import words as tx
from pipeline.answers.verify.anchors import ident_cited, proper_nouns
from pipeline.answers.verify.blocks import CitedBlock

_ACRONYM = re.compile(r"(?<![\w.:/-])[A-Z][A-Z0-9_]+(?![\w])")  # "SIGHUP", "TCP": a name however plain its letters


def names_of(sentence: str) -> dict[str, str]:
    """A sentence's names (normalised) and the kind of each: proper nouns, identifiers, terms."""
    # an identifier with digits or signs in it ("master(8)", "max_peers") is code; a bare word one
    # ("ArgoCD") looks like a name
    out = {
        n: "code" if not i.isalpha() else kind(n, sentence)
        for i in tx.identifiers(sentence)
        if (n := tx.normalise(i).strip())
    }
    found = list(proper_nouns(sentence))
    found += [w for w in tx.words(sentence) if tx.is_content(w) and w not in tx.NEGATIONS and terms.is_term(w)]
    for n in found:
        out.setdefault(n, kind(n, sentence))
    return {n: k for n, k in out.items() if n}


def kind(name: str, text: str) -> str:
    """What a name looks like as `text` writes it, what a wrong claim keeps when it puts another of its
    kind in its place ("SIGUSR1" for "SIGHUP", "Korean" for "Japanese", "snat" for "dnat"): code (digits
    in it), an acronym (capitals), a capitalised name, a lowercase term."""
    first = name.split()[0]
    w = next((c for c in tx.cased_words(text) if c.lower() == first), first)
    if any(c.isdigit() for c in w):
        return "code"
    if len(w) > 1 and w.isupper():
        return "acronym"
    return "capitalised" if w[:1].isupper() else "term"


def holds(claim: str, name: str) -> bool:
    """Whether the claim says the name: as written, or every content word of it."""
    if f" {name} " in f" {tx.normalise(claim)} ":
        return True
    keys = set(tx.content_keys(claim))
    need = [tx.key(w) for w in name.split() if tx.is_content(w)]
    return bool(need) and all(k in keys for k in need)


def left_out(claim: str, sentence: str) -> list[str]:
    """The names of the evidence sentence the claim does not say: what a name of its own may stand for."""
    return [n for n in names_of(sentence) if not holds(claim, n)]


def stands_for(name: str, claim: str, sentence: str) -> str | None:
    """The name of the evidence sentence's, of the same kind, that the claim's `name` may stand in the
    place of (one it leaves out), or None: then the claim adds the name."""
    mine = kind(name, claim)
    return next((n for n, k in names_of(sentence).items() if k == mine and not holds(claim, n)), None)


def added_identifiers(idents: list[str], claim: str, sentence: str, cited: list[CitedBlock]) -> frozenset[str]:
    """The claim's identifiers (as written) the evidence lacks where the sentence it rests on names no
    identifier the claim leaves out: a name the claim adds (the option a page's entry is about, the
    program), not one put in another's place."""
    folded = tx.fold(claim)
    own = (*tx.identifiers(sentence), *(a.lower() for a in _ACRONYM.findall(sentence)))
    if any(not tx.ident_in(n, folded) for n in own):
        return frozenset()
    return frozenset(i for i in idents if not ident_cited(i, cited))

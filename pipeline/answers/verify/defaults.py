"""A claim's "by default" in other words: "unless you change it", "out of the box", "if you don't set it".

A rewording says what a setting is when nobody sets it in many ways, and an LLM writing an answer uses
all of them. Their words ("change", "box", "don't") are found in no evidence that simply says "the
default is 60", and "don't" reads as a negation: of the fit claims, 8 true ones holding such a phrase
were refused. Read as "by default" where the cited evidence speaks of a default and does not say the
phrase itself (a phrase that goes on, "unless you set it to drop", the default and its alternative, is
left as written), 2 of them are accepted and no wrong claim more. General English, one pattern.
"""

from __future__ import annotations

import re

from pipeline.answers import words as tx

BY_DEFAULT = "by default"
_END = r"(?=\s*(?:[,.;:)]|$))"  # the phrase is the whole condition: it ends its clause
_SETS = r"(?:set|configured?|specif(?:y|ied)|chang(?:e|ed)|overrid(?:e|den)|told|tell it|adjust(?:ed)?)"
_PHRASE = re.compile(
    r"\b(?:"
    r"out of the box"
    r"|(?:with|in|under|using) (?:the|a|its) (?:default|stock|standard|shipped) "
    r"(?:setup|set-up|configuration|config|settings|install(?:ation)?)"
    rf"|unless (?:otherwise |(?:you|it is|it's|they are|one is|someone)\s+)?(?:explicitly\s+)?{_SETS}"
    rf"(?:\s+(?:it|them|this|that))?(?:\s+(?:otherwise|differently))?{_END}"
    rf"|if (?:you )?(?:don't|do not|never) {_SETS}(?:\s+(?:it|them|one|anything|this|that|a value))?"
    rf"(?:\s+(?:otherwise|differently))?{_END}"
    r"|(?:if|when|while) (?:it is |it's |they are |left )?"
    rf"(?:not set|unset|not specified|not configured|not given|omitted|left unset){_END}"
    r"|left unset"
    r")",
    re.I,
)


def plain(claim: str, evidence: str) -> str:
    """`claim` with each of its phrases for "by default" said so, where `evidence` speaks of a default
    (any form of the word) and does not hold the phrase itself; else `claim` as it is."""
    if _PHRASE.search(claim) is None or "default" not in evidence.lower():  # most claims: one search
        return claim
    said = tx.normalise(evidence)
    return _PHRASE.sub(lambda m: m.group(0) if tx.normalise(m.group(0)) in said else BY_DEFAULT, claim)

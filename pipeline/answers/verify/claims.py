"""Parsing an answer: one claim per line, the pointers ([E1], [E1,E3]) anywhere on it."""

from __future__ import annotations

import re
from dataclasses import dataclass

_PTR = r"E\s*[1-9]\d{0,2}"
POINTER_GROUP = re.compile(rf"[\[(【]\s*((?:{_PTR})(?:\s*(?:[,;&/]|and)\s*E?\s*[1-9]\d{{0,2}})*)\s*[\])】]", re.I)
_BULLET = re.compile(r"^\s*(?:[-*+•·]|\d{1,3}[.)]|\(\d{1,3}\)|[a-z][.)](?=\s))\s+")


_CODE_OR_TEXT = re.compile(r"(`[^`]*`)|([^`]+)")  # an inline code span, or text outside one


def _squeezed(m: re.Match[str]) -> str:
    """Text outside code with no space before its punctuation (what a removed pointer leaves); a code span
    as written: `first_elem : rest` is a quote, its space included."""
    return m.group(1) or re.sub(r"\s+([.,;:!?])(?=\s|$)", r"\1", m.group(2))


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
        text = _CODE_OR_TEXT.sub(_squeezed, text)  # "[E1] ." → "."; not ".merge_file", nor inside code
        if not re.search(r"\w", text):
            continue  # separators, a bare pointer list
        claims.append(ParsedClaim(text, tuple(pointers)))
    return claims

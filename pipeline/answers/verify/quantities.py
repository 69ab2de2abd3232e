"""A number and its unit read as one quantity, for the verifier's word matching.

`words.keys` reads "seven days" as #604800 and the base unit "s", "16 KiB" as #16384 and "byte": the value
is already in the unit's base, so the unit word says nothing the number's key does not. Matched as a word
of its own, it counts a true rewording as missing a word ("16 KiB" for a bare "16384", "60 %" for
"0.6") and the token vectors see "days" against "seconds". Here a unit read with its number takes the
number's key: the quantity is matched whole, the same way whichever way it is written.
"""

from __future__ import annotations

from collections.abc import Sequence

from pipeline.answers import words as tx

_BETWEEN = frozenset({"a", "an", "of"})  # "half an hour", "a quarter of a minute": the unit a few words on
_LOOK_BACK = 3


def quantity_keys(tokens: Sequence[str]) -> list[str]:
    """`words.keys` of the tokens, each unit read with its number carrying the number's key."""
    out = tx.keys(list(tokens))
    for i, t in enumerate(tokens):
        if t not in tx.UNITS:
            continue
        j = i - 1
        while j >= 0 and i - j <= _LOOK_BACK and tokens[j] in _BETWEEN:
            j -= 1
        if j >= 0 and out[j].startswith("#") and not out[j].endswith("th"):
            out[i] = out[j]
    return out

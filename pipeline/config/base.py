"""The building blocks of the tree: a strict, frozen model, and a section with environment names of its own.

A key is read from the environment under one name: its section's own
(`env_prefix` / `env_aliases`) where the section has them, else the generic
`DOCFORGE_<SECTION>__<KEY>` (pydantic-settings' nested delimiter); the loader
refuses the generic name of a key that has its own. `first_set` is the one
lookup of those names in the process environment.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import ClassVar

from pydantic import BaseModel, ConfigDict


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class EnvSection(Strict):
    """A part of the tree with environment names of its own, instead of DOCFORGE_<SECTION>__<KEY>.

    A field's names are `env_aliases[field]` when listed, else `env_prefix + FIELD`
    (none when the prefix is empty); the first one set (non-empty) wins.
    """

    env_prefix: ClassVar[str] = ""
    env_aliases: ClassVar[dict[str, tuple[str, ...]]] = {}

    @classmethod
    def env_names(cls, field: str) -> tuple[str, ...]:
        """The field's own (documented) environment names, in precedence order."""
        if field in cls.env_aliases:
            return cls.env_aliases[field]
        return (f"{cls.env_prefix}{field}".upper(),) if cls.env_prefix else ()


def generic_name(*path: str | int) -> str:
    """DOCFORGE_<SECTION>__<KEY> (pydantic-settings' nested delimiter): the name of a key without its own."""
    return "DOCFORGE_" + "__".join(str(p) for p in path).upper()


def first_set(names: Iterable[str]) -> tuple[str, str] | None:
    """(name, value) of the first of `names` set to a non-empty value in the environment, else None."""
    for name in names:
        if value := os.environ.get(name):
            return name, value
    return None

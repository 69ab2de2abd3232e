"""Who may read what (docs/security.md): a document's access list, and the principal that reads.

A document's access (documents.access, migration 0011) is None, everyone, or clauses: each a set of
principals, "user:<email or account id>" or "group:<name>". A reader must hold at least one
principal of every clause (an empty clause: full-access callers only). A source's `access:`
(sources.yml) is one clause; a source may find more for a document (`DocRef.access`: a Confluence
page's space and restricted ancestors). The clauses are stored in one canonical JSON form, and its
sha256 is the ledger's `access_hash`: a permission change without a content change is an UPDATE of
that column and documents.access, never a re-embed.

A caller is a `Principal`; `predicate` is the SQL every statement that reads documents or chunks
ANDs into its WHERE (none for full access: admins and the local CLI pay nothing).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property

from psycopg import sql

USER, GROUP = "user:", "group:"
Clauses = tuple[tuple[str, ...], ...]  # a document's access: every clause must be met
FULL = "full"  # the access fingerprint of a full-access caller (no principal hashes to it)
EVERYONE = sql.SQL("TRUE")  # the access condition of a full-access caller: nothing to test


def principal(entry: str) -> str:
    """A principal in its one stored form: `user:` ids lower-cased (emails are not case-sensitive),
    `group:` names as written (they must match the identity provider's exactly). Anything else is kept
    as it is: no caller holds it, so a clause of nothing else admits no one (it fails closed)."""
    kind, sep, name = entry.strip().partition(":")
    if kind == "user" and sep:
        return f"{USER}{name.strip().lower()}"
    if kind == "group" and sep:
        return f"{GROUP}{name.strip()}"
    return entry.strip()


def config_entry(entry: str) -> str:
    """A sources.yml `access:` entry as a principal: a bare name is a group; ValueError saying why not."""
    if not isinstance(entry, str):
        raise ValueError(f"access entry {entry!r} is not a name: write a group name, group:<name> or user:<email>")
    text = entry.strip()
    if not text:
        raise ValueError(
            f"access entry {entry!r} is empty: write a group name, group:<name> or user:<email> (omit `access:` "
            "for a source everyone may read)"
        )
    kind, sep, name = text.partition(":")
    if sep and kind not in ("user", "group"):
        raise ValueError(
            f"access entry {entry!r}: {kind!r} is not a kind of principal; write a group name, group:<name> "
            "or user:<email>"
        )
    if sep and not name.strip():
        raise ValueError(f"access entry {entry!r} names no {kind}: write {kind}:<name>")
    return principal(text if sep else GROUP + text)


def effective(source: Sequence[str] | None, found: Iterable[Iterable[str]] | None) -> Clauses | None:
    """A document's access: its source's clause (sources.yml `access:`) and the clauses its listing found
    (`DocRef.access`), canonical (each clause's principals sorted, clauses sorted, repeats dropped);
    None (everyone) when there is none."""
    clauses = ([source] if source is not None else []) + [list(c) for c in found or ()]
    if not clauses:
        return None
    return tuple(sorted({tuple(sorted({principal(p) for p in c})) for c in clauses}))


def as_json(access: Clauses | None) -> str | None:
    """The canonical JSON of `access` (None stays None: SQL NULL)."""
    if access is None:
        return None
    return json.dumps([list(c) for c in access], separators=(",", ":"), ensure_ascii=False)


def fingerprint(access: Clauses | None) -> str | None:
    """The ledger's access_hash: sha256 of the canonical JSON; None for everyone (as stores before
    migration 0011 hold, so an open source is unchanged after an upgrade)."""
    text = as_json(access)
    return None if text is None else hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True)
class Readers:
    """Who may read each document of one source: its `access:` clause (sources.yml), with the clauses
    its listing found for the document (`DocRef.access`)."""

    source_clause: Sequence[str] | None

    def of(self, found: Iterable[Iterable[str]] | None) -> Clauses | None:
        return effective(self.source_clause, found)

    def hash(self, found: Iterable[Iterable[str]] | None) -> str | None:
        return fingerprint(self.of(found))

    def columns(self, found: Iterable[Iterable[str]] | None) -> dict[str, str | None]:
        """documents.access (canonical JSON) and ledger.access_hash."""
        clauses = self.of(found)
        return {"access": as_json(clauses), "access_hash": fingerprint(clauses)}


@dataclass(frozen=True)
class Principal:
    """A caller: a name (an email, an account id, a token's name), its groups, and whether it may
    read everything (admin tokens, the local CLI). `method`: how it proved who it is."""

    name: str
    groups: frozenset[str] = field(default_factory=frozenset)
    full_access: bool = False
    method: str = "local"  # "token" (DOCFORGE_API_TOKENS), "tokens_file", "jwt", "local"

    @cached_property
    def principals(self) -> list[str]:
        """What the SQL matches a document's clauses against: `user:<name>` and `group:<g>` for each group."""
        return sorted({principal(USER + self.name), *(principal(GROUP + g) for g in self.groups if g.strip())})

    @cached_property
    def fingerprint(self) -> str:
        """Who this caller is to an access list, as one value: `full`, or a hash of its sorted principals
        (the answer cache's key holds it: an answer is only served to callers who see the same)."""
        if self.full_access:
            return FULL
        return hashlib.sha256("\n".join(self.principals).encode()).hexdigest()


FULL_ACCESS = Principal("local", full_access=True)  # the CLI, the Python API, the MCP server by default


def may_read(access: Clauses | None, reader: Principal | None) -> bool:
    """docforge_may_read (migration 0011) in Python, for what is not a row: a configured source's own clause."""
    if reader is None or reader.full_access or access is None:
        return True
    held = set(reader.principals)
    return all(held.intersection(c) for c in access)


def predicate(reader: Principal | None, alias: str = "doc") -> tuple[sql.Composable, dict[str, list[str]]]:
    """The condition a statement ANDs into its WHERE over `documents <alias>`, and its bind parameter:
    TRUE (and none) for full access."""
    if reader is None or reader.full_access:
        return EVERYONE, {}
    cond = sql.SQL("docforge_may_read({}.access, %(principals)s::text[])").format(sql.Identifier(alias))
    return cond, {"principals": reader.principals}

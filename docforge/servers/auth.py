"""Who may call the HTTP API, and as whom: admin tokens, a tokens file of named callers with groups, and/or
JWTs checked against a JWKS. Each authenticates a `Principal` (pipeline.access): what it may read is decided
in the SQL that reads (docs/security.md).

Configured by `Settings.auth` (pipeline.config); the secrets come from the
environment only (never in sources.yml):

    DOCFORGE_API_TOKENS       admin tokens: comma-separated opaque tokens, full access (constant-time compare)
    DOCFORGE_API_TOKENS_FILE  (auth.tokens_file) a YAML or JSON list of callers: name, sha256 (of the
                              token: the token itself is never stored), groups, optional full_access
    DOCFORGE_JWT_JWKS_URL     JWKS endpoint, e.g. https://login.microsoftonline.com/<tenant>/discovery/v2.0/keys
    DOCFORGE_JWT_AUDIENCE     required with a JWKS URL (the API's application id URI / client id)
    DOCFORGE_JWT_ISSUER       optional, e.g. https://login.microsoftonline.com/<tenant>/v2.0
    DOCFORGE_JWT_ALGORITHMS   default RS256
    DOCFORGE_JWT_USER_CLAIMS  the claims naming the caller, first present wins (email,preferred_username,...,sub)
    DOCFORGE_JWT_GROUP_CLAIMS the claims holding its groups (groups,roles): lists or space/comma-separated

With no tokens, no tokens file and no JWKS URL the API refuses to start: it never serves
unauthenticated (only /health is open). The tokens file is read again when it changes (its digest is
checked at most every RELOAD_S seconds): removing an entry revokes that token without a restart.

A file is taken whole or not at all (issue 48): a changed file is read twice, SETTLE_S apart, and taken
only when both reads agree and it validates. A write caught half done (a YAML that still parses, with
`groups: hr` of `hr-auditors`) differs from the next read, so it is never taken; a file that stays
unreadable or invalid keeps the last good set of callers, and the log says so, every RELOAD_S, until it
is fixed. Replace the file by rename (write a new file beside it, then `mv` it over: docs/security.md),
never in place: then every read sees one whole file.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import re
import threading
import time
from collections.abc import Callable
from functools import cached_property
from pathlib import Path
from typing import Any

import jwt
import yaml
from pydantic import AliasChoices, BaseModel, ConfigDict, Field, ValidationError, field_validator

from pipeline.access import Principal
from pipeline.config import AuthConfig
from pipeline.errors import ConfigError
from pipeline.redact import register, register_digest

log = logging.getLogger(__name__)
__all__ = ["AuthConfig", "Authenticator", "Principal", "read_tokens_file"]
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
# How often the tokens file's digest is checked: hashing a small file costs microseconds, and a revoked
# token is refused within this many seconds (the promise is 10).
RELOAD_S = 2.0
# A changed file's second read, this long after the first: a writer's pieces land within it (an editor's
# save, a `cat >` of a few kB take milliseconds), so a file still being written differs between them.
SETTLE_S = 0.5


class TokenEntry(BaseModel):
    """One caller of a tokens file."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    # The names a hand-written file is likely to use for the same thing are read alike.
    name: str = Field(min_length=1, validation_alias=AliasChoices("name", "user", "email", "principal"))
    sha256: str = Field(validation_alias=AliasChoices("sha256", "token_sha256", "token_hash", "hash"))
    groups: list[str] = Field(default_factory=list)
    full_access: bool = False

    @field_validator("sha256", mode="before")
    @classmethod
    def _digest(cls, v: Any) -> Any:
        digest = v.strip().lower().removeprefix("sha256:") if isinstance(v, str) else v
        if isinstance(digest, str) and _SHA256.match(digest):
            return digest
        raise ValueError(
            "sha256 must be the 64 hex digits of the token's SHA-256 (printf %s TOKEN | sha256sum), never the token"
        )

    @field_validator("groups", mode="before")
    @classmethod
    def _groups(cls, v: Any) -> Any:
        if isinstance(v, str):
            return [g for g in re.split(r"[\s,]+", v) if g]
        return v


def read_tokens_file(path: Path) -> list[TokenEntry]:
    """The callers a tokens file lists (YAML or JSON: a list, or {"tokens": [...]}); ConfigError naming the
    file, the entry and its line when one is malformed."""
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise ConfigError(
            f"tokens file {path}: cannot read it ({e.strerror}); check DOCFORGE_API_TOKENS_FILE (auth.tokens_file)"
        ) from None
    return parse_tokens(raw, path)


def parse_tokens(raw: bytes, path: Path) -> list[TokenEntry]:
    """The callers of a tokens file's bytes (read_tokens_file); ConfigError saying what is wrong."""
    try:
        text = raw.decode("utf-8")
        node = yaml.compose(text)  # JSON is YAML: one parser, and each entry's line
        data = yaml.safe_load(text)
    except UnicodeDecodeError:
        raise ConfigError(f"tokens file {path}: not UTF-8 text") from None
    except yaml.YAMLError as e:
        raise ConfigError(f"tokens file {path}: not valid YAML or JSON: {e}") from None
    if isinstance(data, dict) and set(data) == {"tokens"}:
        data = data["tokens"]
        node = node.value[0][1] if isinstance(node, yaml.MappingNode) else node
    if not isinstance(data, list):
        raise ConfigError(f"tokens file {path}: expected a list of entries (name, sha256, groups), or tokens: [...]")
    entries, seen, names = [], {}, set()
    for i, raw in enumerate(data):
        line = node.value[i].start_mark.line + 1 if isinstance(node, yaml.SequenceNode) else None
        where = f"tokens file {path}, entry {i + 1}" + (f" (line {line})" if line else "")
        if isinstance(raw, dict) and "token" in raw:
            raise ConfigError(f"{where}: holds a plain `token`: store its `sha256` instead, never the token")
        try:
            entry = TokenEntry.model_validate(raw)
        except ValidationError as e:
            err = e.errors()[0]
            key = ".".join(str(p) for p in err["loc"]) or "entry"
            raise ConfigError(f"{where}: {key}: {err['msg'].removeprefix('Value error, ')}") from None
        if entry.sha256 in seen:
            raise ConfigError(f"{where}: the same sha256 as entry {seen[entry.sha256]}: one token, one caller")
        if entry.name in names:
            raise ConfigError(f"{where}: a second entry named {entry.name!r}: give each caller its own name")
        seen[entry.sha256], names = i + 1, names | {entry.name}
        entries.append(entry)
    return entries


class Authenticator:
    def __init__(
        self, cfg: AuthConfig, resolve: Callable[[str], Path] = Path, clock: Callable[[], float] = time.monotonic
    ):
        """`resolve`: a tokens file's path as configured → where it is (Settings.resolve_path: from sources.yml);
        `clock`: seconds, for when the tokens file is next checked (a test steps it instead of waiting)."""
        self.cfg = cfg
        self._clock = clock
        raw = self.cfg.api_tokens.get_secret_value() if self.cfg.api_tokens else ""
        self.tokens = [t.strip() for t in raw.split(",") if t.strip()]
        self._file = resolve(cfg.tokens_file) if cfg.tokens_file else None
        self._callers = read_tokens_file(self._file) if self._file else []
        register(*self.tokens)  # a token pasted into a question is masked in every log and record
        register_digest(*(c.sha256 for c in self._callers))  # known by their digests alone
        self._digest = self._file_digest()
        self._seen: str | None = None  # a changed file's digest at its first read, awaiting the second
        self._checked = clock()
        self._reload = threading.Lock()
        self.algorithms = [a.strip() for a in self.cfg.jwt_algorithms.split(",") if a.strip()]
        self.user_claims = [c.strip() for c in cfg.jwt_user_claims.split(",") if c.strip()]
        self.group_claims = [c.strip() for c in cfg.jwt_group_claims.split(",") if c.strip()]
        if not self.tokens and not self.callers and not self.cfg.jwt_jwks_url:
            raise ConfigError(
                "the HTTP API needs authentication configured: set DOCFORGE_API_TOKENS "
                "(comma-separated admin tokens), DOCFORGE_API_TOKENS_FILE (named callers with groups) "
                "and/or DOCFORGE_JWT_JWKS_URL + DOCFORGE_JWT_AUDIENCE"
            )
        if self.cfg.jwt_jwks_url and not self.cfg.jwt_audience:
            raise ConfigError(
                "DOCFORGE_JWT_JWKS_URL is set but DOCFORGE_JWT_AUDIENCE is not: "
                "set the audience your tokens are issued for"
            )
        if any(a.lower() == "none" or a.upper().startswith("HS") for a in self.algorithms):
            raise ConfigError(
                f"DOCFORGE_JWT_ALGORITHMS={self.cfg.jwt_algorithms!r}: only asymmetric "
                "algorithms (RS256, ES256, PS256...) can be checked against a JWKS"
            )
        if self.cfg.jwt_jwks_url and not self.user_claims:
            raise ConfigError("DOCFORGE_JWT_USER_CLAIMS is empty: name the claim that names the caller (email, sub)")

    def _file_bytes(self) -> bytes | None:
        try:
            return self._file.read_bytes() if self._file else None
        except OSError:
            return None

    def _file_digest(self, raw: bytes | None = None) -> str | None:
        raw = self._file_bytes() if raw is None else raw
        return None if raw is None else hashlib.sha256(raw).hexdigest()

    @property
    def callers(self) -> list[TokenEntry]:
        """The tokens file's callers, read again when its digest changed (checked every RELOAD_S at most;
        a change is taken when a second read SETTLE_S later agrees and it validates)."""
        if self._file is None:
            return self._callers
        wait = SETTLE_S if self._seen is not None else RELOAD_S
        if self._clock() - self._checked < wait:
            return self._callers
        with self._reload:
            if self._clock() - self._checked >= wait:
                self._refresh()
                self._checked = self._clock()
        return self._callers

    def _refresh(self) -> None:
        """One look at the file: unchanged, first seen changed (looked at again SETTLE_S later), or seen
        the same twice: taken if it validates, else the last good callers kept (logged)."""
        raw = self._file_bytes()
        digest = self._file_digest(raw) if raw is not None else None
        if digest == self._digest:
            self._seen = None
            return
        if digest is None or digest != self._seen:  # changed since the last look: read it again in a moment
            self._seen = digest if raw is not None else None
            if raw is None:
                log.error(
                    "tokens file %s cannot be read: keeping its last good %d callers until it can",
                    self._file,
                    len(self._callers),
                )
            return
        self._seen = None
        if raw is None or self._file is None:  # (digest is None then: returned above)
            return
        try:
            callers = parse_tokens(raw, self._file)
        except ConfigError as e:  # a torn or broken file grants nothing new and revokes nothing
            log.error("%s: keeping the last good %d callers until it is fixed", e, len(self._callers))
            return
        self._callers, self._digest = callers, digest
        register_digest(*(c.sha256 for c in callers))
        log.info("tokens file %s changed: %d callers", self._file, len(callers))

    @cached_property
    def jwks(self) -> jwt.PyJWKClient:
        return jwt.PyJWKClient(self.cfg.jwt_jwks_url, cache_keys=True, lifespan=3600, timeout=10)

    def authenticate(self, token: str | None) -> Principal | None:
        """The caller behind a bearer token, or None when it proves nothing."""
        if not token:
            return None
        found = None
        for i, known in enumerate(self.tokens, 1):  # every one compared: the time says nothing of which
            if hmac.compare_digest(token.encode(), known.encode()) and found is None:
                found = Principal(f"token#{i}", full_access=True, method="token")
        if self.callers:
            digest = hashlib.sha256(token.encode()).hexdigest()
            for c in self.callers:
                if hmac.compare_digest(digest, c.sha256) and found is None:
                    found = Principal(c.name, frozenset(c.groups), c.full_access, method="tokens_file")
        if found is not None:
            return found
        if self.cfg.jwt_jwks_url and token.count(".") == 2:
            return self._jwt(token)
        return None

    def _jwt(self, token: str) -> Principal | None:
        try:
            key = self.jwks.get_signing_key_from_jwt(token).key
            claims = jwt.decode(
                token,
                key,
                algorithms=self.algorithms,
                audience=self.cfg.jwt_audience,
                issuer=self.cfg.jwt_issuer,
                leeway=self.cfg.jwt_leeway_s,
                options={"require": ["exp", "aud"] + (["iss"] if self.cfg.jwt_issuer else [])},
            )
        except jwt.PyJWTError as e:
            log.info("rejected a JWT: %s", e)
            return None
        name = next(
            (str(claims[c]) for c in self.user_claims if isinstance(claims.get(c), str | int) and claims[c]), None
        )
        if name is None:  # no one to match an access list against: refused, not let in as "unknown"
            log.info("rejected a JWT: none of the claims %s names the caller", ", ".join(self.user_claims))
            return None
        return Principal(name, frozenset(_groups(claims, self.group_claims)), method="jwt")


def _groups(claims: dict[str, Any], names: list[str]) -> list[str]:
    """The groups a JWT's claims hold: each named claim a list, or one space/comma-separated string."""
    out: list[str] = []
    for name in names:
        v = claims.get(name)
        if isinstance(v, str):
            out += [g for g in re.split(r"[\s,]+", v) if g]
        elif isinstance(v, list):
            out += [str(g) for g in v if isinstance(g, str | int) and str(g).strip()]
    return out

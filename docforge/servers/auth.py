"""Who may call the HTTP API: static bearer tokens and/or JWTs checked against a JWKS.

Configured by `Settings.auth` (pipeline.config); the tokens come from the
environment only (secrets never live in sources.yml):

    DOCFORGE_API_TOKENS      comma-separated opaque tokens (compared in constant time)
    DOCFORGE_JWT_JWKS_URL    JWKS endpoint, e.g. https://login.microsoftonline.com/<tenant>/discovery/v2.0/keys
    DOCFORGE_JWT_AUDIENCE    required with a JWKS URL (the API's application id URI / client id)
    DOCFORGE_JWT_ISSUER      optional, e.g. https://login.microsoftonline.com/<tenant>/v2.0
    DOCFORGE_JWT_ALGORITHMS  default RS256

With neither tokens nor a JWKS URL the API refuses to start: it never serves
unauthenticated (only /health is open).
"""

from __future__ import annotations

import hmac
import logging
from dataclasses import dataclass
from functools import cached_property

import jwt

from pipeline.config import AuthConfig
from pipeline.errors import ConfigError

log = logging.getLogger(__name__)
_NAME_CLAIMS = ("preferred_username", "upn", "email", "unique_name", "sub")
__all__ = ["AuthConfig", "Authenticator", "Principal"]


@dataclass(frozen=True)
class Principal:
    """An authenticated caller: a name for the log and how they proved it."""

    name: str
    method: str  # "token" | "jwt"


class Authenticator:
    def __init__(self, cfg: AuthConfig):
        self.cfg = cfg
        raw = self.cfg.api_tokens.get_secret_value() if self.cfg.api_tokens else ""
        self.tokens = [t.strip() for t in raw.split(",") if t.strip()]
        self.algorithms = [a.strip() for a in self.cfg.jwt_algorithms.split(",") if a.strip()]
        if not self.tokens and not self.cfg.jwt_jwks_url:
            raise ConfigError(
                "the HTTP API needs authentication configured: set DOCFORGE_API_TOKENS "
                "(comma-separated bearer tokens) and/or DOCFORGE_JWT_JWKS_URL + DOCFORGE_JWT_AUDIENCE"
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

    @cached_property
    def jwks(self) -> jwt.PyJWKClient:
        return jwt.PyJWKClient(self.cfg.jwt_jwks_url, cache_keys=True, lifespan=3600, timeout=10)

    def authenticate(self, token: str | None) -> Principal | None:
        """The caller behind a bearer token, or None when it proves nothing."""
        if not token:
            return None
        for i, known in enumerate(self.tokens, 1):
            if hmac.compare_digest(token.encode(), known.encode()):
                return Principal(f"token#{i}", "token")
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
        name = next((str(claims[c]) for c in _NAME_CLAIMS if claims.get(c)), "unknown")
        return Principal(name, "jwt")

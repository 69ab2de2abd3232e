"""Secrets out of text: every message made from a remote answer or error passes `redact`
before it is cut short, raised, logged or stored.

Redaction comes first, truncation after (`limit`): a secret cut in half by a
truncation would no longer match. Each secret is matched in every form a server
may echo it back in: as is, URL-encoded (either hex case, `+` for space), base64
(standard and URL-safe, padded or not), the base64 of `user:secret` (a Basic
auth header), and each of those with `/` JSON-escaped. Whatever the secret,
an `Authorization: Basic|Bearer …` value and a password in a URL are masked too.

Secrets are registered where they are read (`register`, `register_basic`), once
per process, so every sink (error messages, logs, the failures table, Dagster
metadata) redacts with the one function and never needs the secrets passed in.
Loading the configuration registers every secret it holds (pipeline.config: the
API's admin tokens one by one, the embedder's, the LLM's, Confluence's, the
store URL's password, webhook secrets). A tokens file holds only the SHA-256 of
each token (docforge.servers.auth): `register_digest` takes those, and `redact`
masks any word of a text whose SHA-256 is one of them, so a caller's token
pasted into a question is masked in the log, the usage records, the answer
cache and the gaps report (issue 48) although the token itself is never known.

Logs: `redact_logs()` puts a `RedactingFilter` on every handler configured so
far (the CLI's, uvicorn's), so every record that reaches one is redacted,
whichever library logged it: httpx and httpcore at debug level (-vv) print the
request and response headers a server echoed back, Authorization included.
"""

from __future__ import annotations

import base64
import hashlib
import logging
import re
import threading
from collections.abc import Iterable
from urllib.parse import quote, quote_plus

from pipeline.printable import printable

MASK = "***"
MIN_SECRET = 6  # shorter strings would blank ordinary words; no real token is this short
# Secrets whatever they are: an Authorization header's credentials, a URL's password.
_GENERIC = (
    (
        re.compile(r"(?i)(authorization[\"']?\s*[:=]\s*[\"']?\s*(?:basic|bearer|token)\s+)[A-Za-z0-9+/=._~\\-]+"),
        rf"\g<1>{MASK}",
    ),
    (re.compile(r"(://[^:/@\s]*:)[^@\s/]*@"), rf"\g<1>{MASK}@"),
    # httpcore's debug log of headers: (b'Authorization', b'Bearer …')
    (
        re.compile(r"(?i)(authorization[\"']\s*,\s*b?[\"']\s*(?:basic|bearer|token)\s+)[A-Za-z0-9+/=._~\\-]+"),
        rf"\g<1>{MASK}",
    ),
)
_lock = threading.Lock()
_forms: set[str] = set()
_pattern: re.Pattern[str] | None = None
_digests: frozenset[str] = frozenset()  # SHA-256 (hex) of tokens known only by their digest
# A word that could be a token: a run of the characters tokens are made of, at least MIN_SECRET long;
# inside it, the pieces between URL and form punctuation (`q=TOKEN&x`, `a+TOKEN`) are tried too.
_WORD = re.compile(r"[A-Za-z0-9_\-.~+/=:%&?#@!$*]{" + str(MIN_SECRET) + ",}")
_PIECE = re.compile(r"[^=&?+/:#@%]{" + str(MIN_SECRET) + ",}")


def forms(secret: str) -> set[str]:
    """Every way `secret` may come back in a message."""
    raw = secret.encode()
    b64 = base64.b64encode(raw).decode()
    url64 = base64.urlsafe_b64encode(raw).decode()
    out = {secret, quote(secret, safe=""), quote_plus(secret), b64, b64.rstrip("="), url64, url64.rstrip("=")}
    out |= {_lower_hex(f) for f in out if "%" in f}
    out |= {f.replace("/", "\\/") for f in out if "/" in f}  # JSON may escape '/'
    return {f for f in out if len(f) >= MIN_SECRET}


def register(*secrets: str | None) -> None:
    """Redact these secrets (and their encodings) from every later message of this process."""
    add = set().union(*(forms(s) for s in secrets if s and len(s) >= MIN_SECRET))
    _add(add)


def register_basic(user: str, secret: str) -> None:
    """A Basic auth pair: the secret, and `user:secret` in every encoding (the header is its base64)."""
    register(secret)
    if secret:
        _add(forms(f"{user}:{secret}"))


def register_digest(*digests: str) -> None:
    """Redact every word whose SHA-256 (hex) is one of `digests`: tokens known only by their digest."""
    global _digests
    with _lock:
        _digests = _digests | {d.lower() for d in digests if d}


def redact(text: str, limit: int | None = None) -> str:
    """`text` with every registered secret masked, then cut to `limit` characters (with an ellipsis)."""
    pattern = _pattern
    if pattern is not None:
        text = pattern.sub(MASK, text)
    if _digests:
        text = _WORD.sub(_masked_word, text)
    for generic, repl in _GENERIC:
        text = generic.sub(repl, text)
    if limit is not None and len(text) > limit:
        text = text[: max(0, limit - 1)] + "…"
    return text


def _masked_word(m: re.Match[str]) -> str:
    word = m.group(0)
    if _known(word):
        return MASK
    core = word.rstrip(".:!?")  # a sentence's end after the token
    if core != word and _known(core):
        return MASK + word[len(core) :]
    return _PIECE.sub(lambda p: MASK if _known(p.group(0)) else p.group(0), word)


def _known(word: str) -> bool:
    return hashlib.sha256(word.encode()).hexdigest() in _digests


def _add(new: Iterable[str]) -> None:
    global _pattern
    with _lock:
        if not set(new) - _forms:
            return
        _forms.update(new)
        # Longest first: a secret's base64 is masked whole, not around a shorter form inside it.
        _pattern = re.compile("|".join(re.escape(f) for f in sorted(_forms, key=len, reverse=True)))


def _lower_hex(text: str) -> str:
    return re.sub(r"%[0-9A-F]{2}", lambda m: m.group(0).lower(), text)


class RedactingFilter(logging.Filter):
    """Masks secrets in a record's message and traceback before a handler writes it, and shows the
    control characters they hold as escapes (pipeline.printable: a logged document name is data)."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        masked = printable(redact(message), lines=True)
        if masked != message:
            record.msg, record.args = masked, None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = printable(redact(record.exc_text), lines=True)
        return True


def redact_logs() -> None:
    """A RedactingFilter on every handler configured so far (the root's and each named logger's)."""
    loggers = [
        logging.getLogger(),
        *(v for v in logging.Logger.manager.loggerDict.values() if isinstance(v, logging.Logger)),
    ]
    for logger in loggers:
        for handler in logger.handlers:
            if not any(isinstance(f, RedactingFilter) for f in handler.filters):
                handler.addFilter(RedactingFilter())

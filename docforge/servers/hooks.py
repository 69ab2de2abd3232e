"""Webhook receivers: `POST /hooks/git` (GitHub, GitLab, Gitea, Forgejo) and `POST /hooks/confluence`.

Outside bearer auth (the gate lets `/hooks/` through), verified instead, in this order,
before anything else happens:

1. the body's size: Content-Length, then counted as it streams (413 past
   DOCFORGE_WEBHOOK_MAX_BODY_BYTES; the API's own DOCFORGE_API_MAX_BODY_BYTES still bounds it);
2. the signature over the raw body, compared in constant time with every configured
   secret (DOCFORGE_WEBHOOK_SECRET, and each source's `webhook_secret_env`):
   GitHub `X-Hub-Signature-256: sha256=<hex HMAC-SHA256>`, Gitea / Forgejo
   `X-Gitea-Signature` / `X-Forgejo-Signature: <hex HMAC-SHA256>`, GitLab
   `X-Gitlab-Token: <secret>`, Confluence `X-Docforge-Webhook-Secret: <secret>`.
   Unsigned or wrongly signed: 401, and the body is never parsed;
3. only then the payload is parsed and mapped to sources (a git push by repository URL,
   https, ssh and scp forms alike, and branch; Confluence by site, space key and page id).
   A source with its own secret takes only deliveries signed with it;
4. recorded in the store (pipeline.store.deliveries), idempotent by delivery id and body:
   a replay is 401 and records nothing. The push sensor turns it into a run within seconds.

Answers: 202 recorded; 200 verified but nothing to do (a ping, another branch, a repository
no source watches), with the reason; 400 a body that is no JSON; 503 sources.yml invalid or
the store unreachable.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlsplit

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from pipeline import json_strict
from pipeline.config import ConfluenceSourceConfig, GitSourceConfig, Settings, source_secret
from pipeline.errors import ConfigError, DocforgeError
from pipeline.store import deliveries
from pipeline.store.db import connect, running_store_url
from pipeline.store.deliveries import Delivery, Target
from pipeline.store.schema import open_built

log = logging.getLogger("docforge.servers.hooks")
PREFIX = "/hooks"
SECRET_HEADER = "X-Docforge-Webhook-Secret"  # Confluence automation's "Send web request" adds it
DEFAULT = "DOCFORGE_WEBHOOK_SECRET"  # the label of the shared secret among the candidates
_ZERO_SHA = re.compile(r"^0+$")


def is_hook(path: str) -> bool:
    """A webhook route: served without a bearer token (each delivery is verified by its signature)."""
    return path.startswith(PREFIX + "/")


class Refused(HTTPException):
    def __init__(self, status: int, detail: str):
        super().__init__(status, detail)


class Unsigned(Refused):
    """No signature header at all: refused from the headers alone, before sources.yml or the body is read."""

    def __init__(self, detail: str):
        super().__init__(401, detail)


# --- verification ------------------------------------------------------------------------------------


def secrets(settings: Settings) -> dict[str, bytes]:
    """Every secret a delivery may be signed with: {label: secret}; a label is DEFAULT or a source's name."""
    out: dict[str, bytes] = {}
    if settings.webhook.secret:
        out[DEFAULT] = settings.webhook.secret.get_secret_value().encode()
    for cfg in settings.sources:
        env = getattr(cfg, "webhook_secret_env", None)
        if env and (value := source_secret(env)):
            out[cfg.name] = value.get_secret_value().encode()
    return out


def _hmac_hex(secret: bytes, body: bytes) -> str:
    return hmac.new(secret, body, hashlib.sha256).hexdigest()


def _matching(candidates: dict[str, bytes], proof: str, prove: Callable[[bytes], str]) -> set[str]:
    """The labels whose secret gives `proof` (every candidate is compared: no early exit)."""
    return {label for label, s in candidates.items() if hmac.compare_digest(prove(s).encode(), proof.encode())}


@dataclass(frozen=True)
class Signed:
    host: str  # github | gitlab | gitea | forgejo | confluence
    event: str
    delivery: str | None  # the host's delivery id
    labels: frozenset[str]  # which secrets signed it


def verify_git(headers, body: bytes, candidates: dict[str, bytes]) -> Signed:
    """The host, event and signers of a git host's delivery; Refused(401) unless a secret signed it."""
    h = {k.lower(): v for k, v in headers.items()}
    for host in ("forgejo", "gitea"):  # Forgejo also sends Gitea's headers, Gitea also GitHub's
        if f"x-{host}-event" in h or f"x-{host}-signature" in h:
            proof = h.get(f"x-{host}-signature", "").strip().lower()
            return _signed(host, h.get(f"x-{host}-event", ""), h.get(f"x-{host}-delivery"), proof, body, candidates)
    if "x-gitlab-event" in h or "x-gitlab-token" in h:
        token = h.get("x-gitlab-token", "")
        labels = _matching(candidates, token, lambda s: s.decode(errors="replace")) if token else set()
        return _check("gitlab", h.get("x-gitlab-event", ""), h.get("x-gitlab-event-uuid"), labels, bool(token))
    if "x-hub-signature-256" in h or "x-github-event" in h:
        sig = h.get("x-hub-signature-256", "").strip().lower()
        proof = sig.removeprefix("sha256=") if sig.startswith("sha256=") else ""
        return _signed("github", h.get("x-github-event", ""), h.get("x-github-delivery"), proof, body, candidates)
    raise Unsigned(
        "unsigned delivery: expected X-Hub-Signature-256 (GitHub), X-Gitlab-Token (GitLab) or "
        "X-Gitea-Signature / X-Forgejo-Signature (Gitea, Forgejo)"
    )


def verify_confluence(headers, body: bytes, candidates: dict[str, bytes]) -> Signed:
    h = {k.lower(): v for k, v in headers.items()}
    token = h.get(SECRET_HEADER.lower(), "")
    labels = _matching(candidates, token, lambda s: s.decode(errors="replace")) if token else set()
    delivery = h.get("x-docforge-delivery") or h.get("x-atlassian-webhook-identifier")
    return _check("confluence", h.get("x-event-key", ""), delivery, labels, bool(token))


def _signed(host: str, event: str, delivery: str | None, proof: str, body: bytes, candidates) -> Signed:
    labels = _matching(candidates, proof, lambda s: _hmac_hex(s, body)) if proof else set()
    return _check(host, event, delivery, labels, bool(proof))


def _check(host: str, event: str, delivery: str | None, labels: set[str], signed: bool) -> Signed:
    if not signed:
        raise Unsigned(f"unsigned {host} delivery: its signature header is missing")
    if not labels:
        raise Refused(401, f"{host} delivery refused: the signature matches no configured webhook secret")
    return Signed(host, event.strip(), delivery.strip() if delivery else None, frozenset(labels))


# --- payloads and mapping -------------------------------------------------------------------------------


def repo_key(url: str) -> str:
    """One spelling per repository: host and path, lower case, without scheme, user, port and `.git`.

    `https://github.com/Org/Repo.git`, `git@github.com:org/repo` and `ssh://git@github.com:22/org/repo/`
    are all `github.com/org/repo`; a local path or file:// URL is its path.
    """
    url = url.strip()
    if m := re.match(r"^[\w.-]+@([\w.-]+):(?!//)(.*)$", url):  # scp-style git@host:path
        host, path = m.group(1), m.group(2)
    elif "://" in url:
        parts = urlsplit(url)
        host, path = parts.hostname or "", parts.path
    else:
        host, path = "", url
    path = path.strip("/").removesuffix(".git").strip("/")
    return f"{host}/{path}".lower() if host else "/" + path.lower()


def parse_json(body: bytes, content_type: str) -> dict[str, Any]:
    """A delivery's JSON: the body, or GitHub's form encoding (`payload=<json>`)."""
    try:
        if content_type.split(";")[0].strip().lower() == "application/x-www-form-urlencoded":
            (text,) = parse_qs(body.decode(), strict_parsing=True)["payload"]
        else:
            text = body.decode()
        data = json_strict.loads(text)  # bounded: a deeply nested body is a 400, not a RecursionError
    except (ValueError, KeyError, UnicodeDecodeError) as e:
        raise Refused(400, f"the delivery is not a JSON object ({type(e).__name__})") from None
    if not isinstance(data, dict):
        raise Refused(400, "the delivery is not a JSON object")
    return data


def _get(data: Any, *path: str) -> Any:
    for p in path:
        data = data.get(p) if isinstance(data, dict) else None
    return data


_GIT_URL_KEYS = (
    ("repository", "clone_url"),
    ("repository", "ssh_url"),
    ("repository", "git_url"),
    ("repository", "html_url"),
    ("repository", "url"),
    ("repository", "git_http_url"),
    ("repository", "git_ssh_url"),
    ("repository", "homepage"),
    ("project", "git_http_url"),
    ("project", "git_ssh_url"),
    ("project", "web_url"),
    ("project", "http_url"),
    ("project", "ssh_url"),
)


@dataclass(frozen=True)
class Push:
    urls: frozenset[str]  # repo_key of every URL the payload names
    ref: str
    commit: str | None
    deleted: bool


def git_push(data: dict[str, Any]) -> Push:
    urls = {repo_key(u) for k in _GIT_URL_KEYS if isinstance(u := _get(data, *k), str) and u.strip()}
    after = data.get("after") or data.get("checkout_sha")
    commit = after if isinstance(after, str) and after and not _ZERO_SHA.match(after) else None
    deleted = bool(data.get("deleted")) or (isinstance(after, str) and bool(_ZERO_SHA.match(after)))
    return Push(frozenset(urls), str(data.get("ref") or ""), commit, deleted)


def git_targets(settings: Settings, push: Push) -> tuple[list[Target], str]:
    """The git sources a push moves, and why none when none: a repository no source watches, or a ref
    none of them follows (a source without `branch:` follows every branch: its run finds out)."""
    repo_sources = [
        cfg for cfg in settings.sources if isinstance(cfg, GitSourceConfig) and repo_key(cfg.repo) in push.urls
    ]
    if not repo_sources:
        return [], "no source in sources.yml watches this repository"
    if push.deleted or not push.ref.startswith("refs/heads/"):
        return [], f"{push.ref or 'the ref'} is not a branch update"
    branch = push.ref.removeprefix("refs/heads/")
    hit = [c for c in repo_sources if c.branch in (None, branch)]
    if not hit:
        return [], f"no source watching this repository follows branch {branch!r}"
    return [Target(c.name, ref=push.ref, commit=push.commit) for c in hit], ""


def _text(*values: Any) -> str | None:
    for v in values:
        if isinstance(v, str | int) and not isinstance(v, bool) and str(v).strip():
            return str(v).strip()
    return None


@dataclass(frozen=True)
class PageEvent:
    page: str | None
    space: str | None
    site: str | None  # the host name of the site, when the payload names it


def confluence_event(data: dict[str, Any]) -> PageEvent:
    """The page, space and site of a Confluence webhook or automation request (several shapes)."""
    page = _get(data, "page") or _get(data, "content") or {}
    pid = _text(_get(page, "id"), data.get("pageId"), data.get("page_id"))
    space = _text(
        _get(page, "spaceKey"),
        _get(page, "space", "key"),
        _get(data, "space", "key"),
        data.get("spaceKey"),
        data.get("space") if isinstance(data.get("space"), str) else None,
    )
    url = _text(data.get("baseUrl"), data.get("base_url"), _get(page, "self"), _get(page, "_links", "base"))
    return PageEvent(pid, space, (urlsplit(url).hostname or None) if url and "://" in url else None)


def confluence_targets(settings: Settings, ev: PageEvent) -> tuple[list[Target], str]:
    """The Confluence sources an event may concern. A page id refreshes that page only (the source checks
    it is in scope); a space event without one re-lists the source."""
    out = []
    for cfg in settings.sources:
        if not isinstance(cfg, ConfluenceSourceConfig):
            continue
        if ev.site and urlsplit(cfg.base_url).hostname != ev.site:
            continue
        in_space = bool(ev.space and cfg.space and cfg.space.lower() == ev.space.lower())
        maybe_tree = bool(ev.page and (ev.page in cfg.page_ids or cfg.include_children))
        if in_space or maybe_tree or (not ev.space and cfg.space and ev.page):
            out.append(Target(cfg.name, pages=(ev.page,) if ev.page else None))
    if not ev.page and not ev.space:
        return [], "the delivery names no page id and no space key"
    return out, "" if out else "no Confluence source in sources.yml covers this space or page"


def signed_for(targets: Iterable[Target], settings: Settings, labels: frozenset[str]) -> list[Target]:
    """The targets this signature may move: a source with its own secret only with that one."""
    own = {c.name for c in settings.sources if getattr(c, "webhook_secret_env", None)}
    return [t for t in targets if (t.source in labels if t.source in own else DEFAULT in labels)]


# --- the routes -----------------------------------------------------------------------------------------


async def read_capped(request: Request, limit: int) -> bytes:
    """The raw body, refused (413) past `limit` bytes: by Content-Length, else as it streams."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.strip().isdigit() and int(declared) > limit:
        raise Refused(
            413, f"delivery too large: {declared} bytes, the limit is {limit} (DOCFORGE_WEBHOOK_MAX_BODY_BYTES)"
        )
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise Refused(413, f"delivery too large: more than {limit} bytes (DOCFORGE_WEBHOOK_MAX_BODY_BYTES)")
    return bytes(body)


class Receiver:
    """What the routes need: sources.yml (re-read per delivery, as the sensors do) and the store."""

    def __init__(self, settings: Settings, store: str | None = None):
        self.settings0 = settings
        self._url = store

    def settings(self) -> Settings:
        from pipeline.config import load_settings

        if self.settings0.config_path is None:
            return self.settings0
        try:
            return load_settings(self.settings0.config_path)
        except ConfigError as e:
            raise Refused(503, f"sources.yml is invalid, delivery not recorded: {e}") from None

    def record(self, settings: Settings, delivery: Delivery) -> str | None:
        """Record it; the id it was first received under when it is a replay (None: recorded now)."""
        # The embedded server is never started here: one that `docforge db stop` stopped stays stopped.
        url = self._url or running_store_url(settings)
        if url is None:
            raise Refused(503, "the store is not running, delivery not recorded: start it (docforge db url)")
        try:
            with connect(url, vector=False) as conn:
                open_built(conn)  # an older store is refused: `docforge db migrate` brings it up to date
                if not deliveries.has_table(conn):
                    raise Refused(503, "the store has no index yet: run a first ingest, then deliver again")
                return deliveries.record(conn, delivery)
        except DocforgeError:  # its message may name the socket or host: the delivery is told no more
            raise Refused(503, "the store is unavailable, delivery not recorded; deliver again shortly") from None


def _accept(receiver: Receiver, settings: Settings, signed: Signed, body: bytes, targets: list[Target]) -> JSONResponse:
    digest = hashlib.sha256(body).hexdigest()
    delivery_id = f"{signed.host}:{signed.delivery}" if signed.delivery else f"sha256:{digest}"
    if first := receiver.record(settings, Delivery(delivery_id, signed.host, digest, tuple(targets))):
        same = "" if first == delivery_id else f" (this body came as delivery {first})"
        raise Refused(401, f"delivery {delivery_id} was already received{same}: a replay is refused")
    names = [t.source for t in targets]
    log.info("webhook %s from %s recorded for %s", delivery_id, signed.host, ", ".join(names))
    return JSONResponse({"status": "accepted", "delivery": delivery_id, "sources": names}, status_code=202)


def _ignored(signed: Signed, reason: str) -> JSONResponse:
    log.info("webhook from %s (%s) ignored: %s", signed.host, signed.event or "no event", reason)
    return JSONResponse({"status": "ignored", "reason": reason}, status_code=200)


def hooks_router(receiver: Receiver) -> APIRouter:
    router = APIRouter(prefix=PREFIX, tags=["webhooks"])

    async def verified(request: Request, verify) -> tuple[Settings, Signed, bytes]:
        try:  # a delivery with no signature header is refused first: no sources.yml read, no body
            verify(request.headers, b"", {})
        except Unsigned:
            raise
        except Refused:
            pass  # signed: checked against the configured secrets once the body is read
        settings = await run_in_threadpool(receiver.settings)
        body = await read_capped(request, settings.webhook.max_body_bytes)
        candidates = secrets(settings)
        if not candidates:
            raise Refused(401, "webhooks are off: no secret is configured (set DOCFORGE_WEBHOOK_SECRET)")
        return settings, verify(request.headers, body, candidates), body

    async def deliver(settings: Settings, signed: Signed, body: bytes, targets: list[Target], why: str) -> JSONResponse:
        """A verified delivery's targets recorded, as its signature allows; none: ignored, saying `why`."""
        if not targets:
            return _ignored(signed, why)
        if not (allowed := signed_for(targets, settings, signed.labels)):
            raise Refused(401, "delivery refused: not signed with the secret of the source it maps to")
        return await run_in_threadpool(_accept, receiver, settings, signed, body, allowed)

    @router.post("/git", summary="A push from GitHub, GitLab, Gitea or Forgejo")
    async def git_hook(request: Request) -> JSONResponse:
        settings, signed, body = await verified(request, verify_git)
        if signed.event.lower() == "ping":
            return JSONResponse({"status": "pong"})
        if signed.event and signed.event.lower() not in ("push", "push hook"):
            return _ignored(signed, f"event {signed.event!r} is not a push")
        targets, why = git_targets(settings, git_push(parse_json(body, request.headers.get("content-type", ""))))
        return await deliver(settings, signed, body, targets, why)

    @router.post("/confluence", summary="A page event from Confluence (webhook or automation rule)")
    async def confluence_hook(request: Request) -> JSONResponse:
        settings, signed, body = await verified(request, verify_confluence)
        targets, why = confluence_targets(settings, confluence_event(parse_json(body, "application/json")))
        return await deliver(settings, signed, body, targets, why)

    return router

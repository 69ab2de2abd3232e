"""A Confluence Cloud REST API v2 double: a real HTTP server on 127.0.0.1 for tests.

One space of pages under `/wiki/api/v2`: spaces by key/id, space pages, pages by
id, a page with its storage body and labels, children, ancestors, labels,
attachments (listed, and their bytes under /wiki/download/attachments), the space's
permission assignments. Under `/wiki/rest/api` (v1, what v2 lacks): a page's read
restriction (users and groups, paged by start/limit), a group by id, a user. Cursor
pagination capped at a small page size, `_links.next` and a `Link` header (or the
header alone); versions to bump, deletions (to the trash), per-page 403/404 or a
missing body; injected 429 (with, without, absurd Retry-After), 5xx and slow
answers; auth checked on every request; 400 for parameters the real API rejects;
requests counted per endpoint. tests/test_confluence_api_schema.py validates its
JSON against the official OpenAPI spec, so it cannot drift from the real API.
"""

from __future__ import annotations

import base64
import json
import re
import threading
import time
import uuid
import zlib
from collections import Counter, deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, quote, urlencode, urlsplit

from tests.helpers import send_json

CREATED = "2024-07-14T05:22:57.682Z"
AUTHOR = "630c844a9796033b256b98a5"
_ROUTES = [
    (name, re.compile(pattern))
    for name, pattern in (  # endpoint name, path under /wiki/api/v2
        ("spaces", r"/spaces"),
        ("space_pages", r"/spaces/(\d+)/pages"),
        ("pages", r"/pages"),
        ("page", r"/pages/(\d+)"),
        ("children", r"/pages/(\d+)/children"),
        ("ancestors", r"/pages/(\d+)/ancestors"),
        ("labels", r"/pages/(\d+)/labels"),
        ("attachments", r"/pages/(\d+)/attachments"),
        ("space_permissions", r"/spaces/(\d+)/permissions"),
    )
]
_V1_ROUTES = [  # endpoint name, path under /wiki/rest/api
    (name, re.compile(pattern))
    for name, pattern in (
        ("restriction", r"/content/(\d+)/restriction/byOperation/read"),
        ("restriction_all", r"/content/(\d+)/restriction"),  # every operation's restrictions
        ("content", r"/content/(\d+)"),  # expand=restrictions.read.restrictions.user,…
        ("group_by_id", r"/group/by-id"),
        ("user", r"/user"),
    )
]
_PAGE_ROUTES = {
    "page",
    "children",
    "ancestors",
    "labels",
    "attachments",
    "restriction",
    "restriction_all",
    "content",
}  # path holds a page id
_DOWNLOAD = re.compile(r"/wiki/download/attachments/(\d+)/([^?]+)")  # outside the v2 API, as on Cloud
_BODY_FORMATS = {"storage", "atlas_doc_format", "view", "export_view", "anonymous_export_view", "styled_view", "editor"}


@dataclass
class Page:
    id: str
    title: str
    body: str
    parent_id: str | None = None
    labels: list[str] = field(default_factory=list)
    version: int = 1
    status: str = "current"  # current | archived | trashed
    # 403/404: GET of this page answers so; "no-body": its body is left out; "echo-auth": a 400 whose body
    # quotes the request's credentials back, in several encodings, past the first 150 characters
    fail: int | str | None = None
    attachments: list[Attachment] = field(default_factory=list)
    # Its own read restriction (v1): account ids and group names; none of either: unrestricted
    read_users: list[str] = field(default_factory=list)
    read_groups: list[str] = field(default_factory=list)
    restriction_fail: int | None = None  # its restriction read always answers this status


@dataclass
class Attachment:
    id: str  # "att<digits>", as Cloud names them
    title: str  # the file name
    data: bytes
    media_type: str = "application/pdf"
    version: int = 1
    size: int | None = None  # the fileSize the listing reports; None: len(data)


@dataclass
class Fault:
    status: int | None  # 429, 5xx; None: answer normally, after `delay`
    retry_after: str | None = None
    endpoint: str | None = None  # None: whichever request comes next
    delay: float = 0.0


class _Invalid(Exception):
    """A request the real API answers with 400."""


class ConfluenceDouble:
    def __init__(
        self,
        *,
        space_key: str = "DOCS",
        space_id: str = "98765",
        page_size: int = 3,
        email: str = "bot@example.com",
        token: str = "double-api-token-s3cr3t",
        bearer: str | None = None,
        link_header_only: bool = False,
    ):
        self.space_key, self.space_id, self.page_size = space_key, space_id, page_size
        self.link_header_only = link_header_only  # next links only in the Link header, as the spec allows
        self.accepted = (
            {f"Bearer {bearer}"} if bearer else {"Basic " + base64.b64encode(f"{email}:{token}".encode()).decode()}
        )
        self.pages: dict[str, Page] = {}
        self.users: dict[str, str] = {}  # account id → email ("": hidden by the user's privacy settings)
        self.groups: dict[str, str] = {}  # group id → name
        # The space's permission assignments, v2 shape. While none is added the space is public: it is
        # served as one anonymous read grant, so pages without a restriction are everyone's.
        self.space_grants: list[dict] = []
        # The v1 forms of a page's read restriction this site answers (Cloud: all three); the others 404.
        self.restriction_forms = {"restriction", "restriction_all", "content"}
        self.faults: deque[Fault] = deque()
        self.counts: Counter[str] = Counter()  # endpoint → requests, faults and rejections included
        self.log: list[tuple[str, int]] = []  # (path with query, status)
        self.connections = 0
        self.latency = 0.0  # seconds every API answer waits, as a remote site's round trip would
        self.lock = threading.RLock()
        self._server: ThreadingHTTPServer | None = None

    def add_page(self, id: str, title: str, body: str, **kw) -> Page:
        with self.lock:
            self.pages[str(id)] = page = Page(str(id), title, body, **kw)
            return page

    def add_storage_files(self, paths: list[Path], first_id: int = 910000, parent_id: str | None = None) -> list[Page]:
        """Pages from storage-format files: a numeric file suffix is the id, else ids count up."""
        out = []
        for n, path in enumerate(sorted(paths)):
            suffix = path.stem.rsplit("-", 1)[-1]
            pid = suffix if suffix.isdigit() else str(first_id + n)
            out.append(self.add_page(pid, path.stem, path.read_text(encoding="utf-8"), parent_id=parent_id))
        return out

    def add_attachment(self, pid: str, title: str, data: bytes, **kw) -> Attachment:
        with self.lock:
            page = self.pages[pid]
            att = Attachment(f"att{int(pid) * 100 + len(page.attachments) + 1}", title, data, **kw)
            page.attachments.append(att)
            return att

    def add_user(self, account_id: str, email: str = "") -> str:
        self.users[account_id] = email
        return account_id

    def add_group(self, name: str) -> str:
        """The group's id (a UUID, as Cloud's)."""
        gid = str(uuid.uuid5(uuid.NAMESPACE_URL, f"group:{name}"))
        self.groups[gid] = name
        return gid

    def grant_space(self, kind: str, ident: str, key: str = "read", target: str = "space") -> None:
        """One permission assignment of the space: `kind` user (account id), group (its id, or a name: then
        registered as a group) or role (an access class, e.g. anonymous-users)."""
        with self.lock:
            if kind == "group" and ident not in self.groups:
                ident = self._group_id(ident)
            n = len(self.space_grants) + 1
            self.space_grants.append(
                {
                    "id": str(n),
                    "principal": {"type": kind, "id": ident},
                    "operation": {"key": key, "targetType": target},
                }
            )

    def restrict(self, pid: str, users: Sequence[str] = (), groups: Sequence[str] = ()) -> None:
        """Replace the page's read restriction (both empty: lift it), as Confluence's page lock does."""
        with self.lock:
            self.pages[pid].read_users, self.pages[pid].read_groups = list(users), list(groups)

    def downloads(self) -> int:  # successful attachment downloads
        return sum(1 for path, status in self.log if path.startswith("/wiki/download/") and status == 200)

    def bump(self, pid: str, body: str | None = None) -> int:
        with self.lock:
            page = self.pages[pid]
            page.body, page.version = page.body if body is None else body, page.version + 1
            return page.version

    def delete(self, pid: str) -> None:  # Confluence moves deleted pages to the trash
        self.pages[pid].status = "trashed"

    def inject(
        self,
        status: int | None,
        times: int = 1,
        *,
        retry_after: str | None = None,
        endpoint: str | None = None,
        delay: float = 0.0,
    ) -> None:
        with self.lock:
            self.faults.extend(Fault(status, retry_after, endpoint, delay) for _ in range(times))

    def body_fetches(self) -> int:  # successful GETs of a page with its body
        return sum(1 for path, status in self.log if "body-format=" in path and status == 200)

    @property
    def base_url(self) -> str:
        assert self._server, "double not started"
        return f"http://127.0.0.1:{self._server.server_address[1]}/wiki"

    def start(self) -> ConfluenceDouble:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._server.daemon_threads = True
        self._server.double = self  # type: ignore[attr-defined]
        threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server:
            self._server.shutdown()
            self._server.server_close()

    __enter__ = start

    def __exit__(self, *exc) -> None:
        self.stop()

    def handle(self, raw_path: str, auth: str | None) -> tuple[int, dict[str, str], dict]:
        parts = urlsplit(raw_path)
        name, match = self._route(parts.path)
        with self.lock:
            if name:
                self.counts[name] += 1
            fault = self._take_fault(name)
        if fault and fault.delay:
            time.sleep(fault.delay)
        if self.latency:
            time.sleep(self.latency)
        if auth not in self.accepted:
            return 401, {}, _error(401, "Unauthorized")
        if fault and fault.status:
            headers = {"Retry-After": fault.retry_after} if fault.retry_after is not None else {}
            return fault.status, headers, _error(fault.status, "injected fault")
        if not name or (name in _PAGE_ROUTES and match.group(1) not in self.pages):
            return 404, {}, _error(404, "not found")
        if name in ("restriction", "restriction_all", "content") and name not in self.restriction_forms:
            return 404, {}, _error(404, "not found")
        if name == "restriction" and (fail := self.pages[match.group(1)].restriction_fail):
            return fail, {}, _error(fail, "injected restriction failure")
        if name == "page" and self.pages[match.group(1)].fail == "echo-auth":
            return 400, {}, _echo_credentials(auth)
        query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        try:
            with self.lock:
                return getattr(self, f"_{name}")(parts.path, query, *match.groups())
        except _Invalid as e:
            return 400, {}, _error(400, str(e))

    def _route(self, path: str):
        for prefix, routes in (("/wiki/api/v2", _ROUTES), ("/wiki/rest/api", _V1_ROUTES)):
            rest = path.removeprefix(prefix)
            for name, pattern in routes:
                if rest != path and (m := pattern.fullmatch(rest)):
                    return name, m
        return None, None

    def _take_fault(self, name: str | None) -> Fault | None:
        for fault in self.faults:
            if fault.endpoint in (None, name):
                self.faults.remove(fault)
                return fault
        return None

    def _list(self, path: str, query: dict, items: list[dict]) -> tuple[int, dict, dict]:
        limit = _int(query.get("limit", "25"), "limit", 1, 250)
        try:
            offset = int(base64.urlsafe_b64decode(query["cursor"]).decode()) if "cursor" in query else 0
        except ValueError:
            raise _Invalid("invalid cursor") from None
        size = min(limit, self.page_size)
        body: dict = {"results": items[offset : offset + size], "_links": {"base": self.base_url}}
        headers = {}
        if offset + size < len(items):
            cursor = base64.urlsafe_b64encode(str(offset + size).encode()).decode()
            nxt = f"{path}?{urlencode({**query, 'cursor': cursor})}"
            headers["Link"] = f'<{nxt}>; rel="next", <{self.base_url}>; rel="base"'
            if not self.link_header_only:
                body["_links"]["next"] = nxt
        return 200, headers, body

    def _visible(self, query: dict) -> list[Page]:
        allowed = query.get("status", "current,archived").split(",")
        if not set(allowed) <= {"current", "archived", "deleted", "trashed"}:
            raise _Invalid(f"invalid status {query['status']!r}")
        return [p for p in sorted(self.pages.values(), key=lambda p: int(p.id)) if p.status in allowed]

    def _spaces(self, path: str, query: dict):
        keys, ids = _csv(query.get("keys")), _csv(query.get("ids"))
        hit = (not keys or self.space_key in keys) and (not ids or self.space_id in ids)
        return self._list(path, query, [self._space_json()] if hit else [])

    def _space_pages(self, path: str, query: dict, space_id: str):
        if space_id != self.space_id:
            return 404, {}, _error(404, "space not found")
        return self._list(path, query, [self._page_json(p) for p in self._visible(query)])

    def _pages(self, path: str, query: dict):
        ids = _csv(query.get("id"))
        if len(ids) > 250 or not all(i.isdigit() for i in ids):
            raise _Invalid("id must be at most 250 integers")
        pages = [p for p in self._visible(query) if not ids or p.id in ids]
        return self._list(path, query, [self._page_json(p) for p in pages])

    def _page(self, path: str, query: dict, pid: str):
        page = self.pages[pid]
        if page.status == "trashed" or page.fail == 404:
            return 404, {}, _error(404, "page not found")
        if isinstance(page.fail, int):
            return page.fail, {}, _error(page.fail, "forbidden")
        out = self._page_json(page)
        fmt = query.get("body-format")
        if fmt is not None and page.fail != "no-body":
            if fmt not in _BODY_FORMATS:
                raise _Invalid(f"invalid body-format {fmt!r}")
            out["body"] = {"storage": {"representation": "storage", "value": page.body}} if fmt == "storage" else {}
        if query.get("include-labels") == "true":
            out["labels"] = {
                "results": [_label(n) for n in page.labels],
                "meta": {"hasMore": False, "cursor": ""},
                "_links": {"self": f"/wiki/api/v2/pages/{pid}/labels"},
            }
        out["_links"]["base"] = self.base_url
        return 200, {}, out

    def _children(self, path: str, query: dict, pid: str):
        kids = [p for p in self._visible({}) if p.parent_id == pid]
        return self._list(
            path,
            query,
            [
                {
                    "id": p.id,
                    "status": p.status,
                    "title": p.title,
                    "spaceId": self.space_id,
                    "childPosition": int(p.id) % 10000,
                }
                for p in kids
            ],
        )

    def _ancestors(self, path: str, query: dict, pid: str):
        page, chain = self.pages[pid], []
        while page.parent_id and page.parent_id in self.pages and len(chain) < 50:
            chain.insert(0, {"id": page.parent_id, "type": "page"})
            page = self.pages[page.parent_id]
        return (
            200,
            {},
            {"results": chain[-_int(query.get("limit", "25"), "limit", 1, 250) :], "_links": {"base": self.base_url}},
        )

    def _space_permissions(self, path: str, query: dict, space_id: str):
        if space_id != self.space_id:
            return 404, {}, _error(404, "space not found")
        return self._list(path, query, list(self.space_grants) or [_ANONYMOUS_READ])

    def _restriction(self, path: str, query: dict, pid: str):
        """v1 `byOperation/read`: each of the user and group lists paged by `start`/`limit` (capped at
        the double's page size, the cap reported in `limit`), as Cloud pages its expansions."""
        page = self.pages[pid]
        if page.status == "trashed":
            return 404, {}, _error(404, "content not found")
        start, limit = (
            _int(query.get("start", "0"), "start", 0, 10**9),
            _int(query.get("limit", "100"), "limit", 1, 10**4),
        )
        limit = min(limit, self.page_size)
        expand = set(_csv(query.get("expand")))

        def sub(items: list[dict], what: str) -> dict:
            if f"restrictions.{what}" not in expand:
                return {}
            part = items[start : start + limit]
            return {"results": part, "start": start, "limit": limit, "size": len(part)}

        users = [_user_json(a, self.users.get(a, "")) for a in page.read_users]
        groups = [{"type": "group", "name": g, "id": self._group_id(g)} for g in page.read_groups]
        lists = {k: v for k, v in (("user", sub(users, "user")), ("group", sub(groups, "group"))) if v}
        body = {
            "operation": "read",
            "restrictions": lists,
            "_expandable": {"content": f"/rest/api/content/{pid}"}
            | {k: "" for k in ("user", "group") if k not in lists},
            "_links": {"base": self.base_url, "context": "/wiki"},
        }
        return 200, {}, body

    def _read_lists(self, page: Page) -> dict:
        """The page's read restriction as one v1 `restrictions` object, unpaged (users, groups)."""
        users = [_user_json(a, self.users.get(a, "")) for a in page.read_users]
        groups = [{"type": "group", "name": g, "id": self._group_id(g)} for g in page.read_groups]
        return {
            k: {"results": v, "start": 0, "limit": 200, "size": len(v)} for k, v in (("user", users), ("group", groups))
        }

    def _restriction_all(self, path: str, query: dict, pid: str):
        """v1 `GET /content/{id}/restriction`: each operation's restriction (read and update)."""
        page = self.pages[pid]
        empty = {"user": {"results": [], "size": 0}, "group": {"results": [], "size": 0}}
        results = [
            {"operation": "update", "restrictions": empty},
            {"operation": "read", "restrictions": self._read_lists(page)},
        ]
        return 200, {}, {"results": results, "start": 0, "limit": 200, "size": 2}

    def _content(self, path: str, query: dict, pid: str):
        """v1 `GET /content/{id}` with its read restriction expanded."""
        page = self.pages[pid]
        if "restrictions.read.restrictions.user" not in _csv(query.get("expand")):
            return 200, {}, {"id": pid, "type": "page", "title": page.title}
        read = {"operation": "read", "restrictions": self._read_lists(page)}
        return 200, {}, {"id": pid, "type": "page", "title": page.title, "restrictions": {"read": read}}

    def _group_id(self, name: str) -> str:
        return next((gid for gid, n in self.groups.items() if n == name), None) or self.add_group(name)

    def _group_by_id(self, path: str, query: dict):
        gid = query.get("id", "")
        if gid not in self.groups:
            return 404, {}, _error(404, "group not found")
        return 200, {}, {"type": "group", "name": self.groups[gid], "id": gid, "_links": {"self": path}}

    def _user(self, path: str, query: dict):
        account = query.get("accountId", "")
        if account not in self.users:
            return 404, {}, _error(404, "user not found")
        return 200, {}, _user_json(account, self.users[account])

    def _attachments(self, path: str, query: dict, pid: str):
        return self._list(path, query, [self._attachment_json(pid, a) for a in self.pages[pid].attachments])

    def _attachment_json(self, pid: str, a: Attachment) -> dict:
        download = f"/download/attachments/{pid}/{quote(a.title)}?version={a.version}&api=v2"
        return {
            "id": a.id,
            "status": "current",
            "title": a.title,
            "createdAt": CREATED,
            "pageId": pid,
            "mediaType": a.media_type,
            "mediaTypeDescription": "",
            "comment": "",
            "fileId": f"f-{a.id}",
            "fileSize": len(a.data) if a.size is None else a.size,
            "downloadLink": download,
            "webuiLink": f"/pages/viewpageattachments.action?pageId={pid}",
            "version": {
                "number": a.version,
                "message": "",
                "minorEdit": False,
                "authorId": AUTHOR,
                "createdAt": CREATED,
            },
            "_links": {"webui": f"/pages/viewpageattachments.action?pageId={pid}", "download": download},
        }

    def download(self, raw_path: str, auth: str | None) -> tuple[int, bytes]:
        """The bytes of an attachment (`/wiki/download/attachments/<page>/<file name>`)."""
        if auth not in self.accepted:
            return 401, b""
        m = _DOWNLOAD.fullmatch(urlsplit(raw_path).path)
        with self.lock:
            page = self.pages.get(m.group(1)) if m else None
            att = next((a for a in page.attachments if quote(a.title) == m.group(2)), None) if page and m else None
            return (200, att.data) if att else (404, b"")

    def _labels(self, path: str, query: dict, pid: str):
        return self._list(path, query, [_label(n) for n in self.pages[pid].labels])

    def _space_json(self) -> dict:
        return {
            "id": self.space_id,
            "key": self.space_key,
            "name": f"{self.space_key} space",
            "type": "global",
            "status": "current",
            "authorId": AUTHOR,
            "createdAt": CREATED,
            "homepageId": min(self.pages, key=int, default="1"),
            "_links": {"webui": f"/spaces/{self.space_key}"},
        }

    def _page_json(self, p: Page) -> dict:
        out = {
            "id": p.id,
            "status": p.status,
            "title": p.title,
            "spaceId": self.space_id,
            "position": int(p.id) % 10000,
            "authorId": AUTHOR,
            "ownerId": AUTHOR,
            "lastOwnerId": None,
            "createdAt": CREATED,
            "version": {
                "number": p.version,
                "message": "",
                "minorEdit": False,
                "authorId": AUTHOR,
                "createdAt": CREATED,
            },
            "_links": {
                "webui": f"/spaces/{self.space_key}/pages/{p.id}",
                "editui": f"/pages/resumedraft.action?draftId={p.id}",
                "tinyui": f"/x/{p.id}",
            },
        }
        if p.parent_id:
            out.update(parentId=p.parent_id, parentType="page")
        return out


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: lets tests see connection reuse
    disable_nagle_algorithm = True  # headers and body go out in two writes: no 40 ms delayed-ACK stall

    def setup(self) -> None:
        super().setup()
        with self.server.double.lock:  # type: ignore[attr-defined]
            self.server.double.connections += 1  # type: ignore[attr-defined]

    def do_GET(self) -> None:
        double: ConfluenceDouble = self.server.double  # type: ignore[attr-defined]
        if self.path.startswith("/wiki/download/"):
            status, raw = double.download(self.path, self.headers.get("Authorization"))
            with double.lock:
                double.log.append((self.path, status))
            self.send_response(status)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)
            return
        status, headers, body = double.handle(self.path, self.headers.get("Authorization"))
        with double.lock:
            double.log.append((self.path, status))
        send_json(self, status, body, headers)

    def log_message(self, *args) -> None:  # quiet: tests read `double.log` instead
        pass


_ANONYMOUS_READ = {
    "id": "0",
    "principal": {"type": "role", "id": "anonymous-users"},
    "operation": {"key": "read", "targetType": "space"},
}


def _error(status: int, title: str) -> dict:
    return {"errors": [{"status": status, "code": str(status), "title": title, "detail": None}]}


def _echo_credentials(auth: str) -> dict:
    """A careless server's error: the Authorization header, its decoded pair and the bare secret (raw and
    URL-encoded), the header's value starting 180 characters into the body (a 200-character cut splits it)."""
    scheme, _, value = auth.partition(" ")
    pair = base64.b64decode(value).decode() if scheme == "Basic" else value
    secret = pair.partition(":")[2] or pair
    lead = json.dumps(_error(400, "Bad Request")).index('"detail"') + len('"detail": "')
    width = max(1, 180 - lead - len(f"Authorization: {scheme} "))
    pad = ("A header did not validate against the schema. " * 4)[: width - 1] + " "
    body = _error(400, "Bad Request")
    body["errors"][0]["detail"] = (
        f"{pad}Authorization: {auth}; credentials {pair!r}, token={quote(secret, safe='')} raw={secret}"
    )
    return body


def _user_json(account_id: str, email: str) -> dict:
    """A v1 user; `email` is "" where the user's privacy settings hide it, as on Cloud."""
    return {
        "type": "known",
        "accountId": account_id,
        "accountType": "atlassian",
        "email": email,
        "publicName": account_id[:8],
        "displayName": account_id[:8],
    }


def _label(name: str) -> dict:
    return {"id": str(zlib.crc32(name.encode())), "name": name, "prefix": "global"}


def _csv(value: str | None) -> list[str]:
    return [v for v in (value or "").split(",") if v]


def _int(value: str, name: str, lo: int, hi: int) -> int:
    if not value.isdigit() or not lo <= int(value) <= hi:
        raise _Invalid(f"{name} must be an integer in [{lo}, {hi}]")
    return int(value)

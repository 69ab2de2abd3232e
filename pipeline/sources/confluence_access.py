"""Who may read a Confluence page, as docforge access clauses (migration 0011, docs/confluence.md).

Confluence shows a page to a reader who may read its space AND passes the read restriction of the
page itself and of every ancestor that has one (a restricted page hides its whole subtree). Each
of those is one clause here, a reader must match one principal of each: the space's readers, then
one clause per restricted ancestor (top first) and the page's own. Principals are spelled as the
contract says: "user:<account id>", "user:<email>" (when Confluence shows it) and "group:<name>".

Everything is read once per run and kept: a space's permissions once per space, a restriction
once per page or ancestor, a group's name once per group id. Ancestors mostly come free from the
listing (each listed page names its parent); only a page whose parent is not listed (a folder, a
root given by `page_ids`) costs an ancestors read. `requests` counts what was asked, by kind.

A read that fails raises ConfluenceError for the pages that depend on it (the caller fails them
closed); a principal that cannot be named (a v2 `role`, an access class such as all-licensed-users,
unless `everyone_groups` names it) is left out, which narrows, never widens.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import suppress

from pipeline.errors import ConfluenceError
from pipeline.sources.confluence_client import V1, ConfluenceClient

log = logging.getLogger(__name__)
Clause = tuple[str, ...]  # principals, sorted: a reader must hold at least one
PAGE_LIMIT = 250  # v2 `limit` cap; also asked of the v1 restriction lists
MAX_RESTRICTED = 100_000  # principals of one restriction: past this, a paging loop, not a restriction
# The v1 forms of a read restriction, the paged one first (see PageAccess._read_restriction).
RESTRICTION_FORMS = ("by_operation", "all_operations", "expanded")
WORKERS = 8  # restriction reads in flight: one after another, a real site costs a round trip per page
# Ancestor types and the v2 collection that answers their own ancestors.
_COLLECTIONS = {
    "page": "pages",
    "folder": "folders",
    "whiteboard": "whiteboards",
    "database": "databases",
    "embed": "embeds",
}


class PageAccess:
    """The access clauses of a site's pages, read through one client, cached for one run."""

    ancestors_limit = PAGE_LIMIT  # a smaller one makes tests walk the ancestors' pagination

    def __init__(self, api: ConfluenceClient, everyone_groups: list[str]):
        self.api = api
        self.everyone = {f"group:{g}" for g in everyone_groups}
        self.everyone_roles = {g.lower() for g in everyone_groups}  # access classes, e.g. all-licensed-users
        self.requests: Counter[str] = Counter()
        self._lock = threading.Lock()  # over `requests`: restriction reads run in threads
        self._spaces: dict[str, Clause | None | ConfluenceError] = {}
        self._restrictions: dict[str, Clause | None | ConfluenceError] = {}
        self._ancestors: dict[str, list[tuple[str, str]] | ConfluenceError] = {}  # id → (id, type), top first
        self._groups: dict[str, str] = {}  # group id → name
        self._emails: dict[str, str | None] = {}  # account id → email, when Confluence shows it
        self._form = RESTRICTION_FORMS[0]  # the form of the restriction read this site answers

    def prepare(self, pages: Sequence[Mapping], listed: Mapping[str, Mapping]) -> None:
        """Read what the pages' clauses need, each thing once: their spaces' permissions, their
        ancestors where the listing lacks them, then every restriction, `WORKERS` at a time."""
        ids: dict[str, None] = {}
        for page in pages:
            pid = str(page.get("id"))
            self._settle(self._spaces, str(page.get("spaceId")), self._read_space)
            with suppress(ConfluenceError):  # kept: `clauses` fails this page with it
                ids.update((a, None) for a, _ in self._chain(pid, listed))
            ids[pid] = None
        todo = [cid for cid in ids if cid not in self._restrictions]
        with ThreadPoolExecutor(WORKERS, thread_name_prefix="confluence-access") as pool:
            list(pool.map(lambda cid: self._settle(self._restrictions, cid, self._read_restriction), todo))

    def clauses(self, page: Mapping, listed: Mapping[str, Mapping]) -> tuple[Clause, ...]:
        """The page's clauses: its space's, then each restricted ancestor's and its own (ConfluenceError
        when one of them cannot be read). `listed`: the run's pages by id, whose parents spare reads."""
        pid, space = str(page.get("id")), str(page.get("spaceId"))
        try:
            chain = [a for a, _ in self._chain(pid, listed)]
        except ConfluenceError as e:
            raise ConfluenceError(f"its ancestors: {e}") from None
        clauses = [self._cached(self._spaces, space, self._read_space, f"the permissions of space {space}")]
        clauses += [
            self._cached(self._restrictions, cid, self._read_restriction, f"the read restriction of ancestor {cid}")
            for cid in chain
        ]
        clauses.append(self._cached(self._restrictions, pid, self._read_restriction, "its read restriction"))
        return tuple(dict.fromkeys(c for c in clauses if c is not None))

    def summary(self) -> str:
        total = sum(self.requests.values())
        kinds = ", ".join(f"{k} {n}" for k, n in sorted(self.requests.items()))
        return f"{total} requests" + (f" ({kinds})" if kinds else "")

    # --- the reads ---------------------------------------------------------------------------------

    def _count(self, kind: str) -> None:
        with self._lock:
            self.requests[kind] += 1

    @staticmethod
    def _settle(cache: dict, key: str, read: Callable[[str], object]) -> None:
        """`read(key)` into the cache, or the error it raised: every page that depends on it fails alike.
        The one mapping of a read's faults: any other kind becomes a ConfluenceError naming it."""
        if key not in cache:
            try:
                cache[key] = read(key)
            except ConfluenceError as e:
                cache[key] = e
            except Exception as e:  # an answer of an unexpected shape: as unreadable as a failed one
                cache[key] = ConfluenceError(f"{type(e).__name__}: {e}")

    @classmethod
    def _cached(cls, cache: dict, key: str, read: Callable[[str], Clause | None], what: str) -> Clause | None:
        cls._settle(cache, key, read)
        if isinstance(value := cache[key], ConfluenceError):
            raise ConfluenceError(f"{what}: {value}")
        return value

    def _clause(self, principals: set[str]) -> Clause | None:
        """None when a principal admits everyone; else the sorted clause (empty: full-access callers only)."""
        return None if principals & self.everyone else tuple(sorted(principals))

    def _read_space(self, space_id: str) -> Clause | None:
        """Who may read the space (v2 space permissions, `read` on `space`); None: anyone, anonymous included."""
        principals: set[str] = set()
        unnamed: list[str] = []
        self._count("space permissions")
        for grant in self.api.paginate(f"/spaces/{space_id}/permissions", {"limit": PAGE_LIMIT}):
            op, who = grant.get("operation") or {}, grant.get("principal") or {}
            if (op.get("key"), op.get("targetType")) != ("read", "space"):
                continue
            kind, ident = who.get("type"), str(who.get("id") or "")
            if kind == "user" and ident:
                principals |= self._user(ident, None)
            elif kind == "group" and ident:
                principals.add(f"group:{self._group_name(ident)}")
            elif kind == "role" and ("anonymous" in ident.lower() or ident.lower() in self.everyone_roles):
                return None  # a public space (access class anonymous-users), or one every caller is in
            else:
                unnamed.append(f"{kind}:{ident}")
        if unnamed:
            log.info("space %s: read granted to %s, which docforge cannot name: left out", space_id, unnamed)
        return self._clause(principals)

    def _read_restriction(self, content_id: str) -> Clause | None:
        """The content's own read restriction (v1): None when it has none. `byOperation/read` pages its
        lists; a site (or a proxy) without it (404) is asked the other v1 forms of the same lists, each
        operation's restrictions or the content expanded with its own, and the form that answers is
        asked first from then on. A 404 from every form (the page deleted since) fails the read."""
        missing: ConfluenceError | None = None
        for form in RESTRICTION_FORMS[RESTRICTION_FORMS.index(self._form) :]:
            try:
                clause = getattr(self, f"_restriction_{form}")(content_id)
            except ConfluenceError as e:
                if e.status != 404:
                    raise
                missing = missing or e
                continue
            self._form = form
            return clause
        assert missing is not None
        raise missing

    def _restriction_by_operation(self, content_id: str) -> Clause | None:
        principals: set[str] = set()
        restricted, start = False, 0
        while True:
            self._count("restrictions")
            data = self.api.get_json(
                f"/content/{content_id}/restriction/byOperation/read",
                {"expand": "restrictions.user,restrictions.group", "start": start, "limit": PAGE_LIMIT},
                api=V1,
            )
            lists = self._lists(content_id, data.get("restrictions"))
            restricted |= self._add(principals, lists)
            limits = {k: int(lists[k].get("limit") or PAGE_LIMIT) for k in lists}  # the server's cap
            if not any(len(lists[k].get("results") or []) >= limits[k] for k in limits):
                return self._clause(principals) if restricted else None
            start += min(limits.values())  # a list with a larger cap is read again in part: a set takes it
            if start > MAX_RESTRICTED:
                raise ConfluenceError(f"content {content_id}: over {MAX_RESTRICTED} restricted users or groups")

    def _restriction_all_operations(self, content_id: str) -> Clause | None:
        self._count("restrictions")
        data = self.api.get_json(
            f"/content/{content_id}/restriction",
            {"expand": "restrictions.user,restrictions.group", "limit": PAGE_LIMIT},
            api=V1,
        )
        read = [r for r in data.get("results") or [] if isinstance(r, dict) and r.get("operation") == "read"]
        principals: set[str] = set()
        restricted = any(self._add(principals, self._lists(content_id, r.get("restrictions"))) for r in read)
        return self._clause(principals) if restricted else None

    def _restriction_expanded(self, content_id: str) -> Clause | None:
        self._count("restrictions")
        data = self.api.get_json(
            f"/content/{content_id}",
            {"expand": "restrictions.read.restrictions.user,restrictions.read.restrictions.group"},
            api=V1,
        )
        read = ((data.get("restrictions") or {}).get("read") or {}).get("restrictions")
        principals: set[str] = set()
        restricted = self._add(principals, self._lists(content_id, read))
        return self._clause(principals) if restricted else None

    @staticmethod
    def _lists(content_id: str, restrictions: object) -> dict[str, dict]:
        """The user and group lists of a read restriction (one the answer leaves out holds no one)."""
        if not isinstance(restrictions, dict):
            raise ConfluenceError(f"content {content_id}: the read restriction has no user and group lists")
        return {k: v for k in ("user", "group") if isinstance(v := restrictions.get(k), dict)}

    def _add(self, principals: set[str], lists: dict[str, dict]) -> bool:
        """The users and groups of `lists` added to `principals`; whether the lists named anyone."""
        users = (lists.get("user") or {}).get("results") or []
        groups = (lists.get("group") or {}).get("results") or []
        for u in users:
            if u.get("accountId"):
                principals |= self._user(str(u["accountId"]), u.get("email"))
        for g in groups:
            name = g.get("name") or (self._group_name(str(g["id"])) if g.get("id") else None)
            if name:
                principals.add(f"group:{name}")
        return bool(users or groups)

    def _user(self, account_id: str, email: str | None) -> set[str]:
        """A user's principals: the account id, and the email when Confluence shows it (looked up once)."""
        if email is None and account_id not in self._emails:
            try:
                self._count("users")
                self._emails[account_id] = self.api.get_json("/user", {"accountId": account_id}, api=V1).get("email")
            except ConfluenceError as e:  # the account id alone still names them: narrower, never wider
                log.info("user %s: email unavailable (%s)", account_id, e)
                self._emails[account_id] = None
        email = email or self._emails.get(account_id)
        return {f"user:{account_id}"} | ({f"user:{email.lower()}"} if email else set())

    def _group_name(self, group_id: str) -> str:
        if group_id not in self._groups:
            self._count("groups")
            try:
                name = self.api.get_json("/group/by-id", {"id": group_id}, api=V1).get("name")
            except ConfluenceError as e:
                if e.status != 404:
                    raise
                # No such lookup (or group) on this site: the id is the only name there is. A caller
                # matches it only if its groups hold that very id: narrower, never wider.
                log.info("group %s: no name (%s); matched by its id", group_id, e)
                name = group_id
            if not name:
                raise ConfluenceError(f"group {group_id}: the answer has no name")
            self._groups[group_id] = str(name)
        return self._groups[group_id]

    # --- ancestors ---------------------------------------------------------------------------------

    def _chain(self, pid: str, listed: Mapping[str, Mapping]) -> list[tuple[str, str]]:
        """The page's ancestors (id, type), top first: from the listed parents as far as they go,
        then, for a parent not listed, from the ancestors API (pages of `ancestors_limit`)."""
        climb, at = [], pid
        while at not in self._ancestors:
            page = listed.get(at)
            parent = str((page or {}).get("parentId") or "")
            if page is not None and not parent:
                self._ancestors[at] = []  # a root
            elif page is not None and parent in listed:
                climb.append(at)
                at = parent
                continue
            else:
                self._settle(self._ancestors, at, self._read_ancestors)  # a failure kept: descendants fail alike
            break
        for child in reversed(climb):  # each one's chain is its parent's plus the parent
            above, parent = self._ancestors[at], str(listed[child]["parentId"])
            self._ancestors[child] = (
                above
                if isinstance(above, ConfluenceError)
                else [*above, (parent, str(listed[parent].get("type") or "page"))]
            )
            at = child
        if isinstance(chain := self._ancestors[pid], ConfluenceError):
            raise chain
        return chain

    def _read_ancestors(self, cid: str) -> list[tuple[str, str]]:
        chain: list[tuple[str, str]] = []
        at, at_kind = cid, "page"
        while True:
            self._count("ancestors")
            collection = _COLLECTIONS.get(at_kind, "pages")
            got = self.api.get_json(f"/{collection}/{at}/ancestors", {"limit": self.ancestors_limit}).get("results")
            found = [(str(a["id"]), str(a.get("type") or "page")) for a in got or [] if a.get("id")]
            chain = found + chain
            if len(found) < self.ancestors_limit:  # the API's rule: a full page may have more above its top
                break
            at, at_kind = found[0]
            if isinstance(known := self._ancestors.get(at), list):  # its chain is known: no need to climb
                chain = known + chain
                break
        for i, (a, _) in enumerate(chain):  # each ancestor's own chain, for its other descendants
            self._ancestors.setdefault(a, chain[:i])
        return chain

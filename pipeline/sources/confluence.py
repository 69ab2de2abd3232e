"""Confluence Cloud pages as a docforge source: list with versions, fetch what changed.

Listing costs one request per `page_size` pages (plus, only when label filters
are set, one per page for its labels); a body is fetched only for a page whose
version differs from the ledger. A listing that fails raises, since a partial
listing would delete pages from the index; a page that fails becomes a Failure
and the rest go on. Breadcrumb and labels are best effort: they decorate a
page, they never fail it. HTTP, auth and retries live in `confluence_client`.
With `permissions: sync`, every listing also reads who may read each page
(`confluence_access`: about one more request per page), failing a page closed
when its permissions cannot be read.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from dataclasses import replace

from pipeline.config import ConfluenceCredentials, ConfluenceSourceConfig
from pipeline.errors import ConfluenceError
from pipeline.parse import formats
from pipeline.records import DocRef, Document, Failure, Part, Skipped
from pipeline.redact import redact
from pipeline.sources.confluence_access import PageAccess
from pipeline.sources.confluence_client import Clock, ConfluenceClient
from pipeline.sources.content import file_document, sha256_text

log = logging.getLogger(__name__)
MAX_IDS = 250  # the v2 API's cap on `id=` / `ids=` lists


class ConfluenceSource:
    """A space and/or page trees of one Confluence Cloud site, as a docforge source."""

    type = "confluence"

    def __init__(
        self, cfg: ConfluenceSourceConfig, creds: ConfluenceCredentials | None = None, clock: Clock | None = None
    ):
        if not cfg.space and not cfg.page_ids:
            raise ConfluenceError(f"source {cfg.name!r}: set `space` (a space key) and/or `page_ids`")
        self.name, self.cfg, self.tags = cfg.name, cfg, list(cfg.tags)
        self.api = ConfluenceClient(cfg, creds, clock)  # None: from the environment; the system clock
        self._titles: dict[str, str] = {}  # page id → title, for breadcrumbs
        self.skipped: list[Skipped] = []  # attachments over max_attachment_bytes, from the last listing
        self._space_keys: dict[str, str] = {}  # space id → key
        self.access: PageAccess | None = None  # `permissions: sync`: the last listing's reads and their cache
        self.failures: list[Failure] = []  # pages whose permissions could not be read, from the last listing

    def close(self) -> None:
        self.api.close()

    def list_refs(self) -> list[DocRef]:
        pages: dict[str, dict] = {}
        if self.cfg.space:
            space_id = self._space_id(self.cfg.space)
            params = {"status": "current", "limit": self.cfg.page_size}
            pages.update((str(p.get("id")), p) for p in self.api.paginate(f"/spaces/{space_id}/pages", params))
        roots = self._pages_by_id(self.cfg.page_ids)
        if missing := [i for i in self.cfg.page_ids if i not in roots]:
            log.warning("source %r: page ids %s not found (deleted or not visible): skipped", self.name, missing)
        pages.update(roots)
        if self.cfg.include_children:
            pages.update(self._descendants(list(roots), pages))
        self._titles.update((pid, p.get("title", "")) for pid, p in pages.items())
        self._resolve_space_keys({str(p.get("spaceId")) for p in pages.values() if p.get("spaceId")})
        refs = self._filter_labels([self._ref(p) for p in pages.values() if p.get("status", "current") == "current"])
        refs = self._with_access(refs, pages)
        log.info("source %r: %d pages listed (%.1fs spent waiting on retries)", self.name, len(refs), self.api.waited)
        self.skipped = []
        if self.cfg.attachments:
            refs += [a for page in refs for a in self._attachment_refs(page)]
        return sorted(refs, key=lambda r: r.key)

    def list_part(self, page_ids: Sequence[str]) -> Part:
        """Only these pages (a webhook's), without listing the space: each that is current and in this
        source's scope (its space, one of `page_ids`, or below one with `include_children`), with its
        attachments when configured. The part owns each page's key and its attachments' keys, so a page
        deleted, trashed or moved out of scope is listed as nothing and goes from the index."""
        ids = list(dict.fromkeys(str(p) for p in page_ids))
        pages = self._pages_by_id(ids)
        self._resolve_space_keys({str(p.get("spaceId")) for p in pages.values() if p.get("spaceId")})
        self._titles.update((pid, p.get("title", "")) for pid, p in pages.items())
        scoped = [p for pid, p in pages.items() if p.get("status", "current") == "current" and self._in_scope(pid, p)]
        refs = self._with_access(self._filter_labels([self._ref(p) for p in scoped]), pages)
        self.skipped = []
        if self.cfg.attachments:
            refs += [a for page in refs for a in self._attachment_refs(page)]
        log.info("source %r: %d of %d delivered pages in scope", self.name, len(refs), len(ids))
        return Part(sorted(refs, key=lambda r: r.key), tuple(f"{self.name}:{pid}" for pid in ids))

    def _in_scope(self, pid: str, page: dict) -> bool:
        if pid in self.cfg.page_ids:
            return True
        space = self._space_keys.get(str(page.get("spaceId")), "")
        if self.cfg.space and space.lower() == self.cfg.space.lower():
            return True
        if not (self.cfg.include_children and self.cfg.page_ids):
            return False
        ancestors = self.api.get_json(f"/pages/{pid}/ancestors", {"limit": 250}).get("results") or []
        return any(str(a.get("id")) in self.cfg.page_ids for a in ancestors)

    def fetch(self, refs: Sequence[DocRef]) -> Iterator[Document | Failure]:
        for ref in refs:
            try:
                yield self._fetch_attachment(ref) if "attachment_id" in ref.meta else self._fetch_page(ref)
            except ConfluenceError as e:  # this page only: the rest of the source goes on
                yield Failure(ref.key, "fetch", str(e))
            except Exception as e:  # an odd answer for this page (a body that is no JSON object ...): it alone
                yield Failure(ref.key, "fetch", redact(f"page {ref.path}: {type(e).__name__}: {e}", 500))

    def _space_id(self, key: str) -> str:
        spaces = self.api.get_json("/spaces", {"keys": key, "limit": 25}).get("results") or []
        space = next((s for s in spaces if str(s.get("key", "")).lower() == key.lower()), None)
        if space is None or not space.get("id"):
            raise ConfluenceError(
                f"source {self.name!r}: space {key!r} not found at {self.api.base} "
                "(check the key, or these credentials cannot see it)"
            )
        self._space_keys[str(space["id"])] = space.get("key", key)
        return str(space["id"])

    def _resolve_space_keys(self, space_ids: set[str]) -> None:
        unknown = sorted(space_ids - self._space_keys.keys())
        for i in range(0, len(unknown), MAX_IDS):
            batch = ",".join(unknown[i : i + MAX_IDS])
            for s in self.api.paginate("/spaces", {"ids": batch, "limit": MAX_IDS}):
                self._space_keys[str(s.get("id"))] = s.get("key", "")

    def _pages_by_id(self, ids: Sequence[str]) -> dict[str, dict]:
        """Pages (without bodies, with versions) by id, in as few requests as the API allows."""
        out: dict[str, dict] = {}
        for i in range(0, len(ids), MAX_IDS):
            params = {"id": ",".join(ids[i : i + MAX_IDS]), "status": "current", "limit": MAX_IDS}
            out.update((str(p.get("id")), p) for p in self.api.paginate("/pages", params))
        return out

    def _descendants(self, root_ids: list[str], known: dict[str, dict]) -> dict[str, dict]:
        """Every page below the roots, level by level; versions fetched in bulk for new ones."""
        found: dict[str, dict] = {}
        seen, level = set(root_ids), list(root_ids)
        while level:
            kids = [
                str(c.get("id"))
                for pid in level
                for c in self.api.paginate(f"/pages/{pid}/children", {"limit": self.cfg.page_size})
            ]
            level = [k for k in dict.fromkeys(kids) if k not in seen]
            seen.update(level)
            found.update(self._pages_by_id([k for k in level if k not in known]))
        return found

    def _ref(self, page: dict) -> DocRef:
        pid = str(page.get("id") or "")
        if not pid:
            raise ConfluenceError(f"source {self.name!r}: a listed page has no id: {str(page)[:200]}")
        version = (page.get("version") or {}).get("number")
        meta = {
            "page_id": pid,
            "title": page.get("title", ""),
            "url": self._web_url(page),
            "space": self._space_keys.get(str(page.get("spaceId")), self.cfg.space or ""),
            "version": version,
        }
        return DocRef(f"{self.name}:{pid}", pid, None if version is None else str(version), meta=meta)

    def _web_url(self, page: dict) -> str:
        webui = (page.get("_links") or {}).get("webui")
        if webui and webui.startswith(("http://", "https://")):
            return webui
        return self.api.base + webui if webui else f"{self.api.base}/pages/viewpage.action?pageId={page.get('id')}"

    def _labels(self, pid: str) -> list[str]:
        return sorted(
            {str(lb.get("name", "")) for lb in self.api.paginate(f"/pages/{pid}/labels", {"limit": MAX_IDS})} - {""}
        )

    def _filter_labels(self, refs: list[DocRef]) -> list[DocRef]:
        include = {x.lower() for x in self.cfg.labels_include}
        exclude = {x.lower() for x in self.cfg.labels_exclude}
        if not include and not exclude:
            return refs
        kept = []
        for ref in refs:
            labels = self._labels(ref.path)
            names = {x.lower() for x in labels}
            if (not include or include & names) and not exclude & names:
                kept.append(replace(ref, meta={**ref.meta, "labels": labels}))
        return kept

    def _with_access(self, refs: list[DocRef], pages: dict[str, dict]) -> list[DocRef]:
        """With `permissions: sync`, each page's access clauses (pipeline.sources.confluence_access).
        A page whose permissions cannot be read fails closed: it keeps its vectors but gets one empty
        clause (full-access callers only) until a run reads them, and is listed as a failure."""
        self.failures = []
        if self.cfg.permissions != "sync":
            return refs
        self.access, out = PageAccess(self.api, self.cfg.everyone_groups), []  # read afresh at every listing
        self.access.prepare([pages[r.path] for r in refs], pages)
        for ref in refs:
            try:
                access = self.access.clauses(pages[ref.path], pages)
            except ConfluenceError as e:
                access = ((),)
                self.failures.append(
                    Failure(
                        ref.key,
                        "permissions",
                        redact(
                            f"page {ref.path} is hidden from all but full-access callers, with its attachments, "
                            f"until a run reads its permissions (the next run tries again): {e}",
                            500,
                        ),
                    )
                )
            out.append(replace(ref, access=access))
        log.info(
            "source %r: permissions of %d pages read, %s; %d unreadable (full-access callers only)",
            self.name,
            len(out),
            self.access.summary(),
            len(self.failures),
        )
        return out

    def _fetch_page(self, ref: DocRef) -> Document:
        pid = ref.path
        data = self.api.get_json(f"/pages/{pid}", {"body-format": "storage", "include-labels": "true"})
        body = ((data.get("body") or {}).get("storage") or {}).get("value")
        if not isinstance(body, str):
            raise ConfluenceError(f"page {pid}: the response has no storage body (body.storage.value)")
        version = (data.get("version") or {}).get("number", ref.meta.get("version"))
        title = data.get("title") or ref.meta.get("title") or pid
        url = self._web_url(data) if (data.get("_links") or {}).get("webui") else ref.meta.get("url", "")
        meta = {
            **ref.meta,
            "title": title,
            "url": url,
            "version": version,
            "labels": self._page_labels(pid, data, ref.meta.get("labels")),
            "breadcrumb": self._breadcrumb(pid),
        }
        ref = replace(ref, version=ref.version if version is None else str(version), meta=meta)
        return Document(ref, "confluence", title, url, body, sha256_text(body))

    def _attachment_refs(self, page: DocRef) -> list[DocRef]:
        """The page's PDF and Word attachments, as documents of their own: key `<source>:<page id>/attachments/
        <attachment id>`, version the attachment's. Only listed with their page, so they go when it goes."""
        pid, out = page.path, []
        for a in self.api.paginate(f"/pages/{pid}/attachments", {"limit": MAX_IDS}):
            name, aid = str(a.get("title") or ""), str(a.get("id") or "")
            fmt = formats.detect(name)
            if not aid or fmt not in formats.BINARY_DOCUMENTS or a.get("status", "current") != "current":
                continue  # images and other files: not documents here
            where = f"{page.meta.get('title') or pid}/{name}"
            size = a.get("fileSize")
            if isinstance(size, int) and size > self.cfg.max_attachment_bytes:
                self.skipped.append(
                    Skipped(
                        where,
                        f"attachment of {size} bytes, over max_attachment_bytes "
                        f"({self.cfg.max_attachment_bytes}): not downloaded",
                    )
                )
                continue
            link = a.get("downloadLink") or (a.get("_links") or {}).get("download")
            if not link:
                self.skipped.append(Skipped(where, "attachment without a download link"))
                continue
            version = (a.get("version") or {}).get("number")
            webui = a.get("webuiLink") or (a.get("_links") or {}).get("webui")
            meta = {
                "page_id": pid,
                "page_title": page.meta.get("title", ""),
                "attachment_id": aid,
                "title": name,
                "format": fmt,
                "space": page.meta.get("space", ""),
                "version": version,
                "download": link,
                "url": self.api.base + webui if webui else page.meta.get("url", ""),
            }
            out.append(
                DocRef(
                    f"{self.name}:{pid}/attachments/{aid}",
                    f"{pid}/attachments/{aid}",
                    None if version is None else str(version),
                    size=size if isinstance(size, int) else None,
                    meta=meta,
                    access=page.access,  # a page's attachments are read by whoever reads the page
                )
            )
        return out

    def _fetch_attachment(self, ref: DocRef) -> Document | Failure:
        data = self.api.download(ref.meta["download"], self.cfg.max_attachment_bytes)
        meta = {k: v for k, v in ref.meta.items() if k != "download"}  # a download link may carry a token
        title = f"{ref.meta['page_title']} › {ref.meta['title']}" if ref.meta.get("page_title") else ref.meta["title"]
        return file_document(replace(ref, meta=meta), data, ref.meta["format"], title, ref.meta["url"])

    def _page_labels(self, pid: str, data: dict, listed: list[str] | None) -> list[str]:
        labels = data.get("labels") or {}
        if isinstance(labels.get("results"), list) and not (labels.get("meta") or {}).get("hasMore"):
            return sorted({str(lb.get("name", "")) for lb in labels["results"]} - {""})
        try:
            return self._labels(pid)
        except ConfluenceError as e:  # labels only add tags: never fail the page for them
            log.info("page %s: labels unavailable (%s)", pid, e)
            return list(listed or [])

    def _breadcrumb(self, pid: str) -> list[str]:
        """Ancestor titles, top first; best effort (the page is fine without one)."""
        try:
            ancestors = self.api.get_json(f"/pages/{pid}/ancestors", {"limit": 250}).get("results") or []
            ids = [str(a.get("id")) for a in ancestors if a.get("type", "page") == "page"]
            if missing := [a for a in ids if a not in self._titles]:
                self._titles.update((k, p.get("title", "")) for k, p in self._pages_by_id(missing).items())
        except ConfluenceError as e:
            log.info("page %s: breadcrumb unavailable (%s)", pid, e)
            return []
        return [self._titles[a] for a in ids if self._titles.get(a)]

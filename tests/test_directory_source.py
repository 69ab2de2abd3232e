"""`type: directory` sources: what is listed, skipped and never read; then a mixed directory (code, PDF, Word,
HTML) ingested into a real store and searched: symbol paths, PDF pages, skipped files, incremental runs."""

from __future__ import annotations

import os
from pathlib import Path

import psycopg
import pytest

from pipeline.config import load_settings
from pipeline.errors import SourceError
from pipeline.ingest import IngestContext, ingest_source
from pipeline.query import Searcher
from pipeline.records import Document, Failure
from pipeline.sources import open_source
from tests.doc_files import make_docx, make_pdf
from tests.helpers import write_files

OUTSIDE_SECRET = "zebra-password-4242"
SERVER_PY = '''"""Tenant administration."""
import secrets


class TenantAdmin:
    """Operations on tenants."""

    def rotate_api_keys(self, tenant_id: str) -> list[str]:
        """Rotate the API keys of one tenant: every old key stops working at once."""
        return [secrets.token_hex(16) for _ in range(2)]


def audit_log_path(tenant_id: str) -> str:
    return f"/var/log/tenants/{tenant_id}.log"
'''
MAIN_GO = """package main

import "net/http"

// Server answers the health probe of the load balancer.
type Server struct{ port int }

// Healthz reports whether the server can take traffic.
func (s *Server) Healthz(w http.ResponseWriter, r *http.Request) {
\tw.WriteHeader(http.StatusOK)
}
"""
CLIENT_TS = """import { fetch } from "./http";

export class BillingClient {
  // Download every unpaid invoice of an account as PDF.
  async downloadUnpaidInvoices(account: string): Promise<Blob[]> {
    return fetch(`/accounts/${account}/invoices?status=unpaid`);
  }
}
"""
GUIDE_PAGES = [
    ["Time machine operator guide.", "Read every page before the first trip."],
    ["Calibration", "The flux capacitor must be calibrated to 1.21 gigawatts before each jump."],
    ["Maintenance", "Replace the plutonium chamber every twelve trips."],
]


@pytest.fixture
def tree(tmp_path) -> Path:
    """The directory of the issue's check: ignored, binary and linked-out files beside real documents."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text(f"# Secret\n\n{OUTSIDE_SECRET}\n")
    root = tmp_path / "project"
    write_files(
        root,
        {
            ".gitignore": "*.log\ngenerated/\n",
            "README.md": "# Project\n\nA demo project for the directory source.\n",
            "src/server.py": SERVER_PY,
            "cmd/main.go": MAIN_GO,
            "web/client.ts": CLIENT_TS,
            "docs/guide.pdf": make_pdf(GUIDE_PAGES, outline=[("Calibration", 1, 1), ("Maintenance", 2, 1)]),
            "docs/locked.pdf": make_pdf([["classified"]], password="pw"),
            "docs/policy.docx": make_docx(
                [
                    ("h1", "Travel policy"),
                    ("p", "Trips to 1955 need two approvals."),
                    ("h2", "Exceptions"),
                    ("p", "Emergencies need one."),
                ]
            ),
            "docs/page.html": "<html><head><title>Runbook</title></head><body><h1>Runbook</h1><h2>Restart</h2>"
            "<p>Restart the flux service with systemctl restart flux.</p></body></html>",
            "notes.txt": "Some notes.\n\nMore notes.\n",
            "debug.log": "ignored by .gitignore",
            "generated/out.md": "# Generated\n",
            "node_modules/left-pad/index.js": "module.exports = 1;\n",
            "myenv/pyvenv.cfg": "home = /usr/bin\n",
            "myenv/lib/site.py": "x = 1\n",
            "logo.png": b"\x89PNG\r\n\x1a\n\x00\x00",
            "data.xyz": "unknown format",
        },
    )
    (root / "link_out.md").symlink_to(outside / "secret.md")
    (root / "docs" / "link_in.md").symlink_to(root / "README.md")
    (root / "linkdir").symlink_to(root / "cmd")  # inside, but a directory link could loop
    return root


@pytest.fixture
def config(tree, write_config):
    return write_config([{"name": "proj", "type": "directory", "path": str(tree)}])


def test_listing_skips_ignored_binary_and_outside_files(config):
    settings = load_settings(config)
    src = open_source(settings, settings.source("proj"))
    refs = src.list_refs()
    assert [r.path for r in refs] == [
        "README.md",
        "cmd/main.go",
        "docs/guide.pdf",
        "docs/link_in.md",
        "docs/locked.pdf",
        "docs/page.html",
        "docs/policy.docx",
        "notes.txt",
        "src/server.py",
        "web/client.ts",
    ]
    assert {r.meta["format"] for r in refs} == {"markdown", "go", "pdf", "html", "docx", "text", "python", "typescript"}
    skipped = {s.path: s.reason for s in src.skipped}
    assert skipped["node_modules/"] == "ignored directory (ignore_dirs)"
    assert skipped["myenv/"] == "a virtualenv (holds pyvenv.cfg)"
    assert skipped["generated/"] == skipped["debug.log"] == "excluded by the root .gitignore"
    assert "binary file type (.png)" in skipped["logo.png"]
    assert "outside the source's root" in skipped["link_out.md"]
    assert "to a directory" in skipped["linkdir"]
    assert "no known text or document format" in skipped["data.xyz"]
    assert ".gitignore" in skipped  # a dotfile of no known format
    assert src.files_skipped == len(src.skipped)


def test_fetch_reads_inside_only_and_fails_one_file_alone(config, tree):
    settings = load_settings(config)
    src = open_source(settings, settings.source("proj"))
    out = {(i.ref.key if isinstance(i, Document) else i.key): i for i in src.fetch(src.list_refs())}
    assert isinstance(out["proj:docs/locked.pdf"], Failure) and "encrypted" in out["proj:docs/locked.pdf"].error
    docs = [d for d in out.values() if isinstance(d, Document)]
    assert len(docs) == 9 and not any(OUTSIDE_SECRET in d.content for d in docs)
    assert out["proj:docs/link_in.md"].content == (tree / "README.md").read_text()
    assert out["proj:docs/guide.pdf"].kind == "pdf" and out["proj:docs/guide.pdf"].title == "guide.pdf"


def test_scope_options_and_a_single_file(tree, write_config, tmp_path):
    cfg = write_config(
        [
            {"name": "py", "type": "directory", "path": str(tree), "extensions": ["py", "xyz"]},
            {
                "name": "docs",
                "type": "directory",
                "path": str(tree),
                "globs": ["docs/**"],
                "ignore": ["*.docx"],
                "ignore_dirs": [],
            },
            {"name": "one", "type": "directory", "path": str(tree / "data.xyz")},
            {"name": "gone", "type": "directory", "path": str(tmp_path / "nowhere")},
        ]
    )
    settings = load_settings(cfg)
    py = open_source(settings, settings.source("py"))
    # an extension listed explicitly is read as text; node_modules and the virtualenv stay out
    assert [(r.path, r.meta["format"]) for r in py.list_refs()] == [("data.xyz", "text"), ("src/server.py", "python")]
    docs = open_source(settings, settings.source("docs"))
    assert [r.path for r in docs.list_refs()] == [
        "docs/guide.pdf",
        "docs/link_in.md",
        "docs/locked.pdf",
        "docs/page.html",
    ]
    assert {s.path: s.reason for s in docs.skipped}["docs/policy.docx"] == "excluded by the source's `ignore` patterns"
    one = open_source(settings, settings.source("one"))
    assert [r.path for r in one.list_refs()] == ["data.xyz"]
    with pytest.raises(SourceError, match="does not exist"):
        open_source(settings, settings.source("gone"))


def hits_for(searcher, query, mode="hybrid"):
    """The first hits as every surface asks for them (the configured per_doc)."""
    return searcher.search(query, 5, mode)


def test_a_mixed_directory_is_ingested_searched_and_cited(config, tree, database_url, embedder):
    settings = load_settings(config)
    stats = ingest_source(IngestContext(settings, url=database_url, embedder=embedder), "proj")
    assert stats.languages == {
        "markdown": 2,
        "pdf": 2,
        "go": 1,
        "html": 1,
        "docx": 1,
        "text": 1,
        "python": 1,
        "typescript": 1,
    }
    assert stats.files_added == 9 and stats.files_failed == 1
    assert [f.key for f in stats.failures] == ["proj:docs/locked.pdf"]
    skipped = {s["path"] for s in stats.as_dict()["skipped_files"]}
    assert {"node_modules/", "logo.png", "link_out.md", "debug.log", "generated/"} <= skipped

    with Searcher(settings, url=database_url, embedder=embedder, reranker=None) as s:
        top = hits_for(s, "rotate the API keys of a tenant")[0]
        assert top.doc_key == "proj:src/server.py" and top.section == "server > TenantAdmin > rotate_api_keys"
        assert "def rotate_api_keys" in top.text
        go = hits_for(s, "health probe of the load balancer Healthz")[0]
        assert go.doc_key == "proj:cmd/main.go" and go.section.startswith("main.go > Server")
        ts = hits_for(s, "download unpaid invoices")[0]
        assert ts.section == "client.ts > BillingClient > downloadUnpaidInvoices"
        pdf = hits_for(s, "what power does the flux capacitor calibration need?")[0]
        assert (pdf.doc_key, pdf.page) == ("proj:docs/guide.pdf", 2)
        assert pdf.label() == "guide.pdf, page 2, Calibration"
        assert hits_for(s, "plutonium chamber replacement")[0].page == 3
        assert hits_for(s, "trips to 1955 approvals")[0].section == "Travel policy"
        html = hits_for(s, "restart the flux service")[0]
        assert (html.doc_key, html.section, html.title) == ("proj:docs/page.html", "Runbook > Restart", "Runbook")
        assert hits_for(s, OUTSIDE_SECRET, mode="keyword") == []
        assert all(h.page is None for h in hits_for(s, "tenant audit log path"))

    # Incremental: nothing changed → nothing read; a touched file is read but not re-embedded; an edit is.
    again = ingest_source(IngestContext(settings, url=database_url, embedder=embedder), "proj")
    assert (again.files_unchanged, again.files_added, again.chunks_embedded) == (9, 0, 0)
    server = tree / "src" / "server.py"
    os.utime(server, ns=(server.stat().st_atime_ns, server.stat().st_mtime_ns + 10**9))
    (tree / "notes.txt").write_text("Some notes.\n\nRewritten notes about deployment windows.\n")
    third = ingest_source(IngestContext(settings, url=database_url, embedder=embedder), "proj")
    assert (third.files_unchanged, third.files_updated) == (8, 1) and third.chunks_embedded == 1
    with psycopg.connect(database_url) as conn:
        pages = conn.execute(
            "SELECT c.page FROM chunks c WHERE c.doc_key = 'proj:docs/guide.pdf' ORDER BY c.ordinal"
        ).fetchall()
    assert [p for (p,) in pages] == [1, 2, 3]


def test_well_known_names_include_globs_and_extensionless_files(tmp_path, write_config):
    """README, *.Debian read as text; `include:` reads the rest; the skip says which line would; packaging
    metadata is no document."""
    root = tmp_path / "pkg"
    write_files(
        root,
        {
            "README": "Pkg\n\nWhat the package does.\n",
            "copyright": "Format: machine-readable\n",
            "README.Debian": "Debian notes.\n",
            "NEWS.old": "Old news.\n",
            "changelog.gz": b"\x1f\x8b\x08\x00",
            "Vagrantfile": "Vagrant.configure\n",
            "run.log": "started\n",
            "data.xyz": "opaque\n",
            "manual.adoc": "= Manual\n\n== Install\n\nRun it.\n",
        },
    )
    cfg = write_config(
        [
            {"name": "all", "type": "directory", "path": str(root), "include": ["Vagrantfile", "*.log"]},
            {"name": "bare", "type": "directory", "path": str(root), "extensions": [""]},
        ]
    )
    settings = load_settings(cfg)
    src = open_source(settings, settings.source("all"))
    formats = {r.path: r.meta["format"] for r in src.list_refs()}
    assert formats == {
        "NEWS.old": "text",
        "README": "text",
        "README.Debian": "text",
        "Vagrantfile": "text",
        "manual.adoc": "asciidoc",
        "run.log": "text",
    }
    skipped = {s.path: s.reason for s in src.skipped}
    assert 'include: ["*.xyz"]' in skipped["data.xyz"] and "binary file type (.gz)" in skipped["changelog.gz"]
    assert skipped["copyright"].startswith("packaging metadata") and 'include: ["copyright"]' in skipped["copyright"]
    # `extensions: [""]` is files without an extension, not silently nothing.
    assert settings.source("bare").extensions == [""]
    bare = open_source(settings, settings.source("bare"))
    assert {r.path for r in bare.list_refs()} == {"README", "Vagrantfile"}


def test_a_sites_assets_and_stubs_are_skipped_with_their_reason(tmp_path, write_config):
    """A manual's stylesheets, scripts, robots.txt are no documents; a redirect stub is said skipped when read."""
    root = tmp_path / "manual"
    write_files(
        root,
        {
            "index.html": "<html><body><h1>Manual</h1><p>Read the chapters in order.</p></body></html>",
            "old.html": '<html><head><meta http-equiv="refresh" content="0; url=index.html"></head></html>',
            "style/site.css": "body { color: red }\n",
            "js/menu.js": "function open() {}\n",
            "robots.txt": "User-agent: *\n",
        },
    )
    cfg = write_config(
        [
            {"name": "site", "type": "directory", "path": str(root)},
            {"name": "styled", "type": "directory", "path": str(root), "include": ["*.css"]},
        ]
    )
    settings = load_settings(cfg)
    src = open_source(settings, settings.source("site"))
    refs = src.list_refs()
    assert [r.path for r in refs] == ["index.html", "old.html"]
    skipped = {s.path: s.reason for s in src.skipped}
    assert skipped["style/site.css"].startswith("a stylesheet") and 'include: ["*.css"]' in skipped["style/site.css"]
    assert skipped["js/menu.js"].startswith("a script of the source's HTML pages")
    assert skipped["robots.txt"].startswith("a web crawler's file") and '["robots.txt"]' in skipped["robots.txt"]
    docs = list(src.fetch(refs))
    assert [d.ref.path for d in docs] == ["index.html", "old.html"]  # recorded: known unchanged next run
    assert {s.path: s.reason for s in src.skipped}["old.html"] == "a redirect stub (to index.html): not indexed"
    styled = open_source(settings, settings.source("styled"))
    assert "style/site.css" in {r.path for r in styled.list_refs()}


def test_identical_pages_take_one_place_in_results(tmp_path, write_config, database_url, embedder):
    """Two byte-identical pages (two file names) are both recorded; a result list shows their text once."""
    page = (
        "<html><head><title>Vacuum</title></head><body><h1>Vacuum</h1><h2>Freezing</h2>"
        "<p>Routine vacuuming freezes old row versions so that transaction ids can wrap around safely.</p>"
        "</body></html>"
    )
    other = "<html><body><h1>Backups</h1><p>Dump the cluster nightly and keep a week of dumps.</p></body></html>"
    root = tmp_path / "manual"
    write_files(root, {"vacuum.html": page, "routine-vacuuming.html": page, "backup.html": other})
    settings = load_settings(write_config([{"name": "m", "type": "directory", "path": str(root)}]))
    stats = ingest_source(IngestContext(settings, url=database_url, embedder=embedder), "m")
    assert stats.files_added == 3
    with Searcher(settings, url=database_url, embedder=embedder, reranker=None) as s:
        for mode in ("hybrid", "dense", "keyword"):
            hits = s.search("how does vacuum freeze transaction ids", 5, mode)
            assert [h.section for h in hits][:1] == ["Vacuum > Freezing"], mode
            assert sum("freezes old row versions" in h.text for h in hits) == 1, mode

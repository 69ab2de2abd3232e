"""Text from documents is data, never control (issue 48): files whose names and titles hold terminal
controls (a window-title escape ended by BEL, colour codes, a newline) are ingested by the real CLI,
then searched, asked about, reported by `gaps`, `status` and `sources`: no ESC or BEL byte reaches
stdout or stderr, and the names are shown with their controls visible (`\\x1b`). The web page and
MCP escape for their own formats (HTML, JSON): the same names come back from the API's JSON and the
MCP server intact, as data."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from pipeline.printable import printable
from tests.helpers import sealed_env

DOCFORGE = str(Path(sys.executable).parent / "docforge")
TITLE_ESC = "\x1b]0;pwned\x07title.md"  # sets the window title on most terminals
NEWLINE = "new\nline.md"
COLOURED = "\x1b[31mQuuxwidget\x1b[0m setup"
FILES = {
    TITLE_ESC: f"# {COLOURED}\n\nThe quuxwidget is configured with the frobnicate option.\n",
    NEWLINE: "# Newline notes\n\nThe quuxwidget restarts after \x1b[2J a frobnicate change.\n",
    "plain.md": "# Plain\n\nNothing hostile about the quuxwidget here.\n",
}


@pytest.mark.parametrize(
    "text, shown",
    [
        (TITLE_ESC, "\\x1b]0;pwned\\x07title.md"),
        (COLOURED, "\\x1b[31mQuuxwidget\\x1b[0m setup"),
        (NEWLINE, "new line.md"),
        ("right\u202eleft", "right\\u202eleft"),
        ("csi\x9b2J", "csi\\x9b2J"),
        ("plain text, ünïcode ✓", "plain text, ünïcode ✓"),
    ],
)
def test_printable_shows_controls_and_folds_newlines(text, shown):
    assert printable(text) == shown
    assert printable("a\nb", lines=True) == "a\nb" and printable("a\r\nb\x07", lines=True) == "a\nb\\x07"


@pytest.fixture
def site(tmp_path, database_url):
    docs = tmp_path / "docs"
    docs.mkdir()
    for name, text in FILES.items():
        (docs / name).write_text(text)
    config = tmp_path / "sources.yml"
    config.write_text(f"sources:\n  - name: kb\n    type: directory\n    path: {json.dumps(str(docs))}\n")
    return sealed_env(tmp_path, database_url, config, COLUMNS="80")


def cli(env: dict, *args: str) -> subprocess.CompletedProcess:
    res = subprocess.run([DOCFORGE, *args], capture_output=True, env=env, timeout=600)
    for stream in (res.stdout, res.stderr):
        assert b"\x1b" not in stream and b"\x07" not in stream, (args, stream.decode(errors="replace"))
    return res


def test_hostile_names_never_reach_the_terminal_as_controls(site):
    ingested = cli(site, "-v", "ingest")
    assert ingested.returncode == 0, ingested.stderr.decode()
    found = cli(site, "search", "quuxwidget frobnicate", "-n", "5")
    out = found.stdout.decode()
    assert found.returncode == 0 and "\\x1b]0;pwned\\x07title.md" in out and "\\x1b[31mQuuxwidget" in out
    assert all(line.count("new") <= 1 or "line.md" in line for line in out.splitlines())
    assert "new line.md" in out  # one citation line, not two
    as_json = cli(site, "search", "quuxwidget frobnicate", "-n", "5", "--json")
    keys = {h["doc_key"] for h in json.loads(as_json.stdout)}  # JSON escapes them: data, intact
    assert {"kb:" + TITLE_ESC, "kb:" + NEWLINE} <= keys
    asked = cli(site, "ask", "How is the quuxwidget configured?")
    assert asked.returncode == 0, asked.stderr.decode()
    for args in (("gaps",), ("status",), ("sources",), ("search", "\x1b[2Jquuxwidget")):
        res = cli(site, *args)
        assert res.returncode == 0, (args, res.stderr.decode())


def test_the_api_page_and_mcp_return_hostile_names_as_escaped_data(site, database_url, embedder, tmp_path):
    """JSON escapes every control (`\\u001b`): the API's and MCP's replies hold no ESC or BEL byte, and
    decode to the document's real name; the page writes text through textContent, never as HTML."""
    from pydantic import SecretStr

    from docforge.servers import LocalSearch
    from docforge.servers.api import create_app
    from docforge.servers.auth import AuthConfig, Authenticator
    from docforge.servers.web import LocalStore
    from pipeline.config import load_settings
    from pipeline.ingest import IngestContext, ingest_source
    from pipeline.query import Searcher
    from tests.helpers import ServerThread
    from tests.test_mcp import RawSession

    settings = load_settings(site["DOCFORGE_CONFIG"])
    ingest_source(IngestContext(settings, url=database_url, embedder=embedder), "kb")
    wanted = {"kb:" + TITLE_ESC, "kb:" + NEWLINE}
    token = "hostile-names-token"
    with Searcher(settings, url=database_url, embedder=embedder, reranker=None) as searcher:
        auth = Authenticator(AuthConfig(api_tokens=SecretStr(token)))
        app = create_app(LocalSearch(searcher), auth, store=LocalStore(searcher))
        with ServerThread(app) as srv:
            headers = {"Authorization": f"Bearer {token}"}
            body = {"query": "quuxwidget frobnicate", "user_name": "t", "team_name": "t"}
            res = httpx.post(f"{srv.url}/search", json=body, headers=headers, timeout=120)
            assert res.status_code == 200 and b"\x1b" not in res.content and b"\x07" not in res.content
            hits = res.json()["hits"]
            assert wanted <= {h["doc_key"] for h in hits}
            assert any(h["title"].startswith(COLOURED) for h in hits)
    page = (Path(__file__).parents[1] / "docforge/servers/web/app.js").read_text()
    assert "innerHTML" not in page.split("\n", 3)[3] and "insertAdjacentHTML" not in page

    with open(tmp_path / "mcp.log", "wb") as errlog:
        s = RawSession({k: v for k, v in site.items() if k != "COLUMNS"}, errlog)
        try:
            hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
            s.call(1, "initialize", hello)
            s.send(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}')
            args = {"query": "quuxwidget frobnicate", "user_name": "t", "team_name": "t"}
            s.send(json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                               "params": {"name": "search_documentation", "arguments": args}}).encode())  # fmt: skip
            line = s.proc.stdout.readline()
            assert b"\x1b" not in line and b"\x07" not in line
            found = json.loads(line)["result"]["structuredContent"]["hits"]
            assert wanted <= {h["doc_key"] for h in found}
        finally:
            s.close()

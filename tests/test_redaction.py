"""Secrets never leave in a message: `pipeline.redact` masks every encoding of a registered secret before a
message is cut short, and a Confluence server that quotes the credentials back (beyond the first 150
characters of its error) gets them into no output, log, failures row or Dagster run storage."""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path
from urllib.parse import quote, quote_plus

import psycopg
import pytest

from pipeline.redact import MASK, forms, redact, register, register_basic
from tests.confluence_double import ConfluenceDouble
from tests.test_ingest_cli import docforge

EMAIL, SECRET = "bot@example.com", "s3cr3t/t0ken+with=odd&chars?"  # '/', '+', '=' change every encoding


def every_form(user: str, secret: str) -> set[str]:
    """What a careless server could echo: the secret and `user:secret`, raw, URL-encoded, base64."""
    pair = f"{user}:{secret}"
    return {
        secret,
        quote(secret, safe=""),
        quote_plus(secret),
        quote(secret, safe="").lower(),
        pair,
        base64.b64encode(pair.encode()).decode(),
        base64.b64encode(secret.encode()).decode(),
        base64.b64encode(pair.encode()).decode().replace("/", "\\/"),
    }


def leaks(text: str, user: str = EMAIL, secret: str = SECRET) -> list[str]:
    """The forms of the secret in `text`, and any 12-character piece of one (a secret cut in two; the
    plain `user:secret` pair is left out of the pieces, as the user name alone is no secret)."""
    whole = every_form(user, secret)
    pieces = {f[i : i + 12] for f in whole - {f"{user}:{secret}"} for i in range(len(f) - 11)}
    return [f for f in whole | pieces if f in text]


def test_every_encoding_is_masked_before_the_cut():
    register_basic(EMAIL, SECRET)
    for form in every_form(EMAIL, SECRET):
        for offset in range(140, 215, 3):  # the secret straddles the cut at 200, or sits just past it
            text = "x" * offset + form + " and the rest of a long error message"
            out = redact(text, 200)
            assert len(out) <= 200 and not leaks(out), (form, offset, out)
            if offset + len(MASK) < 200:
                assert MASK in out, (form, offset, out)


def test_header_and_url_credentials_are_masked_whatever_the_secret():
    out = redact('{"authorization": "Bearer never-registered-token-123"} postgresql://app:pa55@db:5432/docs')
    assert "never-registered-token-123" not in out and "pa55" not in out
    assert out.count(MASK) == 2 and "postgresql://app:***@db:5432/docs" in out


def test_short_and_empty_secrets_do_not_blank_ordinary_text():
    register(None, "", "abc")
    assert redact("abc def") == "abc def" and forms("abc") == set()


@pytest.fixture
def echoing_space(monkeypatch, write_config, database_url, tmp_path):
    """A space whose page 2 answers 400 quoting the request's Authorization header back; page 1 is fine."""
    for var in ("CONFLUENCE_BEARER_TOKEN", "CONFLUENCE_PAT"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("CONFLUENCE_EMAIL", EMAIL)
    monkeypatch.setenv("CONFLUENCE_API_TOKEN", SECRET)
    dagster_home = tmp_path / "dagster"
    dagster_home.mkdir()
    monkeypatch.setenv("DAGSTER_HOME", str(dagster_home))  # runs and their events kept, to be read back
    with ConfluenceDouble(email=EMAIL, token=SECRET) as double:
        double.add_page("101", "Fine", "<p>The lighthouse keeper logs every ship.</p>")
        double.add_page("102", "Echo", "<p>never served</p>", fail="echo-auth")
        cfg = write_config([{"name": "wiki", "type": "confluence", "base_url": double.base_url, "space": "DOCS"}])
        yield cfg, dagster_home, database_url


@pytest.mark.slow  # ~50 s: a `docforge ingest` through Dagster
def test_credentials_quoted_back_reach_no_output_or_store(echoing_space):
    cfg, dagster_home, url = echoing_space
    res = docforge("-vv", "ingest", "--config", str(cfg), "--json", check=False)
    assert res.returncode == 1, res.stderr  # one page failed: a partial failure
    assert not leaks(res.stdout) and not leaks(res.stderr)
    report = json.loads(res.stdout)["sources"]["wiki"]
    (failure,) = report["failures"]
    assert failure["key"] == "wiki:102" and "400" in failure["error"] and MASK in failure["error"]
    with psycopg.connect(url) as conn:
        rows = conn.execute("SELECT doc_key, error FROM failures").fetchall()
        indexed = [k for (k,) in conn.execute("SELECT key FROM documents")]
    assert [k for k, _ in rows] == ["wiki:102"] and not leaks(" ".join(e for _, e in rows))
    assert indexed == ["wiki:101"]
    stored = list(_files(dagster_home))
    assert stored, "the run left its storage behind"
    for path in stored:
        assert not leaks(path.read_bytes().decode("utf-8", "replace")), path


def _files(root: Path):
    for dirpath, _, names in os.walk(root):
        for name in names:
            yield Path(dirpath) / name

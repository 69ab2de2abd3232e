"""Secrets never stored (issue 48): configured tokens pasted into a question, asked and searched through a
real `docforge serve --api` on 127.0.0.1 over a real store, are absent from the API's log, from every row
of the store (usage records, the answer cache and its provenance) and from `docforge gaps`; the question
around them is kept."""

from __future__ import annotations

import hashlib

import httpx
import psycopg
import yaml

from pipeline.config import load_settings
from pipeline.ingest import IngestContext, ingest_source
from pipeline.redact import redact, register_digest
from tests.helpers import docforge_api, sealed_env, write_files
from tests.test_hostile_names import cli

ADMIN = "adm1n-Secret-Token-7781"  # DOCFORGE_API_TOKENS
ANN = "ann-file-Token-55aa21"  # known to the server only by its SHA-256 (the tokens file)
LLM_KEY = "sk-llm-Key-0099887766"  # DOCFORGE_LLM_API_KEY: configured, never sent here
SECRETS = (ADMIN, ANN, LLM_KEY)


def test_a_digest_known_token_is_masked_in_any_text():
    token = "Zq7-digest-only-token"
    register_digest(hashlib.sha256(token.encode()).hexdigest())
    assert redact(f"is {token} valid? q=my+{token}&x=1 '{token}'.") == "is *** valid? q=my+***&x=1 '***'."
    assert redact("an ordinary question about tokens") == "an ordinary question about tokens"


def test_a_token_pasted_into_a_question_is_absent_from_log_store_and_gaps(tmp_path, database_url, embedder):
    write_files(tmp_path / "docs", {"vpn.md": "# VPN\n\nConnect to the VPN with the WireGuard client.\n"})
    config = tmp_path / "sources.yml"
    config.write_text(yaml.safe_dump({"sources": [{"name": "kb", "type": "directory", "path": "docs"}]}))
    (tmp_path / "tokens.yml").write_text(
        yaml.safe_dump([{"name": "ann@x.com", "sha256": hashlib.sha256(ANN.encode()).hexdigest(), "groups": ["eng"]}])
    )
    ingest_source(IngestContext(load_settings(config), url=database_url, embedder=embedder), "kb")
    env = sealed_env(
        tmp_path,
        database_url,
        config,
        DOCFORGE_API_TOKENS=ADMIN,
        DOCFORGE_API_TOKENS_FILE=str(tmp_path / "tokens.yml"),
        DOCFORGE_LLM_API_KEY=LLM_KEY,
    )
    log = tmp_path / "api.log"
    with docforge_api([], env, log) as base:
        for token in (ADMIN, ANN):
            auth = {"Authorization": f"Bearer {token}"}
            for secret in SECRETS:
                question = f"why does the vpn reject my token {secret} when I connect?"
                r = httpx.post(f"{base}/ask", json={"question": question}, headers=auth, timeout=300)
                assert r.status_code == 200, r.text
                assert secret not in r.text
                r = httpx.post(f"{base}/search", json={"query": f"vpn {secret}"}, headers=auth, timeout=300)
                assert r.status_code == 200, r.text
    text = log.read_text(errors="replace")
    assert "why does the vpn reject my token" in text  # the question is logged: its secret is not
    with psycopg.connect(database_url) as conn:
        assert conn.execute("SELECT count(*) FROM usage_events WHERE question LIKE '%vpn%'").fetchone()[0] >= 6
        tables = [t for (t,) in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")]
        stored = {
            t: conn.execute(f'SELECT string_agg(x::text, chr(10)) FROM "{t}" x').fetchone()[0] or "" for t in tables
        }
    gaps = cli(env, "gaps", "--json").stdout.decode() + cli(env, "gaps").stdout.decode()
    for secret in SECRETS:
        assert secret not in text, "in the API log"
        assert not [t for t, rows in stored.items() if secret in rows], "in the store"
        assert secret not in gaps, "in docforge gaps"

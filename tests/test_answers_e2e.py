"""`docforge ask` end to end: real Postgres, the real model, a real git repo, and a scripted
OpenAI-compatible server on 127.0.0.1 (tests/llm_double.py) so the real HTTP client runs."""

from __future__ import annotations

import asyncio
import json
import logging

import httpx
import psycopg
import pytest
from click.testing import CliRunner
from pydantic import SecretStr

from docforge.cli import main
from pipeline.answers import Answerer
from pipeline.answers.llm import ChatClient
from pipeline.config import AuthConfig, LLMConfig, load_settings
from pipeline.errors import LLMError
from pipeline.ingest import IngestContext, ingest_source
from pipeline.query import Searcher
from tests.helpers import git
from tests.llm_double import LLMDouble

KEY = "sk-test-DO-NOT-LEAK-4f9a2c"
DOCS = {
    "docs/deploy.md": (
        "# Deploying\n\nReleases go out with blue-green deployments through ArgoCD. The canary runs "
        "for 30 minutes before promotion.\n\n## Rollbacks\n\nRollbacks were introduced in March 2021. "
        "Switch traffic back to the blue stack to roll back.\n"
    ),
    "docs/credentials.md": (
        "# Credentials\n\nThe Postgres password of each service is rotated every 90 days. Secrets live in Vault.\n"
    ),
    "docs/oncall.md": (
        "# On-call\n\nThe on-call engineer does not deploy on Fridays. Three people share the rotation.\n"
    ),
}


class KB:
    def __init__(self, repo, config, url, embedder):
        self.repo, self.config, self.url, self.embedder = repo, config, url, embedder
        self.settings = load_settings(config)

    def ingest(self):
        stats = ingest_source(IngestContext(self.settings, url=self.url, embedder=self.embedder), "handbook")
        assert stats.files_failed == 0
        return stats

    def answerer(self, llm: LLMDouble | None = None, **cfg) -> Answerer:
        searcher = Searcher(self.settings, url=self.url, embedder=self.embedder, reranker=None)
        client = None
        if llm is not None:
            client = ChatClient(
                LLMConfig(base_url=llm.base_url, model="scripted", api_key=SecretStr(KEY), max_backoff_s=0.05, **cfg)
            )
        return Answerer(self.settings, searcher=searcher, url=self.url, llm=client)


@pytest.fixture
def kb(database_url, embedder, make_repo, write_config):
    repo = make_repo(DOCS, name="handbook")
    config = write_config([{"name": "handbook", "type": "git", "repo": str(repo), "globs": ["docs/*.md"]}])
    k = KB(repo, config, database_url, embedder)
    k.ingest()
    return k


@pytest.fixture
def llm():
    with LLMDouble() as d:
        yield d


def block_with(blocks, needle: str) -> str:
    return next(b.pointer for b in blocks if needle in b.text)


def test_audit_modes_and_per_claim_verdicts_of_a_scripted_model(kb, llm):
    def answer(blocks):
        p = block_with(blocks, "blue-green")
        return "\n".join(
            [
                f"Releases go out with blue-green deployments through ArgoCD. [{p}]",  # verbatim
                f"Blue-green deployments are how releases go out [{p}]",  # paraphrase
                f"Releases go out with canary deployments through Spinnaker. [{p}]",  # fabricated
                "The canary runs for 30 minutes. [E99]",  # pointer to no evidence
                "Deploys happen every day",  # no pointer
                f"Rollbacks were introduced in April 2021. [{p}]",  # wrong date
            ]
        )

    llm.answer = answer
    with kb.answerer(llm) as a:
        res = a.ask("How do releases go out?")
    assert res.model == "scripted" and res.cache == "miss" and not res.abstained
    verdicts = [(c["verified"], c["strategy"]) for c in res.claims]
    assert verdicts == [
        (True, "span"),
        (True, "reworded"),
        (False, None),
        (False, None),
        (False, None),
        (False, None),
    ]
    assert res.audit_mode == "UNGROUNDED"
    assert "pointer E99 names no evidence block" in res.claims[3]["violations"]
    assert "no pointer" in res.claims[4]["violations"][0]
    assert "date April 2021 is not in the cited evidence" in res.claims[5]["violations"]
    assert res.answer.startswith("UNGROUNDED") and "✗ (not supported: " in res.answer  # never shown as fact
    assert [c.title for c in res.citations] == ["Deploying"] and res.sources[0].endswith("docs/deploy.md")
    assert res.input_tokens == 300 and res.output_tokens == 60  # classify + reason + respond, from `usage`

    llm.answer = lambda b: "\n".join(answer(b).splitlines()[:2])
    with kb.answerer(llm) as a:
        assert a.ask("How do releases go out, in short?").audit_mode == "HYBRID"
    llm.answer = lambda b: answer(b).splitlines()[0]
    with kb.answerer(llm) as a:
        assert a.ask("How do releases go out, briefly?").audit_mode == "STRICT"


def test_retries_429_and_5xx_then_answers(kb, llm):
    llm.failures = [429, 502, 503]
    with kb.answerer(llm, max_retries=4) as a:
        res = a.ask("How often is the Postgres password rotated?")
    assert res.audit_mode == "STRICT"
    assert len(llm.requests) == 3 + 3  # three refused, then classify, reason, respond


def test_garbage_and_a_dead_server_are_clear_errors_naming_the_url_not_the_key(kb, llm):
    llm.failures = ["garbage"]
    with kb.answerer(llm) as a, pytest.raises(LLMError) as err:
        a.ask("How often is the Postgres password rotated?")
    assert llm.base_url in str(err.value) and "not a chat completion" in str(err.value) and KEY not in str(err.value)

    dead = ChatClient(
        LLMConfig(
            base_url="http://127.0.0.1:9/v1",
            model="m",
            api_key=SecretStr(KEY),
            max_retries=1,
            max_backoff_s=0.01,
            timeout_s=2,
        )
    )
    with pytest.raises(LLMError) as err:
        dead.chat([{"role": "user", "content": "hi"}])
    assert "127.0.0.1:9" in str(err.value) and "unreachable" in str(err.value) and KEY not in str(err.value)

    llm.failures = [400]
    with kb.answerer(llm, max_retries=3) as a, pytest.raises(LLMError, match="HTTP 400"):
        a.ask("Who shares the rotation?")
    assert len(llm.requests) == 2  # a 400 is not retried


def test_cache_hit_survives_a_noop_ingest_and_misses_after_the_cited_document_changes(kb, llm):
    q = "How often is the Postgres password rotated?"
    with kb.answerer(llm) as a:
        first = a.ask(q)
        n = len(llm.requests)
        again = a.ask(q)
        assert (first.cache, again.cache) == ("miss", "hit") and len(llm.requests) == n  # no LLM request
        assert again.answer == first.answer and again.answer_id == first.answer_id and again.input_tokens == 0

        noop = kb.ingest()
        assert noop.files_added == noop.files_updated == noop.files_deleted == 0
        assert a.ask(q).cache == "hit" and len(llm.requests) == n

        unrelated_edit_elsewhere = a.ask(q, use_cache=False)  # --no-cache: answered afresh, recorded
        assert unrelated_edit_elsewhere.cache == "miss" and len(llm.requests) == n + 3

        (kb.repo / "docs/credentials.md").write_text(DOCS["docs/credentials.md"].replace("90 days", "60 days"))
        git(kb.repo, "commit", "-qam", "rotate more often")
        kb.ingest()
        changed = a.ask(q)
        assert changed.cache == "miss" and len(llm.requests) == n + 6


def test_answers_verify_passes_then_fails_after_an_edit(kb, llm):
    with kb.answerer(llm) as a:
        res = a.ask("Who shares the on-call rotation?")
    runner = CliRunner()
    ok = runner.invoke(main, ["answers", "verify", res.answer_id, "-c", str(kb.config)])
    assert ok.exit_code == 0, ok.output
    shown = runner.invoke(main, ["answers", "show", res.answer_id, "-c", str(kb.config)])
    assert shown.exit_code == 0 and res.dag_root in shown.output and "raw_answer" in shown.output

    with psycopg.connect(kb.url, autocommit=True) as conn:
        conn.execute(
            "UPDATE answers SET answer = jsonb_set(answer, '{answer}', '\"✓ Everyone is on call.\"') WHERE id = %s",
            (res.answer_id,),
        )
    bad = runner.invoke(main, ["answers", "verify", res.answer_id, "-c", str(kb.config)])
    assert bad.exit_code == 1 and "stage 'rendered'" in bad.output

    with psycopg.connect(kb.url, autocommit=True) as conn:  # an edit deeper in the chain is named there
        conn.execute(
            "UPDATE answers SET stages = jsonb_set(stages, '{4,payload}', '\"Everyone. [E1]\"') WHERE id = %s",
            (res.answer_id,),
        )
    bad = runner.invoke(main, ["answers", "verify", res.answer_id, "-c", str(kb.config)])
    assert bad.exit_code == 1 and "stage 'raw_answer'" in bad.output

    purge = runner.invoke(main, ["answers", "purge", "-c", str(kb.config)])
    assert purge.exit_code == 0 and "purged 1 answer(s)" in purge.output


def test_answers_verify_fails_when_the_cited_chunk_changed(kb, llm):
    with kb.answerer(llm) as a:
        res = a.ask("Who shares the on-call rotation?")
    (kb.repo / "docs/oncall.md").write_text(DOCS["docs/oncall.md"].replace("Three", "Four"))
    git(kb.repo, "commit", "-qam", "bigger rotation")
    kb.ingest()
    bad = CliRunner().invoke(main, ["answers", "verify", res.answer_id, "-c", str(kb.config)])
    assert bad.exit_code == 1 and "stage 'evidence'" in bad.output


def test_the_key_never_appears_in_output_logs_or_the_store(kb, llm, monkeypatch, caplog):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("DOCFORGE_LLM_BASE_URL", llm.base_url)
    monkeypatch.setenv("DOCFORGE_LLM_MODEL", "scripted")
    monkeypatch.setenv("DOCFORGE_LLM_MAX_BACKOFF_S", "0.05")
    llm.failures = [503]  # a retry, so the client logs
    caplog.set_level(logging.DEBUG)
    runner = CliRunner()
    res = runner.invoke(main, ["-vv", "ask", "How do releases go out?", "-c", str(kb.config), "--json", "--trace"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["model"] == "scripted" and out["trace"] and out["cache"] == "miss"
    text = runner.invoke(main, ["ask", "How do releases go out?", "-c", str(kb.config)])
    assert text.exit_code == 0 and "cache hit" in text.output
    llm.failures = ["garbage"]
    err = runner.invoke(main, ["ask", "Something else entirely?", "-c", str(kb.config)])
    assert err.exit_code == 1 and llm.base_url in err.output
    with psycopg.connect(kb.url) as conn:
        stored = conn.execute("SELECT string_agg(answer::text || stages::text, '') FROM answers").fetchone()[0]
    for where in (res.output, res.stderr, text.output, err.output, caplog.text, stored):
        assert KEY not in where
    assert llm.requests[-1]["authorization"] == f"Bearer {KEY}"  # it was sent, to the server only


def test_extractive_answer_without_an_llm(kb):
    with kb.answerer(None) as a:
        res = a.ask("How long does the canary run before promotion?", trace=True)
        none = a.ask("What is the airspeed velocity of an unladen swallow?")
    assert res.model == "extractive" and res.audit_mode == "STRICT" and not res.abstained
    texts = [c["text"] for c in res.claims]  # labelled: the answer first; unsure: among the candidates' passages
    assert "The canary runs for 30 minutes before promotion." in (texts[:1] if res.addresses_question else texts)
    assert res.citations[0].title == "Deploying" and 0 < res.confidence < 1  # fitted (params), not capped by hand
    assert [s["step"] for s in res.trace] == ["cache", "retrieve", "respond", "verify"]
    assert none.abstained and none.claims == [] and none.answer == "Not found in the indexed documentation."
    assert none.addresses_reason and none.addresses_question is None  # why it abstained, said plainly


def test_a_name_the_documentation_never_mentions_abstains_naming_it(kb):
    """The canary is documented, Spinnaker is not: the reply says so rather than quoting the canary line."""
    with kb.answerer(None) as a:
        res = a.ask("How long does the canary run before promotion in Spinnaker?")
        known = a.ask("How long does the canary run before promotion in ArgoCD?")
    assert res.abstained and res.claims == [] and "Spinnaker" in res.addresses_reason
    assert not known.abstained  # a name the index holds is no reason to abstain


def test_refines_until_max_iterations_then_answers_with_capped_confidence(kb, llm):
    llm.decisions = ["INSUFFICIENT: canary duration", '- INSUFFICIENT: "vault secrets"', "INSUFFICIENT: more"]
    with kb.answerer(llm) as a:
        res = a.ask("How do releases go out?", trace=True, max_iterations=3)
    assert res.iterations == 3 and res.confidence <= 0.3
    steps = [(s["step"], s.get("query") or s.get("decision")) for s in res.trace if s["step"] in ("retrieve", "reason")]
    assert steps == [
        ("retrieve", "How do releases go out?"),
        ("reason", "INSUFFICIENT"),
        ("retrieve", "canary duration"),
        ("reason", "INSUFFICIENT"),
        ("retrieve", "vault secrets"),
        ("reason", "INSUFFICIENT"),
    ]
    pointers = [c.pointer for c in res.citations]
    assert len(set(pointers)) == len(pointers)  # evidence deduplicated across iterations


def test_a_model_that_declines_gives_an_explicit_abstention(kb, llm):
    llm.answer = lambda blocks: "NOT_FOUND"
    with kb.answerer(llm) as a:
        res = a.ask("What is the airspeed velocity of an unladen swallow?")
    assert res.abstained and res.claims == [] and res.citations == []
    assert res.answer == "Not found in the indexed documentation." and res.confidence == 0.0
    assert res.addresses_reason == "the model found no answer in the evidence"


def test_http_ask_is_behind_the_same_auth_as_search(kb, llm):
    from docforge.servers import LocalSearch
    from docforge.servers.api import create_app
    from docforge.servers.ask import LocalAsk
    from docforge.servers.auth import Authenticator
    from tests.helpers import ServerThread

    with kb.answerer(llm) as a:
        app = create_app(
            LocalSearch(a.searcher), Authenticator(AuthConfig(api_tokens=SecretStr("tok"))), ask=LocalAsk(a)
        )
        with ServerThread(app) as srv:
            body = {"question": "How often is the Postgres password rotated?", "user_name": "ada"}
            assert httpx.post(f"{srv.url}/ask", json=body).status_code == 401
            r = httpx.post(f"{srv.url}/ask", json=body, headers={"Authorization": "Bearer tok"}, timeout=60)
            assert r.status_code == 200, r.text
            out = r.json()
            assert out["audit_mode"] == "STRICT" and out["citations"][0]["title"] == "Credentials"
            for k in (
                "answer",
                "claims",
                "citations",
                "sources",
                "confidence",
                "intent",
                "iterations",
                "model",
                "input_tokens",
                "output_tokens",
                "latency_ms",
                "cache",
                "answer_id",
                "dag_root",
            ):
                assert k in out
            bad = httpx.post(f"{srv.url}/ask", json={"question": ""}, headers={"Authorization": "Bearer tok"})
            assert bad.status_code == 422


def test_python_api_ask_aask_and_run_batch(kb, monkeypatch):
    import docforge
    from docforge import api

    monkeypatch.setenv("DOCFORGE_CONFIG", str(kb.config))
    try:
        one = docforge.ask("How often is the Postgres password rotated?")
        assert one.model == "extractive" and one.audit_mode == "STRICT"
        two = asyncio.run(docforge.aask("How often is the Postgres password rotated?"))
        assert two.cache == "hit" and two.answer_id == one.answer_id
        batch = docforge.run_batch(["Who shares the rotation?", "", "How do releases go out?"], concurrency=2)
        assert batch[0].audit_mode == "STRICT" and batch[2].audit_mode == "STRICT"
        assert "empty" in str(batch[1])  # a bad question fails alone
    finally:
        api.close()


def test_mcp_ask_documentation_over_stdio(corpus, tmp_path):
    import sys
    from pathlib import Path

    import anyio
    from mcp import ClientSession, StdioServerParameters, stdio_client

    from tests.helpers import docforge_env

    env = docforge_env(DATABASE_URL=corpus.url, DOCFORGE_CONFIG=str(corpus.config), DOCFORGE_HOME=str(tmp_path))
    params = StdioServerParameters(command=str(Path(sys.executable).parent / "docforge"), args=["serve"], env=env)

    async def session():
        with open(tmp_path / "stderr.log", "w") as errlog:
            async with stdio_client(params, errlog=errlog) as (r, w), ClientSession(r, w) as s:
                await s.initialize()
                tools = {t.name: t for t in (await s.list_tools()).tools}
                res = await s.call_tool(
                    "ask_documentation",
                    {
                        "question": "How do I give a customer their money back?",
                        "user_name": "ada",
                        "team_name": "payments",
                        "filters": {"source": "payments"},
                    },
                )
                bad = await s.call_tool("ask_documentation", {"question": "", "user_name": "a", "team_name": "b"})
                return tools, res, bad

    tools, res, bad = anyio.run(session)
    assert set(tools["ask_documentation"].input_schema["required"]) == {"question", "user_name", "team_name"}
    assert not res.is_error, res.content
    out = res.structured_content
    assert out["audit_mode"] == "STRICT" and out["model"] == "extractive"
    assert out["citations"][0]["title"] == "Issuing refunds" and "refund" in out["answer"]
    assert bad.is_error
    assert "ask by user='ada'" in (tmp_path / "stderr.log").read_text()


def test_tune_refits_the_parameters_on_a_teams_own_questions(kb, tmp_path):
    rows = [
        ("How long does the canary run before promotion?", ["30 minutes"]),
        ("How do releases go out?", ["blue-green"]),
        ("How often is the Postgres password rotated?", ["90 days"]),
        ("Where do secrets live?", ["Vault"]),
        ("When were rollbacks introduced?", ["March 2021"]),
        ("How do I roll back a release?", ["Switch traffic back"]),
        ("How many people share the on-call rotation?", ["Three people"]),
        ("Does the on-call engineer deploy on Fridays?", ["does not deploy on Fridays"]),
        ("How do I configure a Kafka consumer group?", None),
        ("What is the airspeed velocity of an unladen swallow?", None),
    ]
    questions = tmp_path / "questions.jsonl"
    questions.write_text("".join(json.dumps({"question": q, "phrases": p}) + "\n" for q, p in rows))
    out = tmp_path / "params.json"
    res = CliRunner().invoke(main, ["tune", str(questions), "-c", str(kb.config), "-o", str(out)])
    assert res.exit_code == 0, res.output
    assert f"wrote {out}" in res.output and "answers: {params:" in res.output
    fitted = json.loads(out.read_text())["fitted"]
    assert fitted["questions"] == 10 and fitted["answerable"] == 8 and fitted["positive_lines"] >= 8
    from pipeline.answers import params

    answers = kb.settings.answers.model_copy(update={"params": out})
    settings = kb.settings.model_copy(update={"answers": answers})
    searcher = Searcher(settings, url=kb.url, embedder=kb.embedder, reranker=None)
    with Answerer(settings, searcher=searcher, url=kb.url, llm=None) as a:
        assert a.params().digest == params.load("any", out).digest  # the team's own file is read
        assert a.ask("How often is the Postgres password rotated?", use_cache=False).model == "extractive"
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"question": "How?", "phrases": "x"}\n')
    res = CliRunner().invoke(main, ["tune", str(bad), "-c", str(kb.config)])
    assert res.exit_code == 1 and "'phrases' must be a list of strings or null" in res.output

"""Provenance that verifies, on real Postgres over a real ingest of made-up files: `docforge ask --json`
then `docforge answers verify` passes for fresh answers whose evidence blocks join several chunks; a
changed chunk, evidence block or verdict fails, naming its stage (also when the tamperer re-chains the
hashes); and an answer whose evidence changed under it is not served from the cache (issue 48)."""

from __future__ import annotations

import json
import re

import psycopg
import pytest
from click.testing import CliRunner
from psycopg.types.json import Jsonb

from docforge.cli import main
from pipeline.answers import Answerer, provenance
from pipeline.config import load_settings
from pipeline.ingest import IngestContext, ingest_source
from pipeline.query import Searcher

# Small chunks (max_tokens below), so a hybrid passage joins neighbouring chunks of one document.
BACKUPS = "# Backups\n\n" + "\n\n".join(
    f"The nightly backup job copies volume {i} to the archive bucket and checks its checksum before "
    f"the retention window of {10 + i} days removes the copy of volume {i}."
    for i in range(12)
)
QUESTIONS = ("How does the nightly backup job check volume 3?", "What removes the copy of volume 7?")


@pytest.fixture
def store(database_url, embedder, make_repo, write_config):
    repo = make_repo({"docs/backups.md": BACKUPS + "\n", "docs/lunch.md": "# Lunch\n\nLunch is at noon.\n"}, "ops")
    config = write_config(
        [{"name": "ops", "type": "git", "repo": str(repo), "globs": ["docs/*.md"]}], chunking={"max_tokens": 48}
    )
    stats = ingest_source(IngestContext(load_settings(config), url=database_url, embedder=embedder), "ops")
    assert stats.files_failed == 0
    return config, database_url, embedder


def ask(config, question: str) -> dict:
    res = CliRunner().invoke(main, ["ask", question, "-c", str(config), "--json", "--no-cache"])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def verify(config, answer_id: str):
    return CliRunner().invoke(main, ["answers", "verify", answer_id, "-c", str(config)])


def stored(url: str, answer_id: str) -> tuple[dict, list[dict]]:
    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT answer, stages FROM answers WHERE id = %s", (answer_id,)).fetchone()
    assert row is not None
    return row[0], row[1]


def evidence_of(stages: list[dict]) -> list[dict]:
    return next(s["payload"] for s in stages if s["stage"] == "evidence")


def rechain(url: str, answer_id: str, answer: dict, stages: list[dict]) -> None:
    """What a tamperer who knows the scheme writes: every hash recomputed over the edited payloads."""
    chained, root = provenance.chain({s["stage"]: s["payload"] for s in stages})
    answer = {**answer, "dag_root": root}
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "UPDATE answers SET stages = %s, answer = %s, dag_root = %s WHERE id = %s",
            (Jsonb(chained), Jsonb(answer), root, answer_id),
        )


def spanning(url: str, answer_ids: list[str]) -> tuple[str, dict]:
    """An answer and an evidence block of it that joins several chunks."""
    for answer_id in answer_ids:
        for block in evidence_of(stored(url, answer_id)[1]):
            if len(block["chunk_ids"]) > 1:
                return answer_id, block
    raise AssertionError("no evidence block joins several chunks: the fixture no longer tests what it says")


def test_fresh_answers_verify_whatever_their_evidence_spans(store):
    config, url, _ = store
    answers = [ask(config, q) for q in QUESTIONS]
    ids = [a["answer_id"] for a in answers]
    for answer_id in ids:
        res = verify(config, answer_id)
        assert res.exit_code == 0, res.output
        assert f"answer {answer_id}: all 9 stages match" in res.output
    answer_id, block = spanning(url, ids)  # the case that always failed before: a block of several chunks
    shown = CliRunner().invoke(main, ["answers", "show", answer_id, "-c", str(config)], env={"COLUMNS": "80"})
    more = f"{block['pointer']}→{block['chunk_id'][:10]}+{len(block['chunk_ids']) - 1}"
    assert shown.exit_code == 0 and more in shown.output  # the block and how many chunks it joins beyond its own
    assert re.search(r"verification +\S+ +\w+, ✓\d+ ≈\d+ ✗\d+", shown.output), shown.output
    # Its citation names every chunk it joins (the page shows them all as its evidence).
    cited = {c["pointer"]: c["chunk_ids"] for a in answers if a["answer_id"] == answer_id for c in a["citations"]}
    assert cited.get(block["pointer"], block["chunk_ids"]) == block["chunk_ids"]


def test_a_changed_or_deleted_chunk_of_a_joined_block_fails_at_evidence(store):
    config, url, _ = store
    answer_id, block = spanning(url, [ask(config, q)["answer_id"] for q in QUESTIONS])
    last = block["chunk_ids"][-1]  # not the block's lead chunk: the one the old check never read
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("UPDATE chunks SET text = replace(text, 'archive', 'attic') WHERE id = %s", (last,))
    res = verify(config, answer_id)
    assert res.exit_code == 1
    assert f"stage 'evidence' does not match: {block['pointer']}: chunk {last[:12]}… has changed since" in res.output
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("DELETE FROM chunks WHERE id = %s", (last,))
    res = verify(config, answer_id)
    assert res.exit_code == 1 and "is no longer in the index" in res.output


def test_an_edited_block_or_verdict_fails_at_its_stage_even_rechained(store):
    config, url, _ = store
    answer_id = ask(config, QUESTIONS[0])["answer_id"]
    answer, stages = stored(url, answer_id)

    edited = json.loads(json.dumps(stages))
    evidence_of(edited)[0]["text"] = evidence_of(edited)[0]["text"].replace("nightly", "weekly")
    with psycopg.connect(url, autocommit=True) as conn:  # the stored chain no longer holds
        conn.execute("UPDATE answers SET stages = %s WHERE id = %s", (Jsonb(edited), answer_id))
    res = verify(config, answer_id)
    assert res.exit_code == 1 and "stage 'evidence' does not match: its stored payload no longer hashes" in res.output
    rechain(url, answer_id, answer, edited)  # re-chained: the block's text still betrays it
    res = verify(config, answer_id)
    assert res.exit_code == 1 and "stage 'evidence' does not match: E1: its text does not match its hash" in res.output

    edited = json.loads(json.dumps(stages))
    verdict = next(s["payload"] for s in edited if s["stage"] == "verification")
    verdict["claims"][0].update(support="supported", probability=0.99, strategy="paraphrase")
    rechain(url, answer_id, answer, edited)
    res = verify(config, answer_id)
    assert res.exit_code == 1 and "stage 'verification' does not match" in res.output


def test_an_answer_whose_evidence_changed_is_not_served_from_the_cache(store):
    config, url, embedder = store
    settings = load_settings(config)
    q = QUESTIONS[1]
    searcher = Searcher(settings, url=url, embedder=embedder, reranker=None)
    with searcher, Answerer(settings, searcher=searcher, llm=None) as a:
        first = a.ask(q)
        again = a.ask(q)
        assert (first.cache, again.cache) == ("miss", "hit") and again.answer_id == first.answer_id
        block = evidence_of(stored(url, first.answer_id)[1])[-1]
        with psycopg.connect(url, autocommit=True) as conn:  # no ingest: the documents table is as it was
            conn.execute("UPDATE chunks SET text = text || ' Edited.' WHERE id = %s", (block["chunk_ids"][-1],))
        changed = a.ask(q, trace=True)
        assert changed.cache == "miss" and changed.answer_id != first.answer_id
        assert changed.trace is not None and changed.trace[0]["stale"] == first.answer_id
        assert a.ask(q).answer_id == changed.answer_id  # the recomputed answer is served from then on
    assert verify(config, changed.answer_id).exit_code == 0
    assert verify(config, first.answer_id).exit_code == 1
    with psycopg.connect(url) as conn:
        hits = conn.execute("SELECT hits FROM answers WHERE id = %s", (first.answer_id,)).fetchone()
    assert hits == (1,)  # the stale look-up was not counted as a hit


def test_a_citation_names_every_chunk_its_block_joins():
    from pipeline.answers.model import Citation, Evidence

    one = Evidence("E1", "h", "c1", "text", "T", "S", "u", "s:a.md", "s", 0, 0.5)
    joined = Evidence("E2", "h", "c2", "a\n\nb", "T", "S", "u", "s:a.md", "s", 1, 0.5, chunk_ids=("c2", "c3"))
    assert Citation(**one.citation()).chunk_ids == ["c1"]
    assert Citation(**joined.citation()).chunk_ids == ["c2", "c3"]


def test_the_verifier_digest_follows_its_code_what_it_imports_and_its_parameters(tmp_path, monkeypatch):
    import shutil

    from pipeline.answers import cache

    copy = tmp_path / "answers"
    shutil.copytree(cache.ANSWERS, copy, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(cache, "ANSWERS", copy)
    digest = cache.verifier_digest.__wrapped__  # uncached: each call reads the files again
    before = digest()
    (copy / "loop.py").write_text("# the loop is not the verifier\n", encoding="utf-8")
    assert digest() == before
    for changed in ("verify/policy.py", "words.py", "params/all-MiniLM-L6-v2.json"):  # its own, an import, params
        path = copy / changed
        path.write_bytes(path.read_bytes() + b"\n")
        assert digest() != before, changed
        before = digest()
    (copy / "params" / "verifier.json").write_text("{}", encoding="utf-8")  # a parameters file of its own
    assert digest() != before


def test_an_llm_answer_is_not_served_by_another_verifier(store, monkeypatch):
    from pipeline.answers import cache
    from pipeline.answers.llm import ChatClient
    from pipeline.config import LLMConfig
    from tests.llm_double import LLMDouble

    config, url, embedder = store
    settings = load_settings(config)
    with LLMDouble() as llm:
        client = ChatClient(LLMConfig(base_url=llm.base_url, model="scripted"))
        searcher = Searcher(settings, url=url, embedder=embedder, reranker=None)
        with searcher, Answerer(settings, searcher=searcher, llm=client) as a:
            first = a.ask(QUESTIONS[0])
            assert a.ask(QUESTIONS[0]).cache == "hit"
            monkeypatch.setattr(cache, "verifier_digest", lambda: "another verifier")
            again = a.ask(QUESTIONS[0])
    assert again.cache == "miss" and again.answer_id != first.answer_id

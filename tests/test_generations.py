"""Model generations: `docforge reindex` builds the next model's vectors beside the live ones and switches
in one transaction, while the HTTP API keeps answering and ingest keeps indexing (real Postgres, a real
uvicorn server on 127.0.0.1, the packaged MiniLM as generation 1, a tiny local model as generation 2)."""

from __future__ import annotations

import json
import threading
import time

import httpx
import psycopg
import pytest
from click.testing import CliRunner

from docforge.cli import main
from docforge.servers import LocalSearch
from docforge.servers import embedder as embedder_service
from docforge.servers.api import create_app
from docforge.servers.auth import AuthConfig, Authenticator
from pipeline.config import EmbeddingConfig, ServiceConfig, load_settings
from pipeline.embed import Embedder, RemoteEmbedder
from pipeline.errors import StoreError
from pipeline.ingest import IngestContext, ingest_source, reindex
from pipeline.query import Searcher
from pipeline.store import generations
from tests.helpers import ServerThread, git
from tests.tiny_models import embedding_model

DOCS = {
    "docs/deploy.md": "# Deploying\n\nReleases go out blue-green through ArgoCD.\n\n## Rollback\n\n"
    "Switch traffic back to the blue stack and open an incident.\n",
    "docs/secrets.md": "# Secrets\n\nVault holds them; database passwords rotate every 90 days.\n",
    "docs/onboarding.md": "# Onboarding\n\nCollect your laptop, join the platform channel, pair with a buddy.\n",
    "docs/refunds.md": "# Refunds\n\nIssue a refund from the payments console; it settles in a week.\n",
    "docs/copy.md": "# Refunds\n\nIssue a refund from the payments console; it settles in a week.\n",  # same text
    "docs/testing.md": "# Tests\n\nRun make test: it starts an embedded database and pytest.\n",
}
QUERIES = ["how do I roll back a release?", "where do secrets live?", "first day at work", "refund a customer"]
TOKEN = "gen-t0ken"


@pytest.fixture(scope="module")
def new_model(tmp_path_factory):
    """Generation 2's model: random weights, 48 wide, with a query prompt."""
    return embedding_model(
        tmp_path_factory.mktemp("models") / "tiny-48", width=48, seed=7, prompts={"query": "query: ", "document": ""}
    )


@pytest.fixture
def store(make_repo, write_config, database_url, embedder):
    repo = make_repo(DOCS)
    config = write_config(
        [{"name": "docs", "type": "git", "repo": str(repo)}], embedding={"query_backend": "torch"}
    )  # no ONNX export in these tests
    settings = load_settings(config)
    stats = ingest_source(IngestContext(settings, url=database_url, embedder=embedder), "docs")
    assert stats.files_failed == 0 and stats.chunks_indexed > 0
    return repo, config, settings


def live(url) -> generations.Generation:
    with psycopg.connect(url, autocommit=True) as conn:
        gen = generations.live(conn)
    assert gen is not None
    return gen


def ingest(config, url, embedder=None):
    return ingest_source(IngestContext(load_settings(config), url=url, embedder=embedder), "docs")


def test_reindex_under_search_load_never_fails_nor_mixes(store, database_url, new_model, embedder, monkeypatch):
    repo, config, settings = store
    monkeypatch.setattr(reindex, "BLOCK", 2)  # many small blocks: the searches interleave with them
    auth = Authenticator(AuthConfig(api_tokens=TOKEN))
    search = LocalSearch(Searcher(settings, url=database_url, reranker=None))
    with ServerThread(create_app(search, auth, health=search.health)) as api:

        def ask(q: str) -> tuple[int, tuple[str, ...]]:
            r = httpx.post(
                f"{api.url}/search",
                json={"query": q, "user_name": "t", "team_name": "t", "limit": 4, "mode": "dense"},
                headers={"Authorization": f"Bearer {TOKEN}"},
                timeout=60,
            )
            return r.status_code, tuple(f"{h['doc_key']}#{h['chunk_index']}" for h in r.json().get("hits", []))

        before = {q: ask(q)[1] for q in QUERIES}
        seen: list[tuple[str, int, tuple[str, ...]]] = []
        done = threading.Event()

        def load() -> None:  # a bounded loop: until the switch, and a few after
            i, after = 0, 0
            while after < 8 and i < 2000:
                q = QUERIES[i % len(QUERIES)]
                seen.append((q, *ask(q)))
                i += 1
                after += done.is_set()

        clients = [threading.Thread(target=load) for _ in range(2)]
        for c in clients:
            c.start()

        edited, mid, marks = [], {}, []

        def progress(stage: str, n: int, total: int) -> None:
            if not edited:  # an ingest during the build: generation 1 stays live, and gets the new chunk
                (repo / "docs/later.md").write_text("# Later\n\nA page written while the reindex ran.\n")
                git(repo, "add", "-A")
                git(repo, "commit", "-qm", "later")
                edited.append(ingest(config, database_url, embedder))
                mid.update({q: ask(q)[1] for q in QUERIES})  # generation 1's answers, the new page in
                marks.append(len(seen))  # searches so far: those after this one ran while generation 2 was built
                # The build waits here until a search completes, mid-build: on a loaded machine the build
                # could otherwise finish before either client's next search returns.
                deadline = time.monotonic() + 120
                while len(seen) <= marks[0] and time.monotonic() < deadline:
                    time.sleep(0.02)

        result = reindex.reindex(
            settings, database_url, reindex.target_embedder(settings, str(new_model), None), progress=progress
        )
        marks.append(len(seen))
        done.set()
        for c in clients:
            c.join(300)
        after = {q: ask(q)[1] for q in QUERIES}

    assert result.switched and result.generation == 2 and result.dropped == [1]
    assert edited and edited[0].files_added == 1 and edited[0].chunks_embedded == 1  # with MiniLM, mid-build
    assert marks[1] > marks[0] and {status for _, status, _ in seen} == {200}  # searched during it; none failed
    assert any(before[q] != after[q] for q in QUERIES)  # the models rank differently: the check below has teeth
    for q, _, hits in seen:  # every answer is wholly one generation's: 1's before or after the ingest, or 2's
        assert hits in (before[q], mid[q], after[q]), (q, hits)
    assert [hits for q, _, hits in seen[-4:]] == [after[q] for q, _, _ in seen[-4:]]  # then the new one answers
    gen = live(database_url)
    assert (gen.id, gen.model, gen.dimension) == (2, "tiny-48", 48)
    with psycopg.connect(database_url) as conn:
        assert generations.missing(conn, gen) == 0  # the chunk ingested mid-build has its new vector too
        assert conn.execute("SELECT to_regclass('vectors_1')").fetchone()[0] is None  # dropped


def test_ingest_after_a_switch_follows_the_live_generation(store, database_url, new_model, embedder):
    repo, config, settings = store
    reindex.reindex(settings, database_url, reindex.target_embedder(settings, str(new_model), None))
    unchanged = ingest(config, database_url, embedder)  # the MiniLM it is handed is not the live model
    assert unchanged.files_added == unchanged.files_updated == unchanged.chunks_embedded == 0  # nothing re-parsed
    (repo / "docs/secrets.md").write_text("# Secrets\n\nVault holds them; keys rotate every 30 days now.\n")
    git(repo, "commit", "-qam", "edit")
    changed = ingest(config, database_url, embedder)
    assert changed.files_updated == 1 and changed.chunks_embedded == 1
    with Searcher(settings, url=database_url, reranker=None) as s:
        assert s.embedder.model_id == "tiny-48"  # the query embedder follows the live generation
        hits = s.search("keys rotate every 30 days", mode="hybrid", limit=3)
        assert hits[0].doc_key == "docs:docs/secrets.md"
        with s.connection() as conn:
            assert generations.missing(conn, live(database_url)) == 0


def test_an_interrupted_reindex_resumes(store, database_url, new_model, monkeypatch):
    _, config, settings = store
    monkeypatch.setattr(reindex, "BLOCK", 2)
    target = reindex.target_embedder(settings, str(new_model), None)

    def crash(stage, n, total):
        if n:
            raise KeyboardInterrupt  # killed after its first block

    with pytest.raises(KeyboardInterrupt):
        reindex.reindex(settings, database_url, target, progress=crash)
    assert live(database_url).id == 1  # nothing switched
    status = json.loads(CliRunner().invoke(main, ["status", "--json", "-c", str(config)]).output)
    building = [g for g in status["generations"] if g["state"] == "building"]
    assert building and 0 < building[0]["vectors"] < building[0]["chunks"]

    with pytest.raises(StoreError, match="--cancel"):  # another model while one is half built
        reindex.reindex(settings, database_url, reindex.target_embedder(settings, str(new_model), 16))

    resumed = reindex.reindex(settings, database_url, target)
    with psycopg.connect(database_url) as conn:
        distinct = conn.execute("SELECT count(DISTINCT text_hash) FROM chunks").fetchone()[0]
    assert resumed.switched and 0 < resumed.embedded < distinct  # the first block was kept
    status = json.loads(CliRunner().invoke(main, ["status", "--json", "-c", str(config)]).output)
    assert [(g["id"], g["state"], g["model"]) for g in status["generations"]] == [(2, "live", "tiny-48")]


def test_a_text_is_embedded_once_and_cancel_drops_a_build(store, database_url, new_model, monkeypatch):
    _, config, settings = store
    with psycopg.connect(database_url) as conn:
        chunks, distinct = conn.execute("SELECT count(*), count(DISTINCT text_hash) FROM chunks").fetchone()
    assert chunks > distinct  # copy.md repeats refunds.md
    target = reindex.target_embedder(settings, str(new_model), None)

    def stop(stage, n, total):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        reindex.reindex(settings, database_url, target, progress=stop)
    out = CliRunner().invoke(main, ["reindex", "--cancel", "-c", str(config)])
    assert out.exit_code == 0 and "dropped generation 2" in out.output
    result = reindex.reindex(settings, database_url, target)
    assert result.generation == 3 and result.embedded == distinct and result.chunks == chunks
    again = reindex.reindex(settings, database_url, target)
    assert not again.switched  # already live: nothing to do


def test_reindex_through_the_embedder_service(store, database_url, new_model, monkeypatch):
    """The hosted model change: the new model runs in an embedder service; reindex and search use it."""
    _, config, _ = store
    tiny = Embedder(EmbeddingConfig(model=str(new_model), device="cpu"))
    with ServerThread(embedder_service.create_app(tiny, TOKEN, ServiceConfig(max_items=4))) as svc:
        monkeypatch.setenv("EMBEDDER_URL", svc.url)
        monkeypatch.setenv("EMBEDDER_TOKEN", TOKEN)
        monkeypatch.setenv("EMBEDDER_INGEST", "true")
        settings = load_settings(config)
        target = reindex.target_embedder(settings, str(new_model), None)
        assert isinstance(target, RemoteEmbedder) and target.model_id == "tiny-48"
        result = reindex.reindex(settings, database_url, target)
        assert result.switched and (result.model, result.dimension) == ("tiny-48", 48)
        with Searcher(settings, url=database_url, reranker=None) as s:
            assert isinstance(s.embedder.inner, RemoteEmbedder) and s.embedder.model_id == "tiny-48"
            assert len(s.search("refund a customer", mode="dense", limit=3)) == 3

"""Hostile sources, ingested for real: a git working tree full of traps, a Confluence space with
a page nested past any sane depth and one holding a lone surrogate.

Each run has a per-test timeout (a link to /dev/zero or a FIFO used to read forever or
hang): finishing at all is the bounded-time check. Then: nothing from outside the root is
stored or searchable, every odd entry is a named failure, everything else is indexed.
"""

from __future__ import annotations

import os

import psycopg
import pytest

from pipeline.config import load_settings
from pipeline.ingest import IngestContext, ingest_source
from pipeline.query import Searcher
from tests.confluence_double import ConfluenceDouble
from tests.conftest_confluence import confluence_double, confluence_env  # noqa: F401 (fixtures)
from tests.helpers import git

SECRET = "zanzibar-credential-7f3a"  # in a file beside the repository, never inside it


def indexed_keys(url: str) -> set[str]:
    with psycopg.connect(url) as conn:
        return {k for (k,) in conn.execute("SELECT key FROM documents")}


def failures_in_store(url: str, source: str) -> dict[str, tuple[str, str]]:
    with psycopg.connect(url) as conn:
        rows = conn.execute("SELECT doc_key, stage, error FROM failures WHERE source = %s", (source,))
        return {k: (stage, error) for k, stage, error in rows}


def stored_text(url: str) -> str:
    with psycopg.connect(url) as conn:
        texts = conn.execute("SELECT coalesce(string_agg(text, ' '), '') FROM chunks").fetchone()[0]
        titles = conn.execute("SELECT coalesce(string_agg(title || ' ' || meta::text, ' '), '') FROM documents")
        return texts + titles.fetchone()[0]


@pytest.fixture
def hostile_repo(tmp_path):
    """A committed working tree: two ordinary pages beside links out, to /dev/zero, to a FIFO,
    into .git, in a loop, a broken link, an oversized file and a file whose name is not UTF-8."""
    (tmp_path / "outside.md").write_text(f"# Outside\n\n{SECRET} root:x:0:0\n")
    repo = tmp_path / "repo"
    docs = repo / "docs"
    docs.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    (docs / "guide.md").write_text("# Guide\n\nThe heliotrope deployment runs nightly.\n")
    (docs / "faq.md").write_text("# FAQ\n\nRotate the quokka keys every month.\n")
    os.symlink("guide.md", docs / "alias.md")  # inside the root: followed
    os.symlink(str(tmp_path / "outside.md"), docs / "absolute.md")
    os.symlink("../../outside.md", docs / "relative.md")
    os.symlink("/etc/passwd", docs / "passwd.md")
    os.symlink("/dev/zero", docs / "zero.md")
    os.mkfifo(docs / "pipe")
    os.symlink("pipe", docs / "fifo.md")
    os.symlink("loop-b.md", docs / "loop-a.md")
    os.symlink("loop-a.md", docs / "loop-b.md")
    os.symlink("../.git/config", docs / "gitconfig.md")
    os.symlink("nowhere.md", docs / "broken.md")
    (docs / "huge.md").write_text("# Huge\n\n" + "big words here " * 5000)  # 75 kB, over the limit set below
    with open(os.path.join(os.fsencode(docs), b"caf\xe9.md"), "wb") as f:  # Latin-1 name bytes
        f.write(b"# Cafe\n\nA fine page with a bad name.\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "traps")
    return repo


@pytest.mark.timeout(240)
def test_a_hostile_working_tree_ingests_only_what_is_inside_it(hostile_repo, write_config, database_url, embedder):
    config = write_config(
        [{"name": "hb", "type": "git", "repo": str(hostile_repo), "globs": ["docs/**/*.md"], "max_file_bytes": 50_000}]
    )
    settings = load_settings(config)
    stats = ingest_source(IngestContext(settings, url=database_url, embedder=embedder), "hb")

    assert indexed_keys(database_url) == {"hb:docs/guide.md", "hb:docs/faq.md", "hb:docs/alias.md"}
    reasons = {
        "hb:docs/absolute.md": "outside the source's root",
        "hb:docs/relative.md": "outside the source's root",
        "hb:docs/passwd.md": "outside the source's root",
        "hb:docs/zero.md": "outside the source's root",
        "hb:docs/fifo.md": "not a regular file (a FIFO)",
        "hb:docs/loop-a.md": "symlink loop",
        "hb:docs/loop-b.md": "symlink loop",
        "hb:docs/gitconfig.md": "into .git",
        "hb:docs/broken.md": "missing",
        "hb:docs/huge.md": "limit (max_file_bytes)",
        "hb:docs/caf\\xe9.md": "not valid UTF-8",
    }
    reported = {f.key: f for f in stats.failures}
    stored = failures_in_store(database_url, "hb")
    assert set(reported) == set(stored) == set(reasons)
    for key, reason in reasons.items():
        assert reported[key].stage == "fetch" and reason in reported[key].error and reason in stored[key][1]

    everything = stored_text(database_url)
    assert SECRET not in everything and "root:x:0:0" not in everything and "[core]" not in everything
    with Searcher(settings, url=database_url, embedder=embedder, reranker=None) as s:
        assert s.search(SECRET, mode="keyword") == [] and s.search("root:x:0:0", mode="keyword") == []
        # the link inside the root is indexed as its own document, but a text is one result (issue 38: one copy)
        found = [h.doc_key for h in s.search("heliotrope deployment", mode="keyword")]
        assert len(found) == 1 and found[0] in {"hb:docs/guide.md", "hb:docs/alias.md"}
        assert [h.doc_key for h in s.search("quokka keys", mode="keyword")] == ["hb:docs/faq.md"]

    again = ingest_source(IngestContext(settings, url=database_url, embedder=embedder), "hb")
    assert again.files_unchanged == 3 and {f.key for f in again.failures} == set(reasons)
    assert set(failures_in_store(database_url, "hb")) == set(reasons)


@pytest.mark.timeout(240)
def test_a_repository_of_only_traps_fails_each_and_indexes_nothing(tmp_path, write_config, database_url, embedder):
    repo = tmp_path / "traps"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    os.symlink("/dev/zero", repo / "README.md")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "one trap")
    config = write_config([{"name": "t", "type": "git", "repo": str(repo)}])
    stats = ingest_source(IngestContext(load_settings(config), url=database_url, embedder=embedder), "t")
    assert [f.key for f in stats.failures] == ["t:README.md"] and indexed_keys(database_url) == set()


DEEP_TABLE = "<table><tbody><tr><td>" * 300 + "<p>buried</p>" + "</td></tr></tbody></table>" * 300
DEEP_MACRO = (
    '<ac:structured-macro ac:name="info"><ac:rich-text-body>' * 330
    + "<p>buried</p>"
    + "</ac:rich-text-body></ac:structured-macro>" * 330
)


@pytest.mark.timeout(240)
def test_a_confluence_space_with_a_deep_page_and_a_lone_surrogate_ingests_the_rest(
    confluence_double: ConfluenceDouble, write_config, database_url, embedder
):
    d = confluence_double
    d.add_page("100", "Home", "<h1>Home</h1><p>The albatross runbook lives here.</p>")
    d.add_page("101", "Deep tables", DEEP_TABLE)
    d.add_page("102", "Surrogate", "<p>broken \ud800 text about the pelican</p>")  # JSON carries it as \ud800
    d.add_page("103", "Deep macros", DEEP_MACRO)
    d.add_page("104", "Quotes", "<blockquote>" * 500 + "<p>deep quote</p>" + "</blockquote>" * 500)
    d.add_page("105", "Notes", "<p>Cormorant notes: feed at noon.</p>")
    config = write_config(
        [
            {
                "name": "wiki",
                "type": "confluence",
                "base_url": d.base_url,
                "space": "DOCS",
                "max_retry_after_s": 0.05,
                "retry_budget_s": 5,
            }
        ]
    )
    settings = load_settings(config)
    stats = ingest_source(IngestContext(settings, url=database_url, embedder=embedder), "wiki")

    assert indexed_keys(database_url) == {"wiki:100", "wiki:105"}
    failed = failures_in_store(database_url, "wiki")
    assert set(failed) == {f.key for f in stats.failures} == {"wiki:101", "wiki:102", "wiki:103", "wiki:104"}
    for key, title in (("wiki:101", "Deep tables"), ("wiki:103", "Deep macros"), ("wiki:104", "Quotes")):
        stage, error = failed[key]
        assert stage == "parse" and "ParseError" in error and key in error and title in error and "deep" in error
    assert failed["wiki:102"][0] == "decode" and "lone surrogate U+D800" in failed["wiki:102"][1]
    with Searcher(settings, url=database_url, embedder=embedder, reranker=None) as s:
        assert [h.doc_key for h in s.search("albatross runbook", mode="keyword")] == ["wiki:100"]
        assert [h.doc_key for h in s.search("cormorant", mode="keyword")] == ["wiki:105"]


class FaultyModel:
    """The session's real model, except that it fails on one text (as a model can on odd input) and
    returns NaN for another (pgvector refuses it): a fault of the model, not of the store."""

    def __init__(self, real):
        self._real = real

    def __getattr__(self, name):
        return getattr(self._real, name)

    def load(self):  # the store takes the given model as loaded: this one, not the one it wraps
        return self

    def encode(self, texts, *args, **kwargs):
        if any("basilisk" in t for t in texts):
            raise RuntimeError("the model choked on a basilisk")
        vectors = self._real.encode(texts, *args, **kwargs)
        for i, t in enumerate(texts):
            if "chimera" in t:
                vectors[i] = float("nan")
        return vectors


@pytest.mark.timeout(240)
def test_a_text_the_model_fails_on_fails_its_document_alone(make_repo, write_config, database_url, embedder):
    repo = make_repo(
        {
            "docs/ok.md": "# Fine\n\nThe heron nests by the river.\n",
            "docs/bad.md": "# Bad\n\nThe basilisk stares back.\n",
            "docs/nan.md": "# NaN\n\nThe chimera has three heads.\n",
        }
    )
    config = write_config([{"name": "m", "type": "git", "repo": str(repo)}])
    ctx = IngestContext(load_settings(config), url=database_url, embedder=FaultyModel(embedder))
    stats = ingest_source(ctx, "m")
    assert indexed_keys(database_url) == {"m:docs/ok.md"}
    failed = failures_in_store(database_url, "m")
    assert {f.key for f in stats.failures} == set(failed) == {"m:docs/bad.md", "m:docs/nan.md"}
    assert failed["m:docs/bad.md"] == ("embed", "RuntimeError: the model choked on a basilisk")
    assert failed["m:docs/nan.md"][0] == "embed" and "not finite" in failed["m:docs/nan.md"][1]

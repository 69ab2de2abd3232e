"""A restricted caller's `/ask` trace and answer say no more than what it may read (pipeline/answers/loop.py).

Two stores alike but for one word of a document the caller may not read: in one the word is the question's,
in the other a word of the same length the question does not hold. The caller's traces and answers must be
equal; a caller with full access, who may read that document, tells the stores apart.
"""

from __future__ import annotations

import pytest

from pipeline.access import FULL_ACCESS, Principal
from pipeline.answers import Answerer
from pipeline.config import load_settings
from pipeline.ingest import IngestContext, ingest_source
from pipeline.query import Searcher
from tests.helpers import write_files
from tests.test_crash import new_db

WORD, OTHER = "Zorblaxian", "Quendrovil"  # made up: no model or index knows either
QUESTION = f"How often is the {WORD} calibration run?"
OPEN = {
    "ops.md": "# Operations\n\nThe calibration of the sensors is run by the night shift every week.\n",
    "team.md": "# Team\n\nThe operations team keeps the runbooks and the on-call rota.\n",
}
BOB = Principal("bob@example.com", frozenset({"eng"}))  # not in group hr


def _store(pg_server, embedder, root, word: str):
    write_files(root / "open", OPEN)
    write_files(root / "hr", {"secret.md": f"# Secret\n\nThe {word} calibration is run every ninety days.\n"})
    (root / "sources.yml").write_text(
        f"sources:\n  - {{name: open, type: directory, path: {root / 'open'}}}\n"
        f"  - {{name: hr, type: directory, path: {root / 'hr'}, access: [hr]}}\n"
    )
    settings = load_settings(root / "sources.yml")
    url = new_db(pg_server)
    for name in ("open", "hr"):
        ingest_source(IngestContext(settings, url=url, embedder=embedder), name)
    searcher = Searcher(settings, url=url, embedder=embedder, reranker=None)
    return searcher, Answerer(settings, searcher=searcher, url=url, llm=None)


@pytest.fixture(scope="module")
def stores(pg_server, embedder, tmp_path_factory):
    made = [_store(pg_server, embedder, tmp_path_factory.mktemp(w), w) for w in (WORD, OTHER)]
    yield [answerer for _, answerer in made]
    for searcher, answerer in made:
        answerer.close()
        searcher.close()


def _seen(answerer, reader) -> tuple[list[dict], dict]:
    a = answerer.ask(QUESTION, trace=True, use_cache=False, reader=reader)
    trace = [{k: v for k, v in step.items() if k != "ms"} for step in a.trace or []]  # times are no data
    fields = a.model_dump(mode="json", exclude={"trace", "timings", "latency_ms", "answer_id", "dag_root"})
    return trace, fields


def test_a_restricted_callers_trace_cannot_tell_a_hidden_word_from_no_word(stores):
    with_word, without = stores
    seen = _seen(with_word, BOB)
    assert seen[0], "a trace was asked for and given"
    assert seen == _seen(without, BOB)
    assert WORD.lower() in str(seen).lower() or seen[1]["abstained"]  # it speaks of the question's word


def test_a_full_access_caller_still_gets_the_index_wide_view(stores):
    """The same question as an admin: the document holds the answer in one store, not in the other."""
    with_word, without = stores
    assert _seen(with_word, FULL_ACCESS) != _seen(without, FULL_ACCESS)

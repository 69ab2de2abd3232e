"""The store's statements for the answer layer, on a real Postgres: the `answers` table and
`sentence_vectors` (pipeline.store.answers, pipeline.store.sentence_vectors)."""

from __future__ import annotations

from pipeline.store import answers, sentence_vectors
from pipeline.store.db import connect
from pipeline.store.schema import ensure_schema


def _store(database_url):
    conn = connect(database_url)
    ensure_schema(conn, "test-model", 8)
    return conn


def test_line_vectors_are_written_once_and_read_by_model_and_hash(database_url):
    with _store(database_url) as conn:
        sentence_vectors.write(conn, "m", [(b"h1", b"\x00" * 8), (b"h2", b"\x01" * 8)])
        sentence_vectors.write(conn, "m", [(b"h1", b"\x02" * 8)])  # already there: kept as it was
        assert sentence_vectors.read(conn, "m", [b"h1", b"h2", b"h3"]) == {b"h1": b"\x00" * 8, b"h2": b"\x01" * 8}
        assert sentence_vectors.read(conn, "another model", [b"h1"]) == {}


def test_a_stored_answer_is_found_by_its_key_and_counted_while_its_evidence_holds(database_url):
    with _store(database_url) as conn:
        assert answers.recorded(conn) and answers.lookup(conn, "k", "\n\n") is None
        answers.insert(
            conn,
            answer_id="a1",
            key="k",
            question="q",
            model="extractive",
            audit_mode="STRICT",
            dag_root="r",
            answer={"answer": "x"},
            stages=[{"stage": "evidence", "payload": []}],
        )
        hit = answers.lookup(conn, "k", "\n\n")
        assert hit is not None and hit.id == "a1" and hit.fresh and hit.hits == 1
        assert answers.get(conn, "a1") is not None and answers.get(conn, "nope") is None
        state = answers.state(conn, None)
        assert state["sources"] is None and state["documents"].startswith("0:")
        assert answers.purge(conn) == 1 and answers.lookup(conn, "k", "\n\n") is None

"""The question as the answer layer reads it: one record, its words as the question wrote them, one IDF."""

import math

from pipeline.answers import features, subject
from pipeline.answers import words as tx


def test_keys_are_said_as_the_question_wrote_them():
    q = "Why does the Jira cache keep 64KiB after a reset?"
    keys = [tx.key(w) for w in ("jira", "caching", "reset", "kib")]
    assert tx.as_written(q, keys) == ["Jira", "cache", "reset", "KiB"]
    assert tx.as_written(q, ["#nowhere"]) == ["#nowhere"]  # a key no word of it has: as it is


def test_one_record_read_once_for_the_warrant_layer_and_the_extractive_answerer():
    text = "How do I reset my Jira password?"
    q = subject.read(text, {tx.key("jira"): 5.0}, absent=[tx.key("jira")])
    assert list(q.subject) == [tx.key(w) for w in ("reset", "jira", "password")]  # "do", "how": not about it
    assert q.subject[tx.key("jira")] == 5.0 and q.subject[tx.key("reset")] == 1.0
    assert q.hard == ("Jira",) and q.absent == {tx.key("jira")}
    assert q.said([tx.key("jira"), tx.key("password")]) == "Jira, password"
    assert q.unseen == 5.0 / sum(q.keys.values())
    extractive = features.question(text, {tx.key("jira"): 5.0}, frozenset({tx.key("jira")}), {"path": 0.2})
    assert type(extractive) is type(q) and extractive.want == {"path": 0.2}
    assert (extractive.keys, extractive.subject, extractive.hard) == (q.keys, q.subject, q.hard)


def test_unknown_words_are_neither_in_the_index_nor_english():
    text = "Can I store my DKIM keys in MongoDB, or in a wan vault?"
    absent = [tx.key(w) for w in ("mongodb", "wan", "dkim")]
    q = subject.read(text, absent=absent)
    # "wan" is English (pale) though the index lacks it: a user's word, not a name; DKIM, MongoDB are neither
    assert q.unknown() == ["DKIM", "MongoDB"]
    assert subject.read(text).unknown() == []  # no index statistics: nothing is known to be absent


def test_one_idf_rarer_words_weigh_more():
    assert subject.idf(10, 0) == math.log(11)  # a word no text holds
    assert subject.idf(10, 1) > subject.idf(10, 5) > subject.idf(10, 10) > 0


def test_a_question_pickled_before_the_record_held_every_field_still_loads():
    """`bench/fit_answers.py --asked` keeps asked questions in a pickle: an older one loads, and refreshes."""
    import dataclasses
    import pickle

    q = subject.read("How do I reset my Jira password?")
    assert pickle.loads(pickle.dumps(q)) == q
    old = {"keys": q.keys, "unseen": q.unseen, "want": {}, "anchors": q.anchors, "near": {}}
    loaded = subject.Question.__new__(subject.Question)
    loaded.__setstate__(old)  # what unpickling does with an older file's state
    assert loaded.subject == {} and loaded.hard == () and loaded.text == ""
    assert dataclasses.replace(loaded, near={"x": frozenset()}).keys == q.keys


def test_english_that_wordnet_lacks_is_no_unknown_word():
    text = "How do I delete everything that Redis would precompile?"
    absent = [tx.key(w) for w in ("everything", "redis", "precompile")]
    # "everything" is of a closed class WordNet leaves out, "precompile" an English prefix on "compile";
    # "redis" is no "re-" on an English word of four letters or more
    assert subject.read(text, absent=absent).unknown() == ["Redis"]


def test_a_word_the_index_holds_inside_a_file_name_is_not_absent(pg_server, embedder, tmp_path):
    import psycopg

    from tests.helpers import ingested_repo

    url, _, _ = ingested_repo(
        pg_server,
        embedder,
        tmp_path,
        "tool",
        {"docs/settings.md": "# Settings\n\nProject settings live in pyproject.toml under the tool table.\n"},
    )
    with psycopg.connect(url) as conn:
        stats = subject.corpus_stats(conn, ["pyproject", "rspamd", "settings"])
    # the keyword index keeps "pyproject.toml" whole: "pyproject" is no lexeme of its own, yet it is there
    assert stats.absent == {tx.key("rspamd")}
    q = subject.read("Can the settings go outside pyproject or into rspamd?", absent=stats.absent)
    assert q.unknown() == ["rspamd"]

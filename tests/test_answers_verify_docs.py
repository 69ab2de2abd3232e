"""The verifier on documentation: numbers written another way, exact identifiers, voice, swapped roles,
WordNet synonyms (and their absence), degenerate claims, and the claims bench's smoke mode."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from pipeline.answers import lexicon
from pipeline.answers import words as tx
from pipeline.answers.verify import edits, opposites, terms, verify_request

# True claims the fitted model refuses, strict xfails: see FULL_MATCH in tests/test_answers_verify.py.
FULL_MATCH = "all its words are in the evidence, not as one span: the model's lex weight is negative"
# What the refit with the relation features (issue 45) trades, strict xfails too (see tests/test_answers_verify.py).
FLAGS = (
    "the sense flags weigh little in the refit (relation -0.34, swap -0.43): a wrong claim built of the "
    "evidence's own words, flagged, still reaches the threshold"
)
ONE_WORD = "one word of five unfound, the rest of the clause kept: the refit's cover weight lets it through"
ROOT = Path(__file__).resolve().parent.parent
needs_wordnet = pytest.mark.skipif(
    not lexicon.available(), reason="WordNet is not installed (apt-get install wordnet-base)"
)


def ok(claim: str, evidence: str) -> bool:
    return verify_request({"answer": claim, "evidence": evidence})["verified"]


def violations(claim: str, evidence: str) -> list[str]:
    return verify_request({"answer": claim, "evidence": evidence})["claims"][0]["violations"]


def mode(claim: str, evidence: str) -> str:
    return verify_request({"answer": claim, "evidence": evidence})["audit_mode"]


def test_a_claim_that_repeats_one_evidence_word_is_refused_with_a_reason():
    out = verify_request({"answer": "word word word word [E1]", "evidence": {"E1": "word"}})
    assert not out["verified"]
    assert out["claims"][0]["violations"][0].startswith("degenerate: 4 content words but 1 distinct")
    assert ok("word", "word")  # the word itself is a quote of the evidence


@pytest.mark.parametrize(
    ("text", "keys"),
    [
        ("sixty-four kibibytes", ["#65536", "#65536", "byte"]),  # sizes in bytes
        ("64KiB", ["#65536", "byte"]),
        ("16 KB", ["#16384", "byte"]),  # KB counts in 1024s, as documentation mostly means it
        ("two hundred and fifty-six", ["#256"] * 5),
        ("ten seconds", ["#10", "s"]),
        ("10 s", ["#10", "s"]),
        ("nine point five", ["#9.5"] * 3),
        ("one two", ["#1", "#2"]),  # two numbers, not one
        ("half an hour", ["#1800", "an", "s"]),  # durations in seconds
        ("30 minutes", ["#1800", "s"]),
        ("one day", ["#86400", "s"]),
        ("24 hours", ["#86400", "s"]),
        ("a week", ["#604800", "s"]),
        ("7 days", ["#604800", "s"]),
        ("800 ms", ["#0.8", "s"]),
        ("ten percent", ["#0.1", "percent"]),  # a percentage is the fraction it names
        ("10 %", ["#0.1", "percent"]),
        ("a quarter of a minute", ["#15", "#15", "of", "a", "s"]),
        ("three quarters of an hour", ["#2700", "#2700", "of", "an", "s"]),
        ("one minute and four seconds", ["#64", "s", "and", "#64", "s"]),  # one duration in parts
        ("1 h 30 min", ["#5400", "s", "#5400", "s"]),
        ("80x24", ["#80", "x", "#24"]),  # a size: two numbers
        ("0x1f", ["#0", "x1f"]),  # hex stays a word
        ("nineteen seventy", ["#1970", "#1970"]),  # a year said aloud
        ("a second time", ["a", "#2th", "time"]),  # the ordinal, not one second
        ("wait a second", ["wait", "#1", "s"]),
        ("a b", ["a", "b"]),  # an article before a unit's letter is no count
    ],
)
def test_numbers_and_units_read_the_same_however_written(text, keys):
    assert tx.keys(tx.words(text)) == keys


@pytest.mark.xfail(reason=FULL_MATCH, strict=True)
def test_numbers_written_another_way_are_supported():
    ev = "The buffer defaults to 64 KiB and the timeout to 10 s."
    assert ok("The buffer defaults to sixty-four kibibytes.", ev)
    assert ok("The timeout defaults to ten seconds.", ev)


def test_numbers_changed_are_refused():
    ev = "The buffer defaults to 64 KiB and the timeout to 10 s."
    assert not ok("The buffer defaults to 32 KiB.", ev)
    assert not ok("The timeout defaults to ten minutes.", ev)


def test_a_number_replaced_in_its_place_is_refused_though_the_sentence_names_it_elsewhere():
    ev = "The admin interface listens on port 6032, and clients connect to the proxy on port 6033."
    said = violations("Clients connect to the proxy on port 6032.", ev)
    assert said == ["number '6032' stands where the evidence says '6033'"]
    assert ok("Clients connect to the proxy on port 6033.", ev)
    # the same quantity written another way is no other number
    assert edits.number_replaced("The grace period lasts 86,400 seconds.", "The grace period lasts 24 hours.") is None
    assert edits.number_replaced("It fails over a second time.", "It fails over twice.") is None


def test_half_an_hour_supports_30_minutes():
    assert ok("Keep the canary for half an hour.", "Keep the canary for 30 minutes.")


def test_durations_and_percentages_written_another_way_are_supported():
    ev = "Keep the canary for 30 minutes. Old keys stay for 24 hours. Sampling keeps 10 % of requests."
    assert ok("Old keys stay for one day.", ev)
    assert ok("Sampling keeps ten percent of requests.", ev)
    assert not ok("Keep the canary for an hour.", ev)
    assert not ok("Old keys stay for a week.", ev)
    assert not ok("Sampling keeps twenty percent of requests.", ev)


def test_identifiers_must_match_exactly():
    assert mode("Timestamps use HH:MM:SS.", "Timestamps use HH:MM:SS.") == "STRICT"
    out = verify_request({"answer": "Timestamps use HH:MM.", "evidence": "Timestamps use HH:MM:SS."})
    assert not out["verified"] and "identifier 'hh:mm'" in out["claims"][0]["violations"][0]
    assert not ok("Pass --type=int to get true or false.", "Pass --type=bool to get true or false.")
    assert not ok("A ';' starts a comment.", "A '#' starts a comment.")
    assert tx.identifiers("see git-am(1), $GIT_DIR and SCHED_FIFO.") == ["git-am(1)", "$git_dir", "sched_fifo"]


PAGE = "\u2013libnames Similar to \u2013libs, but prints the bare file names (pages 5\u201310)."


def test_a_typographic_dash_opening_a_word_is_an_option_s_two_hyphens():
    assert tx.identifiers(PAGE)[:2] == ["--libnames", "--libs"]
    assert not ok("--libfiles is similar to --libs.", PAGE)
    assert tx.fold("pages 5\u201310, a \u2013 b, x\u2014y") == "pages 5-10, a - b, x-y"


@pytest.mark.xfail(
    reason=FULL_MATCH,
    strict=True,
)
def test_an_option_named_with_two_hyphens_is_supported_by_the_typographic_dash():
    assert ok("--libnames is similar to --libs.", PAGE)


@pytest.mark.parametrize(
    ("evidence", "changed"),
    [
        ("Restart it with systemctl restart payments.service.", "billing.service"),
        ('Set timeout="30" in the listener block.', 'timeout="60"'),
        ("Run Deploy.ps1 -SkipChecks to skip the checks.", "-SkipTests"),
    ],
)
def test_unit_names_attribute_values_and_switches_are_values_that_must_match(evidence, changed):
    value = {"billing.service": "payments.service", 'timeout="60"': 'timeout="30"', "-SkipTests": "-SkipChecks"}
    assert mode(evidence, evidence) == "STRICT"
    out = verify_request({"answer": evidence.replace(value[changed], changed), "evidence": evidence})
    assert not out["verified"] and out["claims"][0]["violations"], out


def test_the_passive_voice_of_the_evidence_supports_the_active_claim():
    ev = "The proxy listens on port 8443. TLS is terminated by the Envoy sidecar."
    assert mode("The proxy listens on port 8443 and Envoy terminates TLS.", ev) == "HYBRID"


def test_a_passive_claim_keeps_the_roles_of_the_active_evidence():
    ev = "The script restarts the systemd unit payments.service after the drain."
    assert mode("The payments.service unit is restarted by the script after the drain.", ev) == "HYBRID"
    assert not ok("The script is restarted by the payments.service unit after the drain.", ev)


def test_a_quoted_string_must_occur_as_written():
    ev = 'It splits a mbox file into a list of files: "0001" "0002" .. in the specified directory.'
    assert ok('It splits a mbox file into a list of files "0001", "0002" in the specified directory.', ev)
    out = verify_request({"answer": 'It splits a mbox file into files "001", "002".', "evidence": ev})
    assert not out["verified"] and "the quoted '001' is not in the cited evidence" in out["claims"][0]["violations"]


@needs_wordnet
def test_two_words_read_as_one_wordnet_lemma():
    assert mode("The null value stands for an unknown value.", "The null value represents an unknown value.") == (
        "HYBRID"
    )
    assert ok("This needs to be done only one time.", "Obviously, this needs to be done only once.")


@needs_wordnet
def test_a_two_word_lemma_does_not_let_a_changed_word_through():
    out = verify_request(
        {
            "answer": "The null value stands for a known value.",
            "evidence": "The null value represents an unknown value.",
        }
    )
    assert not out["verified"]
    assert out["claims"][0]["violations"] == ["'known' is the opposite of the evidence's 'unknown'"]


@pytest.mark.parametrize(
    ("claim", "evidence"),
    [
        (
            "The first number is the LIMIT and the second the OFFSET.",
            "The first number is the OFFSET and the second is the LIMIT.",
        ),
        (
            "It returns 1 if the variable does not exist and 0 otherwise.",
            "It returns 0 if the variable does not exist and 1 otherwise.",
        ),
    ],
)
def test_swapped_roles_are_refused(claim, evidence):
    out = verify_request({"answer": claim, "evidence": evidence})
    assert not out["verified"], out


def test_a_number_bounded_from_the_other_side_is_refused():
    ev = "Leave the canary running for at least 30 minutes, and no more than 2 hosts at once."
    out = verify_request({"answer": "Leave the canary running for at most 30 minutes.", "evidence": ev})
    assert "'at most 30': the evidence bounds that number from the other side" in out["claims"][0]["violations"]
    assert ok("Leave the canary running for at least half an hour.", ev)
    assert not ok("Keep the load over 4 on every host.", "Keep the load below 4 on every host.")


def test_a_claim_without_the_bound_is_no_number_bounded_from_the_other_side():
    ev = "Leave the canary running for at least 30 minutes, and no more than 2 hosts at once."
    assert ok("Leave the canary running for 30 minutes.", ev)  # unbounded: the check of conditions is not this


def test_a_value_taken_from_another_sentence_is_refused():
    ev = "The backup runs on Wednesday at 02:00 UTC. We avoid Monday because the load is highest then."
    out = verify_request({"answer": "The backup runs on Monday at 02:00 UTC.", "evidence": ev})
    assert (
        "'monday' is said elsewhere in the evidence, not in the sentence that says the rest of the claim"
        in out["claims"][0]["violations"]
    )
    assert not ok("The default is 12 workers.", "Scale up with --workers=12. The default is 6 workers.")


def test_a_subject_named_in_the_sentence_before_is_no_stray_value():
    page = "mod_cache_disk stores files on disk. This module requires the service of mod_cache."
    assert ok("mod_cache_disk requires the service of mod_cache.", page)


def test_a_default_is_stated_of_what_the_sentence_before_names():
    # "Defaults to …" has no subject of its own: what it joins to a name is said in one sentence with it
    page = "Returns the default chunkLimit used by readers. Defaults to 4096 (4 KiB), or 64 for rawMode."
    assert ok("For readers in rawMode, the default chunkLimit is 64.", page)
    out = verify_request({"answer": "For readers in rawMode, the default chunkLimit is 64.", "evidence": page})
    assert not any("of them in one sentence" in v for v in out["claims"][0]["violations"])


def test_two_words_exchanged_in_a_short_sentence_trade_places_but_neighbours_may():
    ev = "Quotas are set by the administrator and enforced by the scheduler."
    said = violations("Quotas are set by the scheduler and enforced by the administrator.", ev)
    assert "'scheduler' and 'administrator' trade places against the evidence" in said
    assert ok("The administrator sets quotas and the scheduler enforces them.", ev)
    assert ok("The daemon reads and writes the journal file.", "The daemon writes and reads the journal file.")


def test_identifiers_and_quoted_values_exchanged_trade_places_as_whole_things():
    # read word by word, "pack" is in "pack-index" too: neither is one word in one place to trade
    ev = "Use pack-index to build the index files from the bundles written by pack, and keep both in the cache."
    said = violations("Use pack to build the index files from the bundles written by pack-index.", ev)
    assert "'pack' and 'pack-index' trade places against the evidence" in said
    assert ok("Use pack-index to build the index files from the bundles that pack writes.", ev)
    ev = 'For pinned hosts the default is "off", and setting "on" writes a warning to the log.'
    assert not ok('For pinned hosts the default is "on", and setting "off" writes a warning to the log.', ev)


def test_an_exception_or_a_condition_the_evidence_rules_out_is_refused():
    # "regardless", "even if": the condition does not matter; a claim with "unless" says it does
    ev = "A pinned row is drawn with a yellow border, regardless of the theme in use."
    said = violations("A pinned row is drawn with a yellow border unless the theme sets its own colour.", ev)
    assert any("'unless' where the evidence says 'regardless'" in v for v in said)
    ev = "The counter keeps its value, even if the filter changes."
    assert not ok("The counter keeps its value unless the filter changes.", ev)
    # an exception the evidence does not make says more than it
    ev = "Every queue is flushed to disk at shutdown."
    said = violations("Every queue is flushed to disk at shutdown except the spool queue.", ev)
    assert any("'except', which the evidence does not say" in v for v in said)


def test_a_preference_traded_is_refused_when_a_comma_stands_before_rather_than():
    ev = "The script sets the variable to the path of the archive, rather than the path of the loader."
    said = violations("The variable holds the path of the loader rather than the path of the archive.", ev)
    assert any("trade places" in v for v in said)
    assert ok("The script sets the variable to the path of the archive rather than the path of the loader.", ev)


@needs_wordnet
def test_words_trading_places_in_a_claim_reworded_with_synonyms_are_refused():
    # every word found, "displayed" through WordNet: the exchange is all the claim changes
    ev = "A muted track is shown with a red label and a blue outline."
    said = violations("A muted track is displayed with a blue label and a red outline.", ev)
    assert any("trade places" in v for v in said)
    assert ok("A muted track is displayed with a red label and a blue outline.", ev)


@needs_wordnet
def test_a_wordnet_synonym_stands_in_for_a_word_of_the_evidence_never_strict():
    ev = "This option is mainly intended for sequences associated with unlogged tables."
    assert mode("This option is chiefly intended for sequences associated with unlogged tables.", ev) == "HYBRID"
    assert not ok("This option is chiefly intended for sequences associated with logged views.", ev)


@needs_wordnet
def test_a_near_word_stands_in_for_the_word_it_replaces_but_never_for_an_antonym():
    ev = "The proxy forwards requests to the backend without inspecting them."
    assert mode("The proxy passes requests to the backend without inspecting them.", ev) == "HYBRID"
    assert lexicon.near("passes", "forwards", 1, 2, ("verb",))
    assert not lexicon.near("refuses", "accepts", 1, 2, ("verb",))  # antonyms in WordNet
    assert not ok("The server refuses connections on port 8080.", "The server accepts connections on port 8080.")
    assert not lexicon.near("port", "harbor", 1, 2, ("verb", "adj", "adv"))  # nouns are names of things


@needs_wordnet
def test_a_near_word_must_stand_in_the_sentence_that_holds_the_claim():
    two = "The proxy stores requests in the cache. A nightly job forwards the logs to the archive."
    assert ok("A nightly job passes the logs to the archive.", two)


@pytest.mark.xfail(reason=ONE_WORD, strict=True)
@needs_wordnet
def test_a_near_word_of_another_sentence_stands_for_nothing():
    two = "The proxy stores requests in the cache. A nightly job forwards the logs to the archive."
    assert not ok("The proxy passes requests in the cache.", two)  # "forwards" is another sentence's


def test_without_wordnet_the_verifier_says_so_and_accepts_no_synonyms(tmp_path):
    code = (
        "from pipeline.answers import lexicon; from pipeline.answers.verify import verify_request as v;"
        "print(lexicon.wordnet_status());"
        "print(v({'answer': 'This option is chiefly intended for sequences.',"
        " 'evidence': 'This option is mainly intended for sequences.'})['verified'])"
    )
    env = {"DOCFORGE_WORDNET": str(tmp_path), "PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True).stdout
    assert "WordNet: not found in" in out and "apt-get install wordnet-base" in out


@pytest.mark.xfail(reason=ONE_WORD, strict=True)
def test_without_wordnet_a_synonym_is_refused(tmp_path):
    code = (
        "from pipeline.answers.verify import verify_request as v;"
        "print(v({'answer': 'This option is chiefly intended for sequences.',"
        " 'evidence': 'This option is mainly intended for sequences.'})['verified'])"
    )
    env = {"DOCFORGE_WORDNET": str(tmp_path), "PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True).stdout
    assert out.strip().endswith("False")


def test_the_claims_bench_smoke_mode_runs():
    out = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "verify_docs.py"), "--smoke"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert "[fit] all" in out.stdout  # every claims set of bench/sets is fit data (bench/sets/corpora.yml)


def test_the_answer_layer_stems_words_as_the_keyword_index_does(database_url):
    """One stemmer: every word of this project's own docs gets the stem Postgres' English Snowball gives it,
    so a word means the same in the keyword index and in the verifier."""
    import psycopg

    text = (Path(__file__).parents[1] / "docs" / "answers.md").read_text()
    vocab = sorted({w for w in tx.words(text) if w.isalpha() and len(w) > 2 and lexicon.irregular_base(w) is None})
    assert len(vocab) > 1000
    with psycopg.connect(database_url) as conn:
        rows = conn.execute("SELECT w, ts_lexize('english_stem', w) FROM unnest(%s::text[]) AS w", (vocab,)).fetchall()
    theirs = {w: lex[0] for w, lex in rows if lex}  # stopwords have no lexeme
    assert len(theirs) > 0.8 * len(vocab)
    differ = {w: (tx.stem(w), s) for w, s in theirs.items() if tx.stem(w) != s}
    assert not differ, differ


@needs_wordnet
def test_a_word_turned_into_its_opposite_is_refused_naming_both():
    out = verify_request(
        {"answer": "The lock file is permanent and removed at exit.", "evidence": "The lock file is temporary."}
    )
    assert not out["verified"]
    assert "'permanent' is the opposite of the evidence's 'temporary'" in out["claims"][0]["violations"]
    assert opposites.opposed("Keys are renewed manually.", "Keys are renewed automatically.") == (
        "manually",
        "automatically",
    )
    # a negation added with the opposite turns it back: left to the polarity check and the model
    assert opposites.opposed("The lock file is not permanent.", "The lock file is temporary.") is None


@needs_wordnet
def test_a_term_in_the_place_of_another_is_refused_but_an_english_word_for_a_term_is_not():
    ev = "Messages are received through the imbaz module on port 514."
    out = verify_request({"answer": "Messages are received through the imquux module on port 514.", "evidence": ev})
    assert not out["verified"]
    assert "'imquux' stands where the evidence says 'imbaz'" in out["claims"][0]["violations"]
    assert terms.replaced("Building it needs libfoo 2.1.0 or newer.", "Building needs libfoo 2.6.3 or newer.") == (
        "2.1.0",
        "2.6.3",
    )
    assert terms.replaced("Messages are received through the input module on port 514.", ev) is None

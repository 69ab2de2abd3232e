"""The answer layer's deterministic parts: verifier, claim parsing, reply parsing, cache key.

The extractive answerer's: tests/test_answers_extractive.py."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from docforge.cli import main
from pipeline.answers import cache, prompts
from pipeline.answers.model import Evidence, text_hash
from pipeline.answers.verify import anchors, parse_claims, verify, verify_request

# True claims the fitted model (issue 45) refuses, kept as strict xfails (fixed, they fail loudly): every
# content word is in the evidence, yet not as one span, and the model weighs that lexical share negatively
# (lex -1.81: in its fit data such claims are mostly evidence words recombined) and short claims low
# (length +0.90). A refit with each weight held to its sign accepted them but lost 1.5 points of
# leave-one-corpus-out accuracy (83.9 % → 82.4 %) and accepted an antonym, so the model stayed.
FULL_MATCH = "all its words are in the evidence, not as one span: the model's lex weight is negative"
MISSED = pytest.mark.xfail(reason=FULL_MATCH, strict=True)
# The refit with the relation features (issue 45: 87.2 % leave-one-corpus-out against 83.5 %, report
# corpora 81.1 % against 79.9 %) trades these hand-written cases, strict xfails too:
THIN = pytest.mark.xfail(
    reason="a short true claim naming one part of a long sentence covers little of its clause (cover +0.90)",
    strict=True,
)
FLAGS = pytest.mark.xfail(
    reason="the sense flags weigh little in the refit (relation -0.34, swap -0.43): a wrong claim built of "
    "the evidence's own words, flagged, still reaches the threshold",
    strict=True,
)
# The refit with the blind HTML manuals (issue 45, 2026-12-07: threshold 0.42 → 0.40, held there by the
# HaluEval-QA floor) accepts this hand-written fabrication, which sat at the threshold before too (P 0.41
# against 0.42, now 0.42 against 0.40): one verb the evidence never says, the rest of the claim its words.
AT_THRESHOLD = pytest.mark.xfail(
    reason="one verb the evidence lacks, the rest its words: P sits at the threshold (0.42 against 0.40)",
    strict=True,
)
EV = {
    "E1": (
        "RFC 2094 introduces non-lexical lifetimes. The borrow checker no longer ties a borrow to its "
        "lexical scope. It was accepted in August 2017 after three rounds of review."
    ),
    "E2": (
        "Arthur's Magazine (1844–1846) was an American literary periodical published in Philadelphia. "
        "First for Women is a woman's magazine published by Bauer Media Group in the USA."
    ),
    "E3": "The `cargo build -Zbuild-std` flag rebuilds the standard library. It does not support custom targets.",
}


def one(line: str, evidence: dict = EV):
    v = verify(line, evidence)
    assert len(v.claims) == 1
    return v.claims[0]


@pytest.mark.parametrize(
    "line, strategy",
    [
        ("The borrow checker no longer ties a borrow to its lexical scope. [E1]", "span"),
        ("the BORROW checker   no longer ties a borrow to its lexical scope [E1]", "span"),
        ('The RFC says the checker "no longer ties a borrow to its lexical scope". [E1]', "quote"),
        pytest.param("RFC 2094 was accepted in August 2017. [E1]", "reworded", marks=MISSED),
        ("The borrow checker does not tie a borrow to its lexical scope any longer. [E1]", "reworded"),
        pytest.param("Arthur's Magazine was published in Philadelphia. [E2]", "reworded", marks=MISSED),
        ("It was accepted after 3 rounds of review [E1]", "reworded"),
    ],
)
def test_true_claims_pass_with_the_expected_strategy(line, strategy):
    c = one(line)
    assert c.verified, c.violations
    assert c.strategy == strategy


# The reasons as the exact checks word them now: a number is named by its value ("number 4", not the
# "four" of the claim); a pointer to the wrong block leaves the claim's words unfound there.
@pytest.mark.parametrize(
    "line, why",
    [
        ("RFC 2094 was accepted in September 2017. [E1]", "september"),  # wrong date
        ("RFC 2094 was accepted in August 2016. [E1]", "2016"),
        ("It was accepted after four rounds of review. [E1]", "number 4"),  # wrong count
        ("The borrow checker ties a borrow to its lexical scope. [E1]", "negation"),  # negation dropped
        ("It supports custom targets. [E3]", "negation"),
        pytest.param(  # swapped entity
            "Bauer Media Group publishes Arthur's Magazine in the USA. [E2]", "together", marks=FLAGS
        ),
        pytest.param("First for Women was started first. [E2]", "started", marks=AT_THRESHOLD),  # fabricated relation
        ("RFC 2094 was written by Niko Matsakis in Rust 1.0. [E1]", "number 1"),  # refused by its first check
        (
            "The borrow checker no longer ties a borrow to its lexical scope. [E3]",
            "not in the cited evidence",
        ),  # wrong pointer
        ("The borrow checker no longer ties a borrow to its lexical scope. [E9]", "names no evidence"),
        ("The borrow checker no longer ties a borrow to its lexical scope.", "no pointer"),
    ],
)
def test_fabrications_wrong_pointers_and_anchors_fail(line, why):
    c = one(line)
    assert not c.verified and c.strategy is None
    assert why in " ".join(c.violations).lower()


# Roles: who did what, as the evidence says it (sentences written for these tests).
ROLES = {
    "E1": (
        "Harbour Lights is a 1998 stage play directed by Ada Lindqvist and written by Tomas Berg and "
        "Ines Ferro.Tomas Berg is a Danish novelist. He founded the Kestrel Review in 1990."
    ),
    "E2": "The Lantern Guild is a society of printers. It was founded in 1871 by Olga Varga.",
    "E3": "The lighthouse keeper, Mara Quist, was praised by Jon Ellis, whose sister ran the Grey Inn.",
}


@pytest.mark.parametrize(
    "line",
    [
        "Ada Lindqvist directed Harbour Lights. [E1]",
        "Harbour Lights was directed by Ada Lindqvist. [E1]",
        pytest.param("Tomas Berg wrote Harbour Lights. [E1]", marks=THIN),
        "Harbour Lights was written by Ines Ferro. [E1]",
        "Tomas Berg founded the Kestrel Review in 1990. [E1]",  # "He" in the evidence is Tomas Berg
        pytest.param(  # "It" in the evidence is the guild
            "The Lantern Guild was founded in 1871. [E2]", marks=MISSED
        ),
        "Olga Varga founded the Lantern Guild. [E2]",
        "Jon Ellis's sister ran the Grey Inn. [E3]",
        "Jon Ellis praised Mara Quist. [E3]",
    ],
)
def test_true_rewordings_keep_their_roles(line):
    c = one(line, ROLES)
    assert c.verified, c.violations


@pytest.mark.parametrize(
    "line, why",
    [
        ("Tomas Berg directed Harbour Lights. [E1]", "someone else directed"),  # the writer, not the director
        ("Harbour Lights was directed by Ines Ferro. [E1]", "someone else directed"),
        pytest.param(  # names the evidence holds apart
            "Ada Lindqvist founded the Kestrel Review in 1990. [E1]", "together", marks=FLAGS
        ),
        ("Harbour Lights was founded in 1990. [E1]", "founded"),  # the year belongs to the review
        ("Mara Quist praised Jon Ellis. [E3]", "someone else praised"),
        ("Harbour Lights is a Danish novelist. [E1]", "together"),  # words of the next text
    ],
)
def test_relation_swaps_built_from_evidence_words_fail(line, why):
    c = one(line, ROLES)
    assert not c.verified, c.strategy
    assert why in " ".join(c.violations).lower()


def test_audit_modes():
    strict = "RFC 2094 introduces non-lexical lifetimes. [E1]\nIt does not support custom targets. [E3]"
    # the reworded line: one the model accepts (the August line is a FULL_MATCH case above; modes are the point)
    hybrid = strict + "\nThe borrow checker does not tie a borrow to its lexical scope any longer. [E1]"
    ungrounded = hybrid + "\nIt was rejected in 2019. [E1]"
    assert verify(strict, EV).audit_mode == "STRICT"
    assert verify(hybrid, EV).audit_mode == "HYBRID"
    v = verify(ungrounded, EV)
    assert v.audit_mode == "UNGROUNDED" and [c.verified for c in v.claims] == [True, True, True, False]
    assert verify("", EV).audit_mode == "UNGROUNDED"  # nothing parsed
    assert verify("[E1]\n---", EV).claims == ()


def test_a_pointer_to_nothing_fails_the_claim_even_beside_a_good_one():
    c = one("RFC 2094 introduces non-lexical lifetimes. [E1,E7]")
    assert not c.verified and "pointer E7 names no evidence block" in c.violations


def test_parse_claims_collects_pointers_anywhere_and_strips_bullets():
    claims = parse_claims("Intro without pointer\n- First [E1] and second [E2, E3].\n2. Third (E4)\n\n[E5]\n")
    assert [(c.text, c.pointers) for c in claims] == [
        ("Intro without pointer", ()),
        ("First and second.", ("E1", "E2", "E3")),
        ("Third", ("E4",)),
    ]
    # Rust error codes are not pointers
    assert parse_claims("It fails with error [E0502] here [E1]")[0].pointers == ("E1",)


def test_anchors_find_names_numbers_dates_and_identifiers():
    a = anchors("The Rust Foundation Maintainer Fund pays `cargo-vet` reviewers 3 times since May 4, 2025.")
    assert "rust foundation maintainer fund" in a.proper
    assert "cargo vet" in a.idents and "#3" in a.numbers and (5, 4, 2025) in a.dates


@pytest.mark.parametrize(
    "sentence",
    [
        "If you just specify “-DD/MM/YY”, all messages before the given date are selected.",
        "Pass --since=-7d or -DD/MM/YY to the list command.",
        "The ~/.config/tool/rc.d/ folder is read before --config-file.",
    ],
)
def test_a_sentence_quoted_whole_is_strict_whatever_identifiers_it_holds(sentence):
    """A claim that is its evidence word for word is lexical proof: no part of a joined identifier
    ("-DD" of "-DD/MM/YY") may be looked for alone and then missed."""
    v = verify_request({"answer": sentence, "evidence": sentence})
    assert v["audit_mode"] == "STRICT" and v["claims"][0]["violations"] == []


def test_verify_request_shapes_and_the_implicit_single_block():
    v = verify_request({"answer": "Arthur's Magazine", "evidence": EV["E2"], "id": 4})
    assert v["id"] == 4 and v["implicit_pointers"] and v["audit_mode"] == "STRICT"
    v = verify_request({"answer": "x [E1]", "evidence": ["Arthur's Magazine x"]})
    assert v["claims"][0]["pointers"] == ["E1"] and "implicit_pointers" not in v
    # several blocks: a line without a pointer stays unsupported
    v = verify_request({"answer": "RFC 2094 introduces non-lexical lifetimes.", "evidence": EV})
    assert v["audit_mode"] == "UNGROUNDED"
    with pytest.raises(ValueError):
        verify_request({"answer": 3, "evidence": {}})


def test_verify_command_reads_json_lines_and_reports_bad_ones(tmp_path):
    lines = [
        json.dumps({"answer": "RFC 2094 introduces non-lexical lifetimes. [E1]", "evidence": EV}),
        "not json",
        json.dumps({"answer": "It was rejected in 2019. [E1]", "evidence": EV}),
    ]
    path = tmp_path / "in.jsonl"
    path.write_text("\n".join(lines) + "\n")
    res = CliRunner().invoke(main, ["verify", str(path)])
    assert res.exit_code == 1
    out = [json.loads(x) for x in res.stdout.splitlines()]
    assert out[0]["audit_mode"] == "STRICT" and out[0]["claims"][0]["strategy"] == "span"
    assert out[1] == {"line": 2, "error": "not JSON: Expecting value at column 1"}
    assert out[2]["audit_mode"] == "UNGROUNDED"


def test_verify_command_shares_a_long_input_among_workers_and_keeps_its_order(tmp_path):
    good = json.dumps({"answer": "RFC 2094 introduces non-lexical lifetimes. [E1]", "evidence": EV})
    bad = json.dumps({"answer": "It was rejected in 2019. [E1]", "evidence": EV})
    lines = []
    for i in range(700):  # past PARALLEL_FROM: workers take over
        lines.append(["not json", "", '{"answer": "\\ud800 x [E1]", "evidence": "x"}'][i % 3] if i % 97 == 5 else good)
        lines.append(json.dumps({"id": i, "answer": "RFC 2094 was postponed. [E1]", "evidence": EV}) if i % 2 else bad)
    path = tmp_path / "in.jsonl"
    path.write_text("\n".join(lines) + "\n")
    one = CliRunner().invoke(main, ["verify", str(path), "--workers", "1"])
    two = CliRunner().invoke(main, ["verify", str(path), "--workers", "2"])
    assert one.exit_code == two.exit_code == 1
    assert two.stdout == one.stdout
    out = [json.loads(x) for x in two.stdout.splitlines()]
    errors = [v for v in out if "error" in v]
    assert len(out) == len([x for x in lines if x]) and errors
    assert {v["line"] for v in errors} == {
        n
        for n, x in enumerate(lines, 1)
        if x and "2094 introduces" not in x and "postponed" not in x and "rejected" not in x
    }
    assert [v["id"] for v in out if "id" in v] == list(range(1, 700, 2))
    assert f"{len(errors)} input line(s) could not be verified" in two.stderr


# --- replies of the model ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "reply, expected",
    [
        ("SUFFICIENT: 0.8", (True, 0.8, None)),
        ("- **SUFFICIENT**: 85%", (True, 0.85, None)),
        ('"SUFFICIENT"', (True, 0.7, None)),
        ("[INSUFFICIENT: how are RFCs merged]", (False, None, "how are RFCs merged")),
        ("insufficient - 'rfc process final comment period'", (False, None, "rfc process final comment period")),
    ],
)
def test_reason_replies_are_parsed_tolerantly(reply, expected):
    d = prompts.parse_decision(reply)
    assert (d.sufficient, d.confidence, d.query) == expected and d.parsed


def test_unparseable_reason_reply_counts_as_sufficient_but_is_flagged():
    d = prompts.parse_decision("I think we are good")
    assert d.sufficient and not d.parsed


def test_intent_and_decline():
    assert prompts.parse_intent("**Debugging**") == "debugging"
    assert prompts.parse_intent("It is a comparison, not factual") == "comparison"
    assert prompts.parse_intent("no idea") is None
    assert prompts.is_decline("NOT_FOUND") and prompts.is_decline("I don't know.")
    assert not prompts.is_decline("Not found in the evidence, but X is Y [E1]")


def _evidence(pointer: str, text: str, title: str = "T", section: str = "T") -> Evidence:
    return Evidence(pointer, text_hash(text), f"c{pointer}", text, title, section, "file:///x", pointer, "s", 0, 0.5)


def test_prompts_show_numbered_blocks():
    ev = [_evidence("E1", "Alpha text.", "Guide", "Guide > Setup"), _evidence("E2", "Beta text.", "Other", "")]
    user = prompts.respond_messages("q?", ev)[1]["content"]
    assert "[E1] Guide › Setup\nAlpha text.\n\n[E2] Other\nBeta text." in user
    for word in ("factual", "conceptual", "debugging", "comparison", "exploratory"):
        assert word in prompts.CLASSIFY_SYSTEM
    assert "SUFFICIENT:" in prompts.REASON_SYSTEM and "INSUFFICIENT:" in prompts.REASON_SYSTEM


# --- cache key ---------------------------------------------------------------------------------------------


def test_canonical_questions():
    assert cache.canonical_question("  How do I  Deploy?? ") == "how do i deploy"
    eq = "equivalence"
    assert (
        cache.canonical_question("How do I deploy the service?", eq)
        == cache.canonical_question("how to deploy service", eq)
        == cache.canonical_question("Can you tell me how to deploy the services, please?", eq)
    )
    assert cache.canonical_question("does A cause B", eq) != cache.canonical_question("does B cause A", eq)
    assert cache.canonical_question("why does it fail", eq) != cache.canonical_question("why does it not fail", eq)


def test_cache_key_changes_with_every_part():
    base = {
        "state": {"documents": "abc"},
        "question": "q",
        "model": {"model": "m"},
        "history": None,
        "scope": {"filters": None},
        "verifier": {"version": "1"},
    }
    k = cache.cache_key(base)
    assert k == cache.cache_key(dict(base)) and len(k) == 64
    for part, other in [
        ("state", {"documents": "abd"}),
        ("question", "q2"),
        ("model", {"model": "n"}),
        ("history", [{"role": "user", "content": "hi"}]),
        ("scope", {"filters": {"a": 1}}),
        ("verifier", {"version": "2"}),
    ]:
        assert cache.cache_key({**base, part: other}) != k, part


def test_scope_sources():
    assert cache.scope_sources(None) is None
    assert cache.scope_sources({"source": "docs"}) == ["docs"]
    assert cache.scope_sources({"source": {"$in": ["b", "a"]}}) == ["a", "b"]
    assert cache.scope_sources({"$and": [{"tags": "x"}, {"source": "s"}]}) == ["s"]
    assert cache.scope_sources({"$or": [{"source": "a"}, {"source": "b"}]}) is None


@pytest.mark.parametrize(
    "question, intent",
    [
        ("What is the default timeout?", "factual"),
        ("Why does the scheduler skip this job?", "conceptual"),
        ("the daemon fails to start after the upgrade", "debugging"),
        ("restarting shows a permission error", "debugging"),
        ("push mirrors vs pull mirrors", "comparison"),
        ("ideas for organising a large workspace", "exploratory"),
    ],
)
def test_intent_without_an_llm(question, intent):
    from pipeline.answers.loop import heuristic_intent

    assert heuristic_intent(question) == intent


@pytest.mark.parametrize(
    "question, debugging",
    [
        ("What does QX4021 mean here?", True),  # capitals then four digits: an error code
        ("the export stops at ABC-00931", True),
        ("where does ERR_WIDGET_GONE_AWAY come from", True),
        ("open returns EWIDGETGONE", True),  # an errno-style name, no English word
        ("What does qx4021 mean here?", False),  # codes are matched as documentation writes them
        ("What is the K12 setting for?", False),  # too few digits: a name, not a code
        ("how do I EXPOSE a port", False),  # a capitalised English word
        ("What is EOF?", False),
    ],
)
def test_an_error_code_in_the_question_asks_for_debugging(question, debugging):
    from pipeline.answers import lexicon
    from pipeline.answers.drafts import heuristic_intent

    if "EWIDGET" in question and not lexicon.available():
        pytest.skip("errno-style names are told from words by WordNet, not installed here")
    assert (heuristic_intent(question) == "debugging") is debugging


def test_a_quoted_answer_that_does_not_address_the_question_says_so_apart_from_its_mode():
    ev = {"E1": "The cache is stored in the cache directory. Set UV_CACHE_DIR to move it elsewhere."}
    on = verify(
        "Set UV_CACHE_DIR to move it elsewhere. [E1]", ev, question="Which environment variable moves the cache?"
    )
    assert on.audit_mode == "STRICT" and on.addresses_question and on.claims[0].addresses_question
    off = verify(
        "The cache is stored in the cache directory. [E1]", ev, question="Which environment variable moves the cache?"
    )
    assert off.audit_mode == "STRICT" and off.addresses_question is False  # quoted: "answers it" is said apart
    assert off.reason.startswith("deflection:") and "environment variable" in off.reason
    other = verify("The cache is stored in the cache directory. [E1]", ev, question="How do I reset my Jira password?")
    assert other.audit_mode == "STRICT" and other.addresses_question is False and "Jira" in other.reason
    assert "addresses_question" not in verify("The cache is stored in the cache directory. [E1]", ev).as_dict()


def test_subject_anchors_and_answer_shapes():
    from pipeline.answers import subject as sj

    assert sj.hard_anchors("How do I store Terraform state in an S3 bucket?") == ["Terraform", "S3"]
    assert sj.hard_anchors("What does `cargo build --release` do?") == ["cargo build --release"]
    assert sj.shape("Which environment variable sets the cache?") == "env"
    assert sj.has_shape("Use `UV_CACHE_DIR` to move it.", "env") and not sj.has_shape("Use a variable.", "env")
    assert sj.shape("How many connections are allowed?") == "number" and sj.shape("What does it do?") is None
    subj = sj.read("How do I reset my Jira password?")
    assert not sj.carried(subj, ["Reset the password from the account page."]).ok
    assert sj.carried(subj, ["Jira passwords are reset from the account page."]).ok


def test_a_question_framed_by_a_name_needs_a_line_that_speaks_of_both():
    from pipeline.answers import subject as sj

    subj = sj.read("What is the syntax of a list comprehension in Haskell?")
    passing = [
        "Consequently, Haskell does not need a special yield operator.",
        "That would resemble a list comprehension.",
    ]
    assert sj.unframed(subj, passing) == "Haskell"  # each half said, never together
    assert sj.unframed(subj, [*passing, "In Haskell a list comprehension is written with a bar."]) is None
    # the name may come from the line's document: its title and section are read with it
    assert sj.unframed(subj, ["Haskell: syntax\nComprehensions\nA list comprehension binds with a bar."]) is None
    # an acronym is not a framing name (HTTPS is often written "TLS" or "SSL" by the answer)
    assert sj.unframed(sj.read("How do I trust a certificate bundle for HTTPS?"), ["Trust a bundle."]) is None
    # the verifier reads it the same way: quoted right, but about the name in passing, is a deflection
    ev = {"E1": "Consequently, Haskell does not need a special yield operator."}
    q = "What is the syntax of a list comprehension in Haskell?"
    v = verify("Consequently, Haskell does not need a special yield operator. [E1]", ev, question=q)
    assert v.audit_mode == "STRICT" and v.addresses_question is False and "Haskell" in v.reason


def test_the_verifier_rules_are_the_params_file_s_and_a_fitting_run_can_change_them():
    from pipeline.answers.verify import POLICY, policy

    shipped = {k: v["value"] for k, v in json.loads(policy.SHIPPED.read_text())["rules"].items()}
    assert {"version": policy.POLICY_VERSION, "params": policy.DIGEST[:16], **shipped} == POLICY
    try:
        policy.use({"window": 30})
        assert policy.WINDOW == 30 and POLICY["window"] == 30
        with pytest.raises(KeyError, match="no such verifier rule"):
            policy.use({"windwo": 30})
    finally:
        policy.use({"window": shipped["window"]})


@pytest.mark.parametrize(
    "line",
    [
        'The Frobnicator handbook says "no longer ties a borrow to its lexical scope". [E1]',
        'According to the design note, "the borrow checker no longer ties a borrow". [E1]',
        'The RFC says "no longer ties a borrow to its lexical scope". [E1]',
    ],
)
def test_a_quote_attributed_to_any_named_source_passes(line):
    # the words naming where a quote comes from are no claim about the evidence, whatever the source is
    # called: no product's or corpus's name is written into the verifier
    c = one(line)
    assert c.verified and c.strategy == "quote", c.violations


def test_words_before_a_quote_that_say_more_than_its_source_are_checked():
    c = one('After three weeks of review in the Zurich office the team said "no longer ties a borrow". [E1]')
    assert not c.verified


def test_a_claim_saying_by_default_in_other_words_reads_as_by_default():
    from pipeline.answers.verify import defaults

    ev = "The default value is 60 seconds, which means that you can't cache an object more than 60 seconds."
    said = [
        "Out of the box, an object can be cached for at most one minute.",
        "If you don't specify it, an object can be cached for at most one minute.",
        "Unless configured otherwise, an object can be cached for at most one minute.",
    ]
    for claim in said:
        assert defaults.plain(claim, ev).startswith("by default, an object")
        assert one(f"{claim} [E1]", {"E1": ev}).verified, claim  # "don't" is no negation of the evidence's
    # the phrase going on names the alternative; evidence without a default, or saying the phrase, keeps it
    assert defaults.plain("It accepts unless you set it to drop.", ev) == "It accepts unless you set it to drop."
    assert defaults.plain("Out of the box, it caches.", "It caches for 60 seconds.") == "Out of the box, it caches."
    kept = "Unless configured otherwise, it caches."
    assert defaults.plain(kept, "Unless configured otherwise, it caches by default.") == kept
    assert not one("Out of the box, an object can be cached for at most ten minutes. [E1]", {"E1": ev}).verified


def test_a_code_span_is_read_as_written_its_spaces_before_punctuation_kept():
    # what a removed pointer leaves ("[E1] .") is squeezed; a code span is a quote and keeps its spacing
    ev = "Haskell writes it (`first_elem : rest_of_the_list`), F# (`first_elem :: rest_of_the_list`)."
    assert parse_claims(f"{ev} [E1]")[0].text == ev
    assert verify(f"{ev} [E1]", {"E1": ev}).audit_mode == "STRICT"
    assert parse_claims("It says so [E1] .")[0].text == "It says so."

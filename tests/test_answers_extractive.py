"""The extractive answerer: whole lines from typed blocks, general features, fitted parameters."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math

import numpy as np
import pytest

from pipeline.answers import calibrate, extractive, features, fit, params, shown, words
from pipeline.answers.model import Evidence, text_hash
from pipeline.answers.units import Unit, units
from pipeline.answers.verify import verify
from pipeline.errors import AnswerError
from pipeline.records import Block

SHIPPED = params.load(params.DEFAULT_MODEL)


def _evidence(pointer: str, text: str, blocks=(), title: str = "T", section: str = "T", doc: str | None = None):
    return Evidence(
        pointer,
        text_hash(text),
        f"c{pointer}",
        text,
        title,
        section,
        "file:///x",
        doc or pointer,
        "s",
        0,
        0.5,
        blocks=tuple(blocks),
    )


def _bag(texts):
    """A deterministic embedding: a normalised bag of word keys, hashed into 64 slots."""
    from pipeline.answers import words as tx

    out = []
    for t in texts:
        v = [0.0] * 64
        for k in tx.content_keys(t):
            v[int(hashlib.md5(k.encode()).hexdigest(), 16) % 64] += 1.0
        n = math.sqrt(sum(x * x for x in v)) or 1.0
        out.append([x / n for x in v])
    return out


def _blocks(text: str, *pieces: tuple[str, str]) -> list[Block]:
    """Blocks for the given (kind, verbatim piece) of `text`, as a parser would emit them."""
    out, at = [], 0
    for kind, piece in pieces:
        start = text.index(piece, at)
        out.append(Block(kind, start, start + len(piece)))
        at = start + len(piece)
    return out


def test_a_code_block_is_one_line_whole_and_a_paragraph_whole_sentences():
    sql = "SELECT name\n  FROM sqlite_master\n  WHERE type='table';"
    text = f"List the tables. Each row names one.\n\n{sql}\n\n- Rows are sorted by name"
    blocks = _blocks(
        text,
        ("paragraph", "List the tables. Each row names one."),
        ("code", sql),
        ("list_item", "Rows are sorted by name"),
    )
    got = [(u.kind, u.text) for u in units(_evidence("E1", text, blocks))]
    assert got == [
        ("sentence", "List the tables."),
        ("sentence", "Each row names one."),
        ("code", sql),  # the whole statement, never its middle line
        ("list_item", "Rows are sorted by name"),
    ]


def test_a_notes_title_is_no_line_of_its_own():
    text = "Note\n\nThe server must be stopped first. Then copy the files."
    blocks = _blocks(text, ("note", "Note"), ("note", "The server must be stopped first. Then copy the files."))
    got = [(u.kind, u.text, u.position) for u in units(_evidence("E1", text, blocks))]
    assert got == [("sentence", "The server must be stopped first.", 1), ("sentence", "Then copy the files.", 2)]


def test_a_table_row_keeps_its_header_and_a_chunk_without_blocks_is_split_by_paragraphs():
    text = "port | 8443\n\nThe proxy listens there."
    row = Block("table_row", 0, 11, header=("setting", "value"), cells=("port", "8443"))
    (first, second) = units(_evidence("E1", text, [row, *_blocks(text, ("paragraph", "The proxy listens there."))]))
    assert first.kind == "table_row" and first.header == ("setting", "value")
    plain = "Intro line here.\n\n```sh\nmake build\nmake test\n```\n\n- one item here\n- two item here"
    got = [(u.kind, u.text) for u in units(_evidence("E1", plain))]
    assert got == [
        ("sentence", "Intro line here."),
        ("code", "make build\nmake test"),
        ("list_item", "- one item here"),
        ("list_item", "- two item here"),
    ]
    assert second.before == first.text


def test_kinds_of_value_come_from_block_kinds_and_code_spans_not_names():
    def kinds(text, code=(), kind="sentence"):
        return features.kinds_of(Unit(text, kind, _evidence("E1", text), 1, tuple(code)))

    assert kinds("Edit the file.", ["payments.service"], "sentence")["path"] == 1.0  # any extension
    assert kinds("Edit the file.", ["conf/site.xyz"])["path"] == 1.0
    assert kinds("Pass the switch.", ["-SkipChecks"])["option"] == 1.0
    assert kinds("Set it.", ['timeout="30"'])["option"] == 1.0
    assert kinds("It waits 30 seconds.")["number"] == 1.0
    assert kinds("Nothing here at all.") == dict.fromkeys(features.KINDS, 0.0)


def test_extractive_quotes_the_line_that_answers_and_passes_strictly():
    text = "Deploys happen weekly. Releases go out with blue-green deployments through ArgoCD."
    ev = [
        _evidence("E1", text, _blocks(text, ("paragraph", text))),
        _evidence("E2", "Rollbacks switch traffic back to the blue stack within five minutes."),
    ]
    always = dataclasses.replace(SHIPPED, threshold=0.0, sure=0.0)  # the line model alone, labelled
    ex = extractive.extract("How do releases go out?", ev, always, embed=_bag)
    assert ex.lines and ex.lines[0] == ("Releases go out with blue-green deployments through ArgoCD.", ev[0])
    assert 0.0 < ex.confidence < 1.0
    raw = extractive.answer_text(ex.lines)
    assert verify(raw, {e.pointer: e.text for e in ev}).audit_mode == "STRICT"
    never = dataclasses.replace(SHIPPED, threshold=1.0)
    nothing = extractive.extract("How do releases go out?", ev, never, embed=_bag)
    assert nothing.lines == [] and "needed" in nothing.reason


def test_only_the_lines_worth_it_are_embedded_and_the_answer_is_the_same():
    filler = [f"Topic {n} covers widgets, gadgets and assorted parts in volume {n}." for n in range(40)]
    text = " ".join([*filler[:20], "Releases go out with blue-green deployments through ArgoCD.", *filler[20:]])
    ev = [_evidence("E1", text, _blocks(text, ("paragraph", text)))]
    seen: list[str] = []

    def counting(texts):
        seen.extend(texts[1:])  # the question first, then what is embedded as documents
        return _bag(texts)

    always = dataclasses.replace(SHIPPED, threshold=0.0)
    r = extractive.rank("How do releases go out?", ev, always, embed=counting)
    lines = [t for t in seen if t in {u.text for u in r.units}]
    assert len(r.units) == 41 and len(lines) == extractive.EMBEDDED  # the rest are never embedded
    assert np.isinf(r.logits).sum() == 41 - extractive.EMBEDDED
    every = extractive.rank("How do releases go out?", ev, always, embed=_bag, embedded=0)
    assert np.isfinite(every.logits).all()
    best = extractive.decide("How do releases go out?", r, always).lines
    full = extractive.decide("How do releases go out?", every, always).lines
    # the same answer line; a line never embedded may only be missing from the tail (a filler line the
    # full pass adds as a second line with the refitted parameters)
    assert best == full[: len(best)] and best[0][0] == "Releases go out with blue-green deployments through ArgoCD."


def test_a_line_introducing_code_brings_the_whole_block():
    code = "ENV LINKS=copy\nRUN make install"
    text = f"To copy files instead of linking them, set:\n\n{code}"
    blocks = _blocks(text, ("paragraph", "To copy files instead of linking them, set:"), ("code", code))
    r = extractive.rank("How do I copy files instead of linking them?", [_evidence("E1", text, blocks)], SHIPPED)
    big = np.zeros_like(r.logits)
    big[0] = 5.0
    chosen = shown.choose(extractive.Ranked(r.question, r.units, r.x, big), [0, 1], 0.99, 4)
    assert [u.text for u in chosen] == ["To copy files instead of linking them, set:", code]


def test_a_definition_comes_under_its_term():
    # an HTML manual documents an option as <dt>term</dt><dd>definition</dd>: the definition is the line
    # that matches the question, the term is the name the reader asked for
    term, definition = "`krb_caseins_users` (`boolean`)", "Sets whether GSSAPI user names are case-insensitive."
    text = f"Settings\n\n{term}\n\n{definition}"
    blocks = _blocks(text, ("paragraph", "Settings"), ("term", term), ("definition", definition))
    ev = _evidence("E1", text, blocks)
    always = dataclasses.replace(SHIPPED, threshold=0.0, sure=0.0)
    ex = extractive.extract("How do I make GSSAPI user names case-insensitive?", [ev], always, embed=_bag)
    assert [t for t, _ in ex.lines][:2] == [term, definition]
    assert verify(extractive.answer_text(ex.lines), {"E1": text}).audit_mode == "STRICT"


def test_an_entry_is_quoted_whole_term_first():
    # a manual's option: its name, what it does, its default; the line that matches is the middle one
    term = "`max_msg_size` (`integer`)"
    body = ("Sets the largest message the server accepts, in bytes.", "The default is 52428800.")
    text = f"Limits\n\n{term}\n\n{body[0]}\n\n{body[1]}\n\n`next_option`\n\nSomething else."
    blocks = _blocks(
        text,
        ("paragraph", "Limits"),
        ("term", term),
        ("definition", body[0]),
        ("definition", body[1]),
        ("term", "`next_option`"),
        ("definition", "Something else."),
    )
    ev = _evidence("E1", text, blocks)
    r = extractive.rank("What is the largest message the server accepts?", [ev], SHIPPED, embed=_bag)
    best = [u.text for u in r.units].index(body[0])
    big = np.full(len(r.units), -5.0)
    big[best] = 5.0
    chosen = shown.choose(extractive.Ranked(r.question, r.units, r.x, big), [best], 0.9, 4)
    assert [u.text for u in chosen] == [term, *body]  # the whole entry, not the next one
    assert verify(extractive.answer_text([(u.text, ev) for u in chosen]), {"E1": text}).audit_mode == "STRICT"


def _entry_section(body: list[str]):
    """An entry section as the HTML parser makes it from a reference's <dl> of parameters: the entry's
    term and default its first line, its heading path ending with the term."""
    from pipeline.parse.html import parse_html

    def dd(i: int) -> str:
        paras = body if i == 3 else [f"What setting {i} of the server does when it reads a message."]
        return "".join(f"<p>{p}</p>" for p in paras)

    dl = "".join(
        f'<dt><b><a name="limit_{i}">limit_{i}</a> (default: {i}00)</b></dt><dd>{dd(i)}</dd>' for i in range(12)
    )
    sec = next(
        s
        for s in parse_html(f"<h1>Parameters</h1><h2>Format</h2><dl>{dl}</dl>").sections
        if s.heading_path[-1] == "limit_3"
    )
    ev = _evidence("E1", sec.text, sec.blocks, section=" > ".join(sec.heading_path))
    return ev, units(ev)


def _choose_line(ev, line: str):
    r = extractive.rank("What does limit 3 do?", [ev], SHIPPED, embed=_bag)
    best = [u.text for u in r.units].index(line)
    logits = np.full(len(r.units), -5.0)
    logits[best] = 5.0
    chosen = shown.choose(extractive.Ranked(r.question, r.units, r.x, logits), [best], 0.9, 4)
    unsure = shown.candidates(extractive.Ranked(r.question, r.units, r.x, logits), [best])
    return [u.text for u in chosen], [u.text for u in unsure]


def test_an_entry_section_is_quoted_whole_its_first_line_with_the_default_first():
    # eight short paragraphs: longer than a term-and-definition entry quoted whole (ENTRY_LINES)
    body = [f"Rule {n} of the limit applies to every client that connects." for n in range(8)]
    ev, lines = _entry_section(body)
    assert lines[0].text == "limit_3 (default: 300)"
    chosen, unsure = _choose_line(ev, body[4])
    assert chosen == ["limit_3 (default: 300)", *body]
    assert unsure == chosen  # unsure, an entry within a passage's words is offered whole too
    # unsure, a longer one: the entry's first line above its best line and the lines around it, bounded
    body = [f"Rule {n} of the limit applies to every client that connects." for n in range(20)]
    ev, lines = _entry_section(body)
    unsure = _choose_line(ev, body[4])[1]
    assert unsure[0] == "limit_3 (default: 300)" and body[4] in unsure
    rest = unsure[1:]
    assert rest == body[body.index(rest[0]) : body.index(rest[0]) + len(rest)] and len(rest) < len(body)
    assert sum(len(words.words(t)) for t in unsure) <= shown.PASSAGE_WORDS
    assert verify(extractive.answer_text([(t, ev) for t in chosen]), {"E1": ev.text}).audit_mode == "STRICT"


def test_a_candidate_on_an_entry_s_first_line_shows_the_entry_under_it():
    body = ["Sets how many clients may connect.", "The default suits most servers."]
    ev, _ = _entry_section(body)
    _, unsure = _choose_line(ev, "limit_3 (default: 300)")
    assert unsure == ["limit_3 (default: 300)", *body]  # a short entry whole, its name first, once


def test_a_long_entry_section_gives_its_first_line_and_the_line_and_other_sections_only_the_line():
    body = [f"Rule {n} of this limit applies to {'every client that connects to the server ' * 3}." for n in range(9)]
    ev, _ = _entry_section(body)
    assert _choose_line(ev, body[8])[0] == ["limit_3 (default: 300)", body[8]]
    plain = dataclasses.replace(ev, section="Parameters > Format")  # its first line is not its heading
    assert _choose_line(plain, body[8])[0] == [body[8]]


def test_a_better_ranked_page_loses_only_by_more_than_the_fitted_margin():
    x = np.zeros((3, len(features.LINE)))
    x[:, features.LINE.index("doc_rr")] = [0.5, 1.0, 1.0]  # line 0 on the second page, 1 and 2 on the first
    close = np.array([2.0, 1.6, 0.1])
    assert int(np.argmax(extractive.agree(x, close, 0.5))) == 1  # 0.4 ahead: not enough to overrule search
    assert int(np.argmax(extractive.agree(x, close, 0.0))) == 0  # no margin fitted: the line model alone
    far = np.array([3.0, 1.6, 0.1])
    assert int(np.argmax(extractive.agree(x, far, 0.5))) == 0  # 1.4 ahead: a measured reason to
    assert list(extractive.agree(x, close, 0.5))[2] == 0.1  # nothing else moves


def test_below_the_fitted_sure_it_offers_the_best_lines_of_different_sections():
    pages = [
        _evidence("E1", "Backups run nightly at 02:00. Backups are kept 30 days.", section="Backups", doc="a"),
        _evidence("E2", "Restores are run by the on-call engineer.", section="Restores", doc="a"),
        _evidence("E3", "Snapshots of backups are taken hourly.", section="Snapshots", doc="b"),
    ]
    q = "When do backups run?"
    unsure = extractive.extract(q, pages, dataclasses.replace(SHIPPED, threshold=0.0, sure=1.0), embed=_bag)
    where = [(e.doc_key, e.section) for _, e in unsure.lines]
    assert not unsure.sure and 2 <= len(set(where)) <= shown.CANDIDATES
    assert where == sorted(where, key=where.index)  # one passage per section, best first
    # the best line with the sentence that completes it, as the page reads
    assert [t for t, _ in unsure.lines[:2]] == ["Backups run nightly at 02:00.", "Backups are kept 30 days."]
    sure = extractive.extract(q, pages, dataclasses.replace(SHIPPED, threshold=0.0, sure=0.0), embed=_bag)
    assert sure.sure and sure.lines[0][0] == "Backups run nightly at 02:00."
    assert sure.single == unsure.single  # the label moves with the threshold, not the probability
    assert sure.confidence == sure.single  # labelled: the answer's confidence; unsure: the candidates' (`shown`)
    r = extractive.rank(q, pages, SHIPPED, embed=_bag)
    offered = shown.candidates(r, r.order())
    assert [u.text for u in offered] == [t for t, _ in unsure.lines]
    m = SHIPPED.shown
    assert m is None or unsure.confidence == round(float(m.prob(r.shown_x(offered, m.names))), 3)


def test_the_shown_model_reads_what_the_offered_passages_hold():
    pages = [
        _evidence("E1", "Backups run nightly at 02:00.", section="Backups", doc="a"),
        _evidence("E2", "Restores are run by the on-call engineer.", section="Restores", doc="b"),
    ]
    r = extractive.rank("When do nightly backups run?", pages, SHIPPED, embed=_bag)
    by = {u.evidence.pointer: u for u in r.units}
    col = {n: i for i, n in enumerate(features.SHOWN)}
    held, other = r.shown_x([by["E1"]]), r.shown_x([by["E2"]])
    assert held[col["offered_cover"]] > other[col["offered_cover"]]
    assert held[col["offered_want"]] != other[col["offered_want"]]  # a time asked for; one line holds one
    assert held[col["offered_top"]] == 1.0 and other[col["offered_top"]] == 0.0  # search ranked "a" first
    # what the passages hold comes after the one answer's features: a model fitted on those reads them alone
    assert list(r.shown_x([by["E2"]], features.CONFIDENCE)) == list(r.confidence_x())


def test_a_section_another_document_already_shows_takes_no_candidate_place():
    # a manual's per-chapter page and its one-page copy hold the same long section; other sections differ
    nouns = "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike".split()
    nouns += "november oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu".split()
    steps = [f"Check {a} {b} {a}{b} {b}{a} then {a}-{b} and {b}-{a}." for a, b in zip(nouns, nouns[1:], strict=False)]
    assert sum(len(words.words(s)) for s in steps) > shown.PASSAGE_WORDS + 10  # its last step past a passage
    faq = " ".join(steps)
    pages = [
        _evidence("E1", faq, section="FAQ > Missing files", doc="faq/missing.html"),
        _evidence("E2", faq, section="Questions > Missing files", doc="faq.html"),
        _evidence("E3", "Documentation builds need AsciiDoc 8.6.3 or newer.", section="Docs", doc="build.html"),
        _evidence("E4", "Intro. " + steps[0] + " A line only this page has.", section="Other", doc="other.html"),
    ]
    r = extractive.rank("Why does the build fail with missing files?", pages, SHIPPED, embed=_bag)
    at = {(u.evidence.pointer, u.text): i for i, u in enumerate(r.units)}
    logits = np.full(len(r.units), -5.0)
    logits[at[("E1", steps[0])]] = 5.0  # its passage: the first lines, not the last (PASSAGE_WORDS)
    logits[at[("E2", steps[-1])]] = 4.0  # new to the reader, but the shown chunk holds it
    logits[at[("E4", "A line only this page has.")]] = 3.0  # holds a shown line, and one of its own
    logits[at[("E3", "Documentation builds need AsciiDoc 8.6.3 or newer.")]] = 2.0
    ranked = extractive.Ranked(r.question, r.units, r.x, logits)
    offered = shown.candidates(ranked, ranked.order(), 3)
    assert steps[-1] not in {u.text for u in offered}
    assert list(dict.fromkeys(u.evidence.doc_key for u in offered)) == ["faq/missing.html", "other.html", "build.html"]


def _long_section(last: str) -> tuple[extractive.Ranked, dict[str, int], np.ndarray]:
    """A long section whose best line opens it and whose `last` line sits far below, past the passage's
    words, beside a second section's line: ranked, each line's place, logits with those two set."""
    names = [f"{a}{b}" for a in "abcdefgh" for b in "xyz"][: shown.PASSAGE_WORDS // 9 + 4]  # past a passage
    filler = [f"Paragraph {w} explains {w} handling, {w} limits and {w} logs." for w in names]
    text = " ".join(["The shell connects to the server.", *filler, last])
    ev = _evidence("E1", text, section="Shell > Usage", doc="shell.html")
    other = _evidence("E2", "Timeouts are constants of the source.", section="Timeouts", doc="hooks.html")
    r = extractive.rank("How long does the shell wait for the server?", [ev, other], SHIPPED, embed=_bag)
    at = {u.text: i for i, u in enumerate(r.units)}
    logits = np.full(len(r.units), -5.0)
    logits[at["The shell connects to the server."]] = 1.44
    logits[at["Timeouts are constants of the source."]] = 1.3
    return r, at, logits


def test_a_candidate_brings_the_lines_of_its_chunk_scoring_close_to_its_best():
    r, at, logits = _long_section("If not given, 10 seconds is used.")
    logits[at["If not given, 10 seconds is used."]] = 1.43 - shown.CLOSE_LOGITS * 2  # far below: not shown
    ranked = extractive.Ranked(r.question, r.units, r.x, logits)
    texts = [u.text for u in shown.candidates(ranked, ranked.order(), 2)]
    assert "If not given, 10 seconds is used." not in texts and texts[-1] == "Timeouts are constants of the source."
    logits[at["If not given, 10 seconds is used."]] = 1.43  # close to the best: it comes with its section
    ranked = extractive.Ranked(r.question, r.units, r.x, logits)
    texts = [u.text for u in shown.candidates(ranked, ranked.order(), 2)]
    assert texts.index("The shell connects to the server.") < texts.index("If not given, 10 seconds is used.")
    assert texts[-1] == "Timeouts are constants of the source."  # still a second section
    assert sum(len(words.words(t)) for t in texts) <= shown.PASSAGE_WORDS + shown.CLOSE_LINES * shown.CLOSE_WORDS + 10


def test_a_candidate_brings_its_chunks_line_nearest_the_question_by_meaning():
    # the line model prefers the line repeating the question's words; the embedding model finds the answer nearer
    r, at, logits = _long_section("The default is 32 minutes.")
    answer, best = at["The default is 32 minutes."], at["The shell connects to the server."]
    x = r.x.copy()
    col = features.LINE.index("sim")
    x[:, col] = 0.2
    x[best, col], x[answer, col] = 0.5, 0.45  # less near than the best line: not shown
    ranked = extractive.Ranked(r.question, r.units, x, logits)
    assert "The default is 32 minutes." not in [u.text for u in shown.candidates(ranked, ranked.order(), 2)]
    x[answer, col] = 0.55  # nearer the question than the best line: it comes with its section, after it
    ranked = extractive.Ranked(r.question, r.units, x, logits)
    texts = [u.text for u in shown.candidates(ranked, ranked.order(), 2)]
    assert texts.index("The shell connects to the server.") < texts.index("The default is 32 minutes.")
    assert texts[-1] == "Timeouts are constants of the source."  # still a second section
    logits[answer] = -np.inf  # a line not embedded (not ranked) is never brought
    ranked = extractive.Ranked(r.question, r.units, x, logits)
    assert "The default is 32 minutes." not in [u.text for u in shown.candidates(ranked, ranked.order(), 2)]


def test_the_sure_threshold_is_chosen_for_precision_on_left_out_predictions():
    lo = calibrate.LeftOut(
        ["a"] * 6 + ["b"] * 4,
        np.array([True] * 9 + [False]),
        np.array([0.95, 0.9, 0.85, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2]),
        np.array([True, True, True, True, True, False, True, False, False, False]),
        np.array([True] * 7 + [False] * 3),  # the last three unanswerable: two answered, at 0.4 and 0.3
    )
    t = calibrate.sure_threshold(lo, 0.9, z=0.0)  # no margin: the measured precision
    assert t == 0.7  # 0.5 labels 7 with 6 right (0.86), 0.6 labels 6 with 5; 0.7: 5 of 5
    # with the margin, 5 of 5 bound the precision below by 0.83 (Wilson, one standard error): enough for 0.75
    assert calibrate.sure_threshold(lo, 0.75) == 0.7
    assert calibrate.sure_threshold(lo, 0.9) == 1.0  # too few to be sure of 0.9: nothing labelled
    assert round(calibrate.wilson_lower(5, 5, 1.28), 2) == 0.75 and calibrate.wilson_lower(0, 0, 1.28) == 0.0
    assert calibrate.floor_threshold(lo) == 0.45  # abstains on both unanswerable, not on the answerable at 0.5
    ece, auroc = calibrate.calibration(np.array([0.9, 0.8, 0.2, 0.1]), np.array([True, True, False, False]))
    assert auroc == 1.0 and 0.0 < ece < 0.25
    _, tied = calibrate.calibration(np.array([0.5, 0.5]), np.array([True, False]))
    assert tied == 0.5


def test_parameters_are_one_versioned_file_with_a_digest(tmp_path):
    raw = json.loads(params.file_for(params.DEFAULT_MODEL).read_text())
    assert set(raw["line"]["names"]) == set(features.LINE) and 0.0 < raw["threshold"] < 1.0
    other = tmp_path / "p.json"
    follow = round(raw["follow"] + 0.05, 2)  # anything but the shipped share
    params.write(other, {k: v for k, v in raw.items() if k != "format"} | {"follow": follow})
    p = params.load("any-model", other)
    assert p.follow == follow and p.digest != SHIPPED.digest and len(params.code_digest()) == 64
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"format": params.FORMAT}))
    with pytest.raises(AnswerError, match="docforge tune"):
        params.load("any-model", bad)
    old = tmp_path / "old.json"  # a team's file fitted before the features changed
    old.write_text(json.dumps(raw | {"format": params.FORMAT - 1}))
    with pytest.raises(AnswerError, match=f"format {params.FORMAT - 1}, expected {params.FORMAT}.*docforge tune"):
        params.load("any-model", old)


def test_the_logistic_fit_separates_what_it_is_shown():
    rng = np.random.default_rng(7)
    x = rng.normal(size=(400, 2))
    y = (x[:, 0] - 0.5 * x[:, 1] > 0).astype(float)
    m = fit.logistic(x, y, ("a", "b"))
    assert ((m.prob(x) > 0.5) == (y > 0)).mean() > 0.95 and m.weights[0] > 0 > m.weights[1]


def test_the_precision_target_is_measured_leaving_one_corpus_out():
    """Three corpora whose answerable questions have one line that stands out: with a corpus left out,
    the others' fit answers every answerable question of it, and abstains on more unanswerable ones
    the higher the target."""
    rng = np.random.default_rng(3)
    sim = features.LINE.index("sim")
    asked = []
    for corpus in ("a", "b", "c"):
        for i in range(24):
            answerable = i % 3 != 0
            x = rng.normal(0, 0.05, size=(6, len(features.LINE)))
            x[:, sim] += 0.2
            y = np.zeros(6)
            if answerable:
                x[2, sim], y[2] = 0.9, 1.0
            us = [Unit(f"line {n}", "sentence", _evidence("E1", "text", doc=f"{corpus}{i}"), n) for n in range(6)]
            q = features.Question({"line": 1.0}, 0.0, dict.fromkeys(features.KINDS, 0.0))
            asked.append(fit.Asked(corpus, f"q{i}", answerable, q, x, y, us, ["line 2"] if answerable else []))
    table = fit.abstentions_left_out(asked, [0.8, 1.0])
    (low_right, low_un, low_wrong, low_ans), (high_right, high_un, high_wrong, high_ans) = table.values()
    assert (low_un, low_ans) == (high_un, high_ans) == (24, 48)  # every left-out question counted once
    assert high_right == 24 > low_right  # at 1.0 every unanswerable one abstains; at 0.8 some are answered
    assert low_wrong == 0 and high_wrong <= 48 // 4  # the price of the higher target: some answerable ones


def test_labelled_questions_are_read_with_clear_errors(tmp_path):
    f = tmp_path / "q.jsonl"
    f.write_text('{"question": "How?", "phrases": ["x"]}\n{"question": "Why?", "phrases": null}\n')
    assert len(fit.read_questions(f)) == 2
    f.write_text('{"question": "How?", "phrases": "x"}\n')
    with pytest.raises(AnswerError, match="q.jsonl:1: 'phrases' must be"):
        fit.read_questions(f)


def test_a_phrase_is_found_as_a_reader_reads_the_line():
    # the parsers keep inline code as backticks; a phrase copied from the page has none, and a line that
    # says it must count as holding it, in the fit's labels and in the benches alike
    holds_phrase = fit.holds_phrase
    line = "`TRUNCATE` will not fire any `ON DELETE`  triggers that might exist."
    assert holds_phrase(line, ["will not fire any ON DELETE triggers"])
    assert holds_phrase(line, ["nothing like it", "TRUNCATE will not"])
    assert not holds_phrase(line, ["will fire ON DELETE triggers"])
    assert not holds_phrase(line, [])


REFERENCE = """<html><head><title>Reference</title></head><body><h1>Reference</h1><h2>3. Variables</h2>
<div class="sect2"><h3>3.1. delete</h3><p>Type: quadoption<br/>Default: ask-yes</p>
<p>Controls whether messages are really deleted when a mailbox is closed.</p></div>
<div class="sect2"><h3>3.2. delete_untag</h3><p>Type: boolean<br/>Default: yes</p>
<p>If this option is set, tagged messages are untagged when marked for deletion.</p></div>
</body></html>"""


def test_a_packed_entrys_lines_are_shown_under_its_heading():
    from pipeline.chunk import Chunker
    from pipeline.config import EmbeddingConfig
    from pipeline.embed import Embedder
    from pipeline.parse.html import parse_html

    (chunk,) = Chunker(Embedder(EmbeddingConfig()).tokenizer, 256).chunk("Reference", parse_html(REFERENCE).sections)
    assert chunk.heading_path[-1] == "3. Variables"  # both entries packed in one chunk, under their parent
    ev = _evidence("E1", chunk.text, chunk.blocks)
    lines = units(ev)
    assert [u.heading for u in lines] == ["3.1. delete"] * 2 + ["3.2. delete_untag"] * 2
    untag = next(u for u in lines if u.text.startswith("If this option"))
    shown_lines = [(u.kind, u.text) for u in shown.passage(untag, 80)]
    assert shown_lines == [
        ("heading", "3.1. delete"),  # the words grown into an entry before it come under its own name
        ("sentence", "Type: quadoption Default: ask-yes"),
        ("sentence", "Controls whether messages are really deleted when a mailbox is closed."),
        ("heading", "3.2. delete_untag"),
        ("sentence", "Type: boolean Default: yes"),
        ("sentence", "If this option is set, tagged messages are untagged when marked for deletion."),
    ]
    assert all(h in chunk.text for k, h in shown_lines if k == "heading")  # verbatim: quoted, as every line
    assert shown.passage(untag, 20)[0].text == "3.2. delete_untag"  # its own entry first, under its name
    scored = dataclasses.make_dataclass("Scored", ["units", "logits", "sims"])
    r = scored(lines, np.array([0.0, -1.0, -2.0, 3.0]), np.zeros(4))
    chosen = shown.choose(r, [3, 0, 1, 2], follow=0.99, max_lines=1)  # a sure answer: the line, named
    assert [u.text for u in chosen] == ["3.2. delete_untag", untag.text]
    # unsure: a line of the chunk scoring close to the best comes with it, and the candidate reads in
    # the chunk's order, each entry under its name, whatever order the lines scored in
    r = scored(lines, np.array([2.8, -5.0, -5.0, 3.0]), np.zeros(4))
    offered = [u.text for u in shown.candidates(r, [3, 0, 2, 1], n=1)]
    assert offered.index("3.1. delete") < offered.index("Type: quadoption Default: ask-yes")
    assert offered.index("Type: quadoption Default: ask-yes") < offered.index("3.2. delete_untag")
    assert offered.index("3.2. delete_untag") < offered.index(untag.text)


IDS = "Transaction IDs are 31-bit unsigned integers, which gives just over two billion of them."


def test_a_close_line_repeating_its_heading_s_words_is_still_brought(monkeypatch):
    # a heading names what its lines speak of: a line saying more with the heading's words is no repeat of it
    from pipeline.chunk import Chunker
    from pipeline.config import EmbeddingConfig
    from pipeline.embed import Embedder
    from pipeline.parse.html import parse_html

    monkeypatch.setattr(shown, "PASSAGE_WORDS", 40)  # the best line's passage fills with the steps after it
    filler = " ".join(f"Step {w} of the recovery reads the {w} log file again." for w in "abcd")
    page = f"""<html><head><title>Limits</title></head><body><h1>Limits</h1><h2>1. Transactions</h2>
<div class="sect2"><h3>Transaction IDs</h3><p>{IDS}</p>
<p>The IDs wrap when the largest one is reached.</p><p>{filler}</p></div>
<div class="sect2"><h3>Cursors</h3><p>A cursor belongs to one transaction.</p></div></body></html>"""
    (chunk,) = Chunker(Embedder(EmbeddingConfig()).tokenizer, 256).chunk("Limits", parse_html(page).sections)
    lines = units(_evidence("E1", chunk.text, chunk.blocks))
    at = {u.text: i for i, u in enumerate(lines)}
    ids, wrap = at[IDS], at["The IDs wrap when the largest one is reached."]
    assert lines[ids].heading == "Transaction IDs"
    assert shown._same(lines[ids], shown._heading(lines[ids])) is False
    logits = np.full(len(lines), -5.0)
    logits[wrap], logits[ids] = 3.0, 2.8  # close to the best line, past what its passage grows into
    scored = dataclasses.make_dataclass("Scored", ["units", "logits", "sims"])
    r = scored(lines, logits, np.zeros(len(lines)))
    assert lines[ids] not in shown.passage(lines[wrap], shown.PASSAGE_WORDS)
    offered = [u.text for u in shown.candidates(r, list(np.argsort(-logits)), n=1)]
    assert offered[:3] == ["Transaction IDs", lines[ids].text, lines[wrap].text]

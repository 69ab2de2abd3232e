"""Checking claims: quoted (quote, span: lexical proof), else the exact checks and the calibrated model."""

from __future__ import annotations

from dataclasses import dataclass, field

import pipeline.answers.verify.defaults as defaults
import pipeline.answers.verify.features as features
import pipeline.answers.verify.judge as judge
import pipeline.answers.verify.logic as logic
import pipeline.answers.verify.policy as policy
from pipeline.answers import words as tx
from pipeline.answers.model import STRATEGIES, Claim
from pipeline.answers.verify.anchors import anchor_problems, anchors, proper_nouns
from pipeline.answers.verify.blocks import CitedBlock
from pipeline.answers.verify.features import ClaimReading
from pipeline.answers.verify.sense import sense_problems

_QUOTED = tx.QUOTED
_ATTRIBUTION = frozenset(
    tx.stem(w)
    for w in """say says said state states stated note notes noted write writes
wrote written describe describes described call calls called explain explains explained mention mentions
mentioned read reads according document documentation page manual guide section evidence text quote quoted put
word words phrase term define defines defined refer refers referred specify specifies specified""".split()
)
# A quote's attribution is a source's name and its verb ("The Foo 2.1 manual says"): longer, the
# words before the quote say something of their own and are checked as any claim's words.
_SOURCE_WORDS = 6
_VERDICT_WORDS = frozenset({"yes", "no", "true", "false", "correct", "incorrect", "right", "wrong"})


def _source(s: str) -> set[str]:
    """The keys of the words before a claim's first quote when they attribute it ("The Foo guide says
    \"…\"", "According to the Foo guide, \"…\""): they name its source, not something it claims."""
    ks = tx.keys(tx.words(_QUOTED.split(tx.ascii_quotes(s))[0]))
    return set(ks) if len(ks) <= _SOURCE_WORDS and _ATTRIBUTION.intersection(ks) else set()


def check_claim(text: str, pointers: tuple[str, ...], blocks: dict[str, CitedBlock]) -> Claim:
    """Verify one claim against the blocks it cites."""
    return check_claims([(text, pointers, blocks)])[0]


@dataclass
class Pending:
    """A claim the calibrated model judges: its reworded sentences' readings, merged into one."""

    text: str
    pointers: tuple[str, ...]
    cited: list[CitedBlock]
    violations: list[str]
    readings: list[tuple[str, ClaimReading]] = field(default_factory=list)
    x: dict[str, float] = field(default_factory=dict)


def check_claims(claims: list[tuple[str, tuple[str, ...], dict[str, CitedBlock]]]) -> list[Claim]:
    """Verify claims ((text, pointers, the blocks of its answer) each) against the blocks they cite: quoted
    ones by lexical proof, the others by the calibrated model, their embedding work (and the NLI judge's)
    in one batch, whichever answers they come from."""
    out: list[Claim | Pending] = [first_pass(t, p, blocks) for t, p, blocks in claims]
    pending = [c for c in out if isinstance(c, Pending)]
    if pending:
        features.aligned([r for c in pending for r in c.readings], [c.cited for c in pending for _ in c.readings])
        base, with_nli = judge.current()
        judge_nli = judge.nli() if with_nli is not None else None
        if judge_nli is not None:
            pairs = [(logic.align(s, features.sentences_of(c.cited)), s) for c in pending for s, _ in c.readings]
            it = iter(judge_nli.scores(pairs))
            for c in pending:
                for _, r in c.readings:
                    r.x["nli"] = next(it)
        for c in pending:
            c.x = merged([r for _, r in c.readings])
        model = with_nli if judge_nli is not None else base
        out = [_decide(c, model) if isinstance(c, Pending) else c for c in out]
    return out  # type: ignore[return-value]


def merged(readings: list[ClaimReading]) -> dict[str, float]:
    """One claim's features from its sentences': the weakest support, the worst problem."""
    names = readings[0].x.keys()
    return {n: (min if n in features.HIGHER_IS_BETTER else max)(r.x[n] for r in readings) for n in names}


def first_pass(text: str, pointers: tuple[str, ...], blocks: dict[str, CitedBlock]) -> Claim | Pending:
    """A claim decided without the model (no evidence, quoted, refused by an exact check), or its readings."""
    if not pointers:
        return _refused(text, pointers, ["no pointer: the claim cites no evidence"])
    violations = [f"pointer {p} names no evidence block" for p in pointers if p not in blocks]
    cited = [blocks[p] for p in pointers if p in blocks]
    if not cited:
        return _refused(text, pointers, violations)
    whole = _quoted(text, cited)
    if whole is not None and not whole[1] and not violations:
        return Claim(text, pointers, True, whole[0], support="quoted")
    sentences = [text] if len(tx.split_sentences(text)) < 2 else [s for s in tx.split_sentences(text) if tx.words(s)]
    pending = Pending(text, pointers, cited, violations)
    strategies = []
    evidence = " ".join(b.text for b in cited)
    for s in sentences:
        q = _quoted(s, cited) or (None, [])
        violations += q[1]
        if q[0] is not None:
            strategies.append(q[0])
            continue
        if (why := _degenerate(s)) is not None:
            if why:
                violations.append(why)
            continue
        s = defaults.plain(s, evidence)  # "unless you change it": "by default"
        reading = features.read(s, cited)
        violations += reading.hard
        pending.readings.append((s, reading))
    if violations:
        return _refused(text, pointers, violations)
    if not pending.readings:  # every sentence quoted (or a bare yes/no beside them)
        strict = len(strategies) == len(sentences)
        return Claim(
            text,
            pointers,
            True,
            max(strategies, key=STRATEGIES.index) if strategies else "reworded",
            support="quoted" if strict else "supported",
        )
    return pending


def _refused(text: str, pointers: tuple[str, ...], violations: list[str], p: float | None = None) -> Claim:
    return Claim(text, pointers, False, None, tuple(dict.fromkeys(violations)), support="unsupported", probability=p)


def _decide(c: Pending, model: judge.Model | None) -> Claim:
    """The model's verdict on a reworded claim, with its probability and, when refused, why."""
    soft = list(dict.fromkeys(p for _, r in c.readings for p in r.soft))
    missing = list(dict.fromkeys(w for _, r in c.readings for w in r.missing))
    if model is None:  # no fitted model: every word found, no sense problem (what a fitting run starts from)
        ok = c.x["wordnet"] >= 1 and not soft
        p, threshold = (1.0 if ok else 0.0), 0.5  # p is 0 or 1: any threshold between says the same
    else:
        p, threshold = model.probability(c.x), model.threshold
    p = round(p, 4)
    if p >= threshold:
        return Claim(c.text, c.pointers, True, "reworded", support="supported", probability=p)
    why = soft + ([f"not in the cited evidence: {', '.join(missing[:6])}"] if missing else [])
    why.append(f"P(supported) {p:.2f} is below {threshold:.2f}")
    return _refused(c.text, c.pointers, why, p)


def _degenerate(s: str) -> str | None:
    """ "" for a bare yes/no (it asserts nothing the evidence could contradict lexically: passes, never
    quoted), a reason for a claim that repeats words instead of saying something, None otherwise."""
    norm = tx.normalise(s)
    if norm.strip() == "":
        return "empty claim"
    if set(norm.split()) <= _VERDICT_WORDS:
        return ""
    content = [w for w in tx.words(s) if tx.is_content(w)]
    if len(content) >= 2 and len(set(content)) / len(content) <= policy.REPEAT_MAX:
        return (
            f"degenerate: {len(content)} content words but {len(set(content))} distinct; it repeats"
            " words instead of saying something the evidence could support"
        )
    return None


def _quoted(s: str, cited: list[CitedBlock]) -> tuple[str, list[str]] | None:
    """("quote" | "span", problems) when the sentence is quoted from the evidence, else None."""
    strategy = _quote(s, cited) or _span(tx.normalise(s), cited)
    if strategy is None:
        return None
    if strategy == "span":  # the words as written, but a value cut short ("HH:MM" of "HH:MM:SS") is no quote
        anc = anchors(s)
        return strategy, [p for p in anchor_problems(anc, cited) if p.startswith(("identifier", "the quoted"))]
    anc = anchors(s)  # "The page says …": the attribution is no claim about the evidence
    source = _source(s)
    anc.proper = [p for p in anc.proper if not set(tx.key(w) for w in p.split()) <= _ATTRIBUTION | source]
    problems = anchor_problems(anc, cited)
    problems += [p for p in sense_problems(s, anc, cited) if p.startswith("negation")]
    # `_quote` reads the words outside the quotes as a set of keys, where logical words are stopwords: one
    # changed there ("can only be run before …" for "after …") is no quotation
    if why := logic.problem(s, features.sentences_of(cited)):
        problems.append(why)
    return strategy, problems


def _quote(s: str, cited: list[CitedBlock]) -> str | None:
    folded = tx.fold(s)
    quotes = [q for q in _QUOTED.findall(folded) if len(tx.words(q)) >= 2]  # one word quoted is a term named
    if not quotes:
        return None
    rest = _QUOTED.sub(lambda m: m.group(0) if len(tx.words(m.group(1))) < 2 else " ", folded)
    if tx.has_negation(tx.words(rest)):
        return None  # "it is not true that «…»"
    rest_keys = {k for k in tx.content_keys(rest) if k not in _ATTRIBUTION} - _source(s)
    # names outside the quotes must occur as written ("Brooks Garth" is not "Garth Brooks")
    names = [n for n in proper_nouns(_QUOTED.sub(" ", s)) if len(n.split()) >= 2]
    for b in cited:
        if (
            all(tx.normalise(q) in b.norm or tx.normalise(q) in b.norm_plain for q in quotes)
            and rest_keys <= b.keyset
            and all(b.phrase_at(" " + tx.normalise(n).strip() + " ") for n in names)
        ):
            return "quote"
    return None


def _span(norm: str, cited: list[CitedBlock]) -> str | None:
    words = set(norm.split())
    for b in cited:
        for hay in (b.norm, b.norm_plain):
            if not words <= b.words_of(hay):  # a word it lacks: no need to scan the whole text for it
                continue
            i = hay.find(norm)
            while i >= 0:
                before = hay[max(0, i - 40) : i].split()[-2:]  # "not", "does not": a span turned round
                if not tx.NEGATORS.intersection(before) and not any(
                    w.endswith("nt") and w[:-2] + "n't" in tx.NEGATIONS for w in before
                ):
                    return "span"
                i = hay.find(norm, i + 1)
    return None

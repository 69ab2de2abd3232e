"""Checking one claim: quote, span, entity, paraphrase (first success wins), then the anchor and sense checks."""

from __future__ import annotations

from dataclasses import dataclass

import pipeline.answers.verify.policy as policy
from pipeline.answers import words as tx
from pipeline.answers.model import STRATEGIES, STRICT_STRATEGIES, Claim
from pipeline.answers.verify import synonyms
from pipeline.answers.verify.anchors import (
    Anchors,
    anchor_problems,
    anchors,
    is_anchor_key,
    near,
    positions_of,
    proper_nouns,
    together,
)
from pipeline.answers.verify.blocks import Block
from pipeline.answers.verify.sense import LIGHT as _LIGHT
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


@dataclass
class _Result:
    strategy: str | None
    violations: list[str]


def check_claim(text: str, pointers: tuple[str, ...], blocks: dict[str, Block]) -> Claim:
    """Verify one claim against the blocks it cites."""
    violations = []
    if not pointers:
        return Claim(text, pointers, False, None, ("no pointer: the claim cites no evidence",))
    for p in pointers:
        if p not in blocks:
            violations.append(f"pointer {p} names no evidence block")
    cited = [blocks[p] for p in pointers if p in blocks]
    if not cited:
        return Claim(text, pointers, False, None, tuple(violations))
    whole = _check_sentence(text, cited, whole=True)
    if whole.strategy in STRICT_STRATEGIES or len(tx.split_sentences(text)) < 2:
        result = whole
    else:  # several sentences on one line: each must pass, the weakest strategy counts
        parts = [_check_sentence(s, cited) for s in tx.split_sentences(text) if tx.words(s)]
        failed = [r for r in parts if r.strategy is None]
        if failed:
            result = _Result(None, [v for r in failed for v in r.violations])
        else:
            result = _Result(max((r.strategy for r in parts), key=STRATEGIES.index), [])
    violations += result.violations
    ok = result.strategy is not None and not violations
    return Claim(text, pointers, ok, result.strategy if ok else None, tuple(dict.fromkeys(violations)))


def _check_sentence(s: str, cited: list[Block], whole: bool = False) -> _Result:
    norm = tx.normalise(s)
    if norm.strip() == "":
        return _Result(None, ["empty claim"])
    if set(norm.split()) <= _VERDICT_WORDS:  # a bare "yes" / "no": it asserts nothing the evidence could
        return _Result("paraphrase", [])  # contradict lexically; never STRICT (see docs/answers.md)
    content = [w for w in tx.words(s) if tx.is_content(w)]
    if len(content) >= 2 and len(set(content)) / len(content) <= policy.REPEAT_MAX:
        return _Result(
            None,
            [
                f"degenerate: {len(content)} content words but {len(set(content))} distinct; it repeats"
                " words instead of saying something the evidence could support"
            ],
        )
    anc = anchors(s)
    strategy = _quote(s, cited) or _span(norm, cited)
    if strategy == "quote":  # "The page says …": the attribution is no claim about the evidence
        source = _source(s)
        anc.proper = [p for p in anc.proper if not set(tx.key(w) for w in p.split()) <= _ATTRIBUTION | source]
    if strategy is None:
        strategy = _entity(s, anc, cited) or _paraphrase(s, anc, cited)
        if strategy is None and (reworded := synonyms.in_evidence_words(s, cited, _light)):
            s, anc = reworded, anchors(reworded)  # checked as if written in the evidence's words
            strategy = _entity(s, anc, cited) or _paraphrase(s, anc, cited)
        if strategy is None:
            return _Result(None, anchor_problems(anc, cited) + [_why_not(s, cited)])
    problems = anchor_problems(anc, cited)
    if strategy == "quote":  # the words around a quote may turn it around: same negations as the evidence
        problems += [p for p in sense_problems(s, anc, cited) if p.startswith("negation")]
    elif strategy != "span":
        problems += sense_problems(s, anc, cited)
    return _Result(None, problems) if problems else _Result(strategy, [])


def _quote(s: str, cited: list[Block]) -> str | None:
    folded = tx.fold(s)
    quotes = [q for q in _QUOTED.findall(folded) if len(tx.words(q)) >= 2]
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


def _span(norm: str, cited: list[Block]) -> str | None:
    words = set(norm.split())
    for b in cited:
        for hay in (b.norm, b.norm_plain):
            if not words <= b.words_of(hay):  # a word it lacks: no need to scan the whole text for it
                continue
            i = hay.find(norm)
            while i >= 0:
                before = hay[max(0, i - 40) : i].split()[-2:]
                if not tx.NEGATORS.intersection(before) and not any(
                    w.endswith("nt") and w[:-2] + "n't" in tx.NEGATIONS for w in before
                ):
                    return "span"
                i = hay.find(norm, i + 1)
    return None


def _entity(s: str, anc: Anchors, cited: list[Block]) -> str | None:
    found_any = anc.all
    if not found_any:
        return None
    other = [k for k in dict.fromkeys(tx.content_keys(s)) if not is_anchor_key(k, anc)]
    need = policy.ENTITY_OTHER_MIN if len(found_any) >= 2 else policy.ENTITY_SINGLE_MIN
    for b in cited:
        spots = [positions_of(a, anc, b) for a in found_any]
        if any(not p for p in spots):
            continue
        if not near(spots, b) or not together(anc.proper, anc, b):
            continue
        held = [b.sentences_with(ps) for ps in spots]
        held = [h for h in held if h]

        # the other words must be found in the sentences that hold the anchors, not anywhere in the block
        found = [_held_near(k, b, held) for k in other]
        if other and sum(found) / len(other) < need:
            continue
        if any(not f and not _light(k, b) for k, f in zip(other, found, strict=True)):
            continue  # a changed content word: not a rewording
        return "entity"
    return None


def _paraphrase(s: str, anc: Anchors, cited: list[Block]) -> str | None:
    keys = list(dict.fromkeys(tx.content_keys(s)))
    if not keys:
        return None
    for b in cited:
        if sum(k in b.keyset for k in keys) / len(keys) >= policy.PARAPHRASE_MIN and all(
            k in b.keyset or _light(k, b) for k in keys
        ):
            return "paraphrase"
    return None


def _held_near(k: str, b: Block, held: list) -> bool:
    """Whether `k` occurs in one of the sentences `held` (those holding the anchors), or in the block
    when no sentence holds them."""
    if not held:
        return k in b.keyset
    return any(not b.key_sentences.get(k, set()).isdisjoint(h) for h in held)


def _light(k: str, b: Block) -> bool:
    """A word a rewording may add without changing what is claimed: a generic word, or another form of a
    word of the block (same first five letters). Any other new content word — a swapped name, noun, verb
    or number — makes the claim say something the block does not."""
    if k in _LIGHT or k in tx.NEGATIONS:  # polarity is the negation check's
        return True
    return len(k) >= 6 and not k.startswith("#") and any(o.startswith(k[:5]) for o in b.keyset)


def _why_not(s: str, cited: list[Block]) -> str:
    keys = list(dict.fromkeys(tx.content_keys(s)))
    if not keys:
        return "nothing checkable: no content words"
    best = max(cited, key=lambda b: sum(k in b.keyset for k in keys))
    ws = tx.words(s)  # keys in context: "five minutes" is #300 s
    gone = {w: k for w, k in zip(ws, tx.keys(ws), strict=True) if tx.is_content(w) and k not in best.keyset}
    missing = list(gone)
    share = 1 - len(set(gone.values())) / len(keys)
    return f"not supported: {share:.0%} of its words are in the cited evidence (missing: {', '.join(missing[:6])})"

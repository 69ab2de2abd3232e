"""The verifier's thresholds, and the policy record an answer carries (its version names a change of rules).

The values live under the "verifier" key of the shipped parameters file
(pipeline/answers/params/all-MiniLM-L6-v2.json, read through pipeline.answers.params); that file's digest
is part of the extractive answer's cache key and the values are in every answer's policy record. Every
number is lexical (counts and shares of words), not on a model's scale: the same for every embedding
model, so the default model's file serves all. The shares (paraphrase_min, entity_other_min,
entity_single_min) are refitted by `python bench/verify_docs.py --fit` on the "fit" corpora of
bench/sets/corpora.yml, which writes them back; the others were chosen on the fit sets as noted below.
Figures to quote come from the "report" corpora. Modules read them as `policy.NAME` at call time, so a
fitting run can try values with `use`.
"""

from __future__ import annotations

from typing import Any

from pipeline.answers import params as _params

POLICY_VERSION = "12"  # 2: the question-aware layer (addresses_question, deflection → HYBRID); no new content word
# 3: roles — a name's words in order, who did what ("directed by X"), a relation said of both names in one sentence
# 4: framing — an answer to a question framed by a name ("in Haskell") is a deflection unless a claim speaks of both
# 5: documentation — numbers and units however written, exact identifiers, WordNet synonyms, a word's company
#    (swapped roles), negation by clause, degenerate claims refused; the trivia rule on the order of a
#    person's names is gone
# 6: durations read in seconds ("half an hour" = "30 minutes"), % read as percent
# 7: voice (a passive claim's roles read as the active evidence's), a quote is verbatim, two words as one
#    WordNet lemma ("stands for" = "represents", "one time" = "once")
# 8: a quote's attribution ("The Foo guide says") names its source, whatever the source is called
# 9: a word the evidence lacks may stand for a near one (WordNet links, no antonym), not only a synonym
# 10: two words, not neighbours, exchanged against the evidence sentence's order trade places
# 11: a number bounded from the other side ("at most 30" for "at least 30")
# 12: a value taken from outside the sentence that says the rest of the claim, in place of its own
_V = _params.verifier()
PARAPHRASE_MIN: float = float(_V["paraphrase_min"])
ENTITY_OTHER_MIN: float = float(_V["entity_other_min"])
ENTITY_SINGLE_MIN: float = float(
    _V["entity_single_min"]
)  # an entity claim with a single anchor needs this much of its other words
WINDOW: int = int(_V["window"])  # "near each other", in tokens
TIGHT: int = int(_V["tight"])  # names outside one sentence must be this close
MAX_RELATION: int = int(
    _V["max_relation"]
)  # content words between two names that still read as one relation ("was founded in")
# A claim whose distinct content words are at most this share of its content words repeats instead of
# saying something ("word word word word" against "word"): measured, the lowest share among the 216
# labelled claims of the fit corpora is 0.625 ("… NULL is not equal to NULL").
REPEAT_MAX: float = float(_V["repeat_max"])
# Meaning-carrying words after a negation cue that say what it turns around (within its clause);
# fitted over 1–4 (all 85.2 % fit accuracy): 2 is the least that rejects every negated fit claim.
NEGATION_HEAD: int = int(_V["negation_head"])
# A word's company: the content words within CROSS_REACH before it and after it (apart). Two words whose
# company is shared more (by CROSS_MARGIN) when swapped than as written trade roles against the evidence.
# Fitted over reach 2–4 × margin 1–3: 4 and 3 give the best fit accuracy (85.2 %) with the most supported
# claims kept (86.1 %).
CROSS_REACH: int = int(_V["cross_reach"])
CROSS_MARGIN: int = int(_V["cross_margin"])
# A synonym counts when the two words share one of their first SYNONYM_SENSES senses (WordNet lists them
# most frequent first). Fitted over 0 (all), 1, 2, 3, 5 on the fit sets, errors on the documentation
# claims + on bench/answers.py's regression claims: 32+26 at 1, 32+27 at 2, 31+30 at 3, 31+33 at 5, 32+37 at 0.
SYNONYM_SENSES: int = int(_V["synonym_senses"])
# A word the evidence lacks may also stand for a near evidence word (lexicon.near): one sharing a synset
# among the first NEAR_SENSES senses of either, or, read as the part of speech each is most used as, within
# NEAR_STEPS links of a common synset from their first senses, never an antonym; it stands for a word of
# the evidence sentence holding the claim that the claim does not use (anywhere in a long text, a random
# word is near some word: bench/answers.py's one-word edits passed went from 12 to 31 of 400). Swept on the fit
# corpora's claims over senses 1–3 × steps 0–2 × parts of speech: steps 2 over verbs, adjectives and
# adverbs gives the best accuracy (83.6 %, from 82.2 %) at any senses (1 kept: the fewest); verbs alone
# 82.9 %; with nouns 82.9 % and two unsupported claims accepted more (another noun names another thing).
NEAR_SENSES: int = int(_V["near_senses"])
NEAR_STEPS: int = int(_V["near_steps"])
FITTED = ("paraphrase_min", "entity_other_min", "entity_single_min")  # what `--fit` searches


def record() -> dict[str, Any]:
    """The policy an answer carries: the rules' version and every threshold in force."""
    return {"version": POLICY_VERSION, **{k: globals()[k.upper()] for k in _V}}


def use(values: dict[str, Any]) -> None:
    """Put `values` ({"paraphrase_min": 0.8, ...}) in force in this process: the fitting run's hook."""
    unknown = set(values) - set(_V)
    if unknown:
        raise KeyError(f"no such verifier threshold: {', '.join(sorted(unknown))}")
    globals().update({k.upper(): v for k, v in values.items()})
    POLICY.update(values)


POLICY = record()

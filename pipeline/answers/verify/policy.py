"""The verifier's parameters, and the policy record an answer carries (its version names a change of rules).

They live in one versioned file of their own, pipeline/answers/params/verifier.json (VERIFIER_PARAMS names
another: pipeline.config.VerifierConfig), each value with its provenance:

    rules   the exact checks' constants (counts of words, WordNet senses): the same for every embedding model
    model   the calibrated logistic model over pipeline.answers.verify.features (names, weights, bias,
            standardisation, decision threshold, what it was fitted on), refitted by
            `python bench/verify_docs.py --fit` on the fit corpora only
    nli     the same model with a cross-encoder NLI judge's score as one more feature (null until fitted
            with a judge configured)

The file's digest and version are in every answer's policy record (and so in the answer cache's key).
Modules read the rules as `policy.NAME` at call time, so a fitting run can try values with `use`.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from pipeline.errors import AnswerError

POLICY_VERSION = "17"  # 2: the question-aware layer (addresses_question, deflection → HYBRID); no new content word
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
# 13: reworded claims judged by a calibrated model (soft alignment, WordNet, exact checks as features) with a
#     probability each; logical words (modality, quantity, order, frequency, bounds, direction, scope) compared;
#     support quoted / supported / unsupported; the word-share thresholds and the entity strategy are gone
# 14: an identifier the claim adds (the sentence it rests on leaves out none) is a flag, not a refusal
# 15: negations left unmatched pair up, one a side; a changed polarity weighs by how much of its sentence
#     the claim keeps (negation_kept); a number's bound read as asserted; a sentence stating a default reads
#     the one before it; a claim of all where the evidence says "only" is refused
# 16: a logical word replaced in its place in a sentence edited, not reworded (the sentence may say the
#     claim's word elsewhere); a quote's words outside the quotes compared for logical words; an identifier of
#     joined words and a short quoted value one thing each when words trade places
# 17: "regardless" a value of the scope words, an added "unless"/"except" a restriction; words trading places
#     decisive when every word is found through WordNet too; refit with two more blind fit sets
SHIPPED = Path(__file__).resolve().parent.parent / "params" / "verifier.json"
FORMAT = 1


def path() -> Path:
    """The parameters file in force: VERIFIER_PARAMS, else the shipped one."""
    from pipeline.config.base import first_set
    from pipeline.config.sections import VerifierConfig

    found = first_set(VerifierConfig.env_names("params"))
    return Path(found[1]) if found else SHIPPED


def read(p: Path | None = None) -> tuple[dict[str, Any], str]:
    """The parameters file's content and its SHA-256."""
    p = p or path()
    try:
        data = p.read_bytes()
        raw = json.loads(data)
        if raw.get("format") != FORMAT:
            raise ValueError(f"format {raw.get('format')!r}, expected {FORMAT}")
        if not isinstance(raw.get("rules"), dict):
            raise ValueError("no 'rules'")
        return raw, hashlib.sha256(data).hexdigest()
    except (OSError, ValueError) as e:
        raise AnswerError(
            f"cannot read the verifier's parameters {p}: {e}; unset VERIFIER_PARAMS to use the shipped ones"
        ) from e


RAW, DIGEST = read()
_V = {k: v["value"] for k, v in RAW["rules"].items()}
WINDOW: int = int(_V["window"])  # "near each other", in tokens
TIGHT: int = int(_V["tight"])  # names outside one sentence must be this close
MAX_RELATION: int = int(_V["max_relation"])  # content words between two names that still read as one relation
REPEAT_MAX: float = float(_V["repeat_max"])  # a claim this repetitive says nothing
NEGATION_HEAD: int = int(_V["negation_head"])  # words after a negation cue that say what it turns round
CROSS_REACH: int = int(_V["cross_reach"])  # a word's company, before and after it
CROSS_MARGIN: int = int(_V["cross_margin"])  # more company when swapped than as written: the roles traded
SYNONYM_SENSES: int = int(_V["synonym_senses"])  # a synonym shares one of the first N WordNet senses
NEAR_SENSES: int = int(_V["near_senses"])  # a near word: a synset among the first N senses of either
NEAR_STEPS: int = int(_V["near_steps"])  # or within N WordNet links of a common synset
EDIT_KEPT: float = float(_V["edit_kept"])  # a claim with this share of its words in the sentence's order is an edit
EDIT_SPAN: int = int(_V["edit_span"])  # words replaced at one place of an edited sentence, compared by place


def record() -> dict[str, Any]:
    """The policy an answer carries: the rules' version, the parameters file's digest, every rule in force."""
    return {"version": POLICY_VERSION, "params": DIGEST[:16], **{k: globals()[k.upper()] for k in _V}}


def use(values: dict[str, Any]) -> None:
    """Put `values` ({"window": 30, ...}) in force in this process: the fitting run's hook."""
    unknown = set(values) - set(_V)
    if unknown:
        raise KeyError(f"no such verifier rule: {', '.join(sorted(unknown))}")
    globals().update({k.upper(): v for k, v in values.items()})
    POLICY.update(values)


POLICY = record()

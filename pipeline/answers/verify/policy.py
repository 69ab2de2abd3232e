"""The verifier's thresholds, and the policy record an answer carries (its version names a change of rules).

Every number here is lexical (counts and shares of words), not on a model's scale: the same for every
embedding model. Fitted ones were chosen on the "fit" corpora of bench/sets/corpora.yml with
`python bench/verify_docs.py --split fit` (the grid and the result next to each); figures to quote come
from the "report" corpora.
"""

POLICY_VERSION = "5"  # 2: the question-aware layer (addresses_question, deflection → HYBRID); no new content word
# 3: roles — a name's words in order, who did what ("directed by X"), a relation said of both names in one sentence
# 4: framing — an answer to a question framed by a name ("in Haskell") is a deflection unless a claim speaks of both
# 5: documentation — numbers and units however written, exact identifiers, WordNet synonyms, a word's company
#    (swapped roles), negation by clause, degenerate claims refused
PARAPHRASE_MIN = 0.85
ENTITY_OTHER_MIN = 0.8
ENTITY_SINGLE_MIN = 0.85  # an entity claim with a single anchor needs this much of its other words
WINDOW = 40  # "near each other", in tokens
TIGHT = 12  # names outside one sentence must be this close
MAX_RELATION = 4  # content words between two names that still read as one relation ("was founded in")
NAME_GAP = 2  # words a name may skip ("George E. Marshall" for "George Marshall")
# A claim whose distinct content words are at most this share of its content words repeats instead of
# saying something ("word word word word" against "word"): measured, the lowest share among the 216
# labelled claims of the fit corpora is 0.625 ("… NULL is not equal to NULL").
REPEAT_MAX = 0.5
# Meaning-carrying words after a negation cue that say what it turns around (within its clause);
# fitted over 1–4 (all 85.2 % fit accuracy): 2 is the least that rejects every negated fit claim.
NEGATION_HEAD = 2
# A word's company: the content words within CROSS_REACH before it and after it (apart). Two words whose
# company is shared more (by CROSS_MARGIN) when swapped than as written trade roles against the evidence.
# Fitted over reach 2–4 × margin 1–3: 4 and 3 give the best fit accuracy (85.2 %) with the most supported
# claims kept (86.1 %).
CROSS_REACH = 4
CROSS_MARGIN = 3
POLICY = {
    "version": POLICY_VERSION,
    "paraphrase_min": PARAPHRASE_MIN,
    "entity_other_min": ENTITY_OTHER_MIN,
    "entity_single_min": ENTITY_SINGLE_MIN,
    "window": WINDOW,
    "tight": TIGHT,
    "max_relation": MAX_RELATION,
    "name_gap": NAME_GAP,
    "repeat_max": REPEAT_MAX,
    "negation_head": NEGATION_HEAD,
    "cross_reach": CROSS_REACH,
    "cross_margin": CROSS_MARGIN,
}

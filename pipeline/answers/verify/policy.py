"""The verifier's thresholds, and the policy record an answer carries (its version names a change of rules)."""

POLICY_VERSION = "4"  # 2: the question-aware layer (addresses_question, deflection → HYBRID); no new content word
# 3: roles — a name's words in order, who did what ("directed by X"), a relation said of both names in one sentence
# 4: framing — an answer to a question framed by a name ("in Haskell") is a deflection unless a claim speaks of both
PARAPHRASE_MIN = 0.85
ENTITY_OTHER_MIN = 0.8
ENTITY_SINGLE_MIN = 0.85  # an entity claim with a single anchor needs this much of its other words
WINDOW = 40  # "near each other", in tokens
TIGHT = 12  # names outside one sentence must be this close
MAX_RELATION = 4  # content words between two names that still read as one relation ("was founded in")
NAME_GAP = 2
# A claim whose distinct content words are at most this share of its content words repeats instead of
# saying something ("word word word word" against "word"): measured, the lowest share among the 216
# labelled claims of the fit corpora is 0.625 ("… NULL is not equal to NULL").
REPEAT_MAX = 0.5
CROSS_REACH = 4  # words each side (before and after apart) that make a word's company; fitted (2–4) on the fit corpora
CROSS_MARGIN = (
    3  # company gained by swapping two words; fitted (1–3): fit accuracy 85.2 %, the best, with the most supported kept
)
POLICY = {
    "version": POLICY_VERSION,
    "paraphrase_min": PARAPHRASE_MIN,
    "entity_other_min": ENTITY_OTHER_MIN,
    "entity_single_min": ENTITY_SINGLE_MIN,
    "window": WINDOW,
    "tight": TIGHT,
    "max_relation": MAX_RELATION,
    "name_gap": NAME_GAP,
}

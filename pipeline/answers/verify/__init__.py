"""The deterministic lexical verifier: every claim against the exact evidence it cites.

    parse     one claim per line; the pointers ([E1], [E1,E3]) anywhere on the line are what it rests on.
              A line without a pointer is an unsupported claim; a pointer naming no block is a violation.
    strategy  first success wins:
              quote       every "…"-quoted span occurs verbatim in one cited block, and the words around
                          the quotes (attribution aside) occur there too;
              span        the whole claim, normalised for case/whitespace/punctuation, is a substring of a
                          cited block (and not one that a negation right before it turns around);
              entity      its anchors (multi-word proper nouns, numbers, identifiers) all occur in one cited
                          block within WINDOW tokens (names in one sentence), and ≥ 80 % of its other content
                          words (≥ 85 % with a single anchor) occur in the sentences that hold them;
              paraphrase  ≥ 85 % of its content words (stemmed; numbers in digit or word form) occur in
                          one cited block.
    anchors   on top, whatever passed: a date (month + year, day) must occur as such in a cited block; a
              count must occur in digit or word form; a claim naming proper nouns needs one of them in a
              cited block; every number and code identifier must occur. For entity and paraphrase also:
              the claim's negation must agree with the evidence sentence it matches best, and two anchors
              found in that sentence must not appear in swapped order.
    roles     (entity and paraphrase, policy 3) when the evidence says who did
              something ("directed by X"), the claim names X; what joins two of the claim's names is said
              of both in one evidence sentence (one opening with a pronoun counts the sentence it refers to).
    audit     STRICT: every claim passed by quote or span; HYBRID: every claim passed, some only by entity
              or paraphrase; UNGROUNDED otherwise, or when no claim could be parsed.

Long claims are checked sentence by sentence (each must pass; the weakest strategy counts).

Words are read by pipeline.answers.words (Snowball stems, number runs and units, exact identifiers); a claim
that fails as written is tried once more in the evidence's words (synonyms: WordNet, pipeline.answers.lexicon).

Modules: claims (parse), blocks (evidence), anchors, strategies (one claim), synonyms, sense (reworded claims),
audit (whole answers, the question-aware layer, `docforge verify`), policy (thresholds).
"""

from pipeline.answers.verify.anchors import Anchors, anchors
from pipeline.answers.verify.audit import audit_mode, verify, verify_all, verify_request, verify_requests
from pipeline.answers.verify.blocks import Block, LazyBlocks
from pipeline.answers.verify.claims import POINTER_GROUP, ParsedClaim, parse_claims
from pipeline.answers.verify.policy import POLICY, POLICY_VERSION
from pipeline.answers.verify.strategies import check_claim

__all__ = [
    "POINTER_GROUP",
    "POLICY",
    "POLICY_VERSION",
    "Anchors",
    "Block",
    "LazyBlocks",
    "ParsedClaim",
    "anchors",
    "audit_mode",
    "check_claim",
    "parse_claims",
    "verify",
    "verify_all",
    "verify_request",
    "verify_requests",
]

"""The verifier: every claim against the exact evidence it cites, with a verdict a reader can trust.

    parse     one claim per line; the pointers ([E1], [E1,E3]) anywhere on the line are what it rests on.
              A line without a pointer is an unsupported claim; a pointer naming no block is a violation.
    quoted    quote (every "…"-quoted span verbatim in one cited block, the words around it there too)
              or span (the whole claim, normalised, a substring of a cited block, not negated before it):
              support "quoted", lexical proof, STRICT.
    exact     a number, date, identifier or quoted text the evidence lacks, a logical word changed against
              the aligned evidence sentence (logic: modality, quantity, order, frequency, bounds,
              comparison, direction, scope), a word turned into its opposite (opposites), a term in
              another's place (terms): refused with the reason, whatever else the claim has.
    model     every other claim: features (lexical and WordNet shares, soft alignment of contextual token
              vectors, the sense checks as flags; an NLI judge's score where configured) → the calibrated
              P(supported) (judge, fitted by bench/verify_docs.py --fit into params/verifier.json):
              support "supported" at the fitted threshold, else "unsupported".
    audit     STRICT: every claim quoted; HYBRID: every claim supported, some only reworded; UNGROUNDED
              otherwise, or when no claim could be parsed. Whether the answer addresses the question is
              said apart (addresses_question).

Long claims are read sentence by sentence (the weakest sentence counts). Several answers' embedding work is
one batch (verify_all, verify_requests).

Modules: claims (parse), blocks (evidence), anchors, sense (reworded claims' sense checks), logic, opposites,
terms, synonyms, quantities (a number and its unit as one), align (soft alignment), judge (the model, the NLI
judge), features, strategies (claims), calibrate (fitting), audit (whole answers, the question-aware layer,
`docforge verify`), policy (the parameters file).
"""

from pipeline.answers.verify.align import model_loading_seconds
from pipeline.answers.verify.anchors import Anchors, anchors
from pipeline.answers.verify.audit import audit_mode, verify, verify_all, verify_request, verify_requests
from pipeline.answers.verify.blocks import CitedBlock, LazyBlocks
from pipeline.answers.verify.claims import POINTER_GROUP, ParsedClaim, parse_claims
from pipeline.answers.verify.policy import POLICY, POLICY_VERSION
from pipeline.answers.verify.strategies import check_claim

__all__ = [
    "POINTER_GROUP",
    "POLICY",
    "POLICY_VERSION",
    "Anchors",
    "CitedBlock",
    "LazyBlocks",
    "ParsedClaim",
    "anchors",
    "audit_mode",
    "check_claim",
    "model_loading_seconds",
    "parse_claims",
    "verify",
    "verify_all",
    "verify_request",
    "verify_requests",
]

"""The answer as people read it: each claim marked by how the evidence backs it, the legend beside the marks.

    ✓ quoted     the cited evidence says it word for word (the verifier's quote or span: STRICT)
    ≈ reworded   the evidence supports it in other words, with the verifier's probability when it has one
    ✗ unsupported  never shown as fact: the reason comes first

Whether the answer addresses the question is another statement (`Answer.addresses_question`), said apart
by every surface, never folded into these marks. The text is deterministic: it is a provenance stage.
"""

from __future__ import annotations

from pipeline.answers.model import NOT_FOUND, Claim

MARKS = {"quoted": "✓", "supported": "≈", "unsupported": "✗"}
# What each mark means, in the legend printed after the marked lines (only the marks used), " · " between.
LEGEND = {
    "quoted": "✓ quoted word for word from the cited evidence",
    "supported": "≈ reworded; the cited evidence supports it",
    "unsupported": "✗ not supported by the cited evidence: do not rely on it",
}
PROBABILITY = " (p: how likely it does)"  # after LEGEND["supported"] when a line shows one
LEGEND_SEP = " · "
LEGEND_PREFIX = "Marks: "
# What an audit mode says of the whole answer (the CLI and the page print it; web/marks.js keeps a copy, tested).
AUDIT_MEANING = {
    "STRICT": "every line is quoted from the cited evidence",
    "HYBRID": "every line is supported by the cited evidence; some are reworded",
    "UNGROUNDED": "some lines are not supported by the cited evidence",
}
UNGROUNDED_NOTE = (
    "UNGROUNDED: the statements below could not be verified against the cited documentation; do not rely on them."
)


def support_of(claim: dict) -> str:
    """A claim's `support` as JSON carries it; an answer recorded before claims had one: from its strategy."""
    if claim.get("support") in MARKS:
        return str(claim["support"])
    return Claim("", (), bool(claim.get("verified")), claim.get("strategy")).support


def meaning(supports: list[str]) -> str:
    """What the claims are, as a whole, in the audit modes' words: all quoted, all supported (some reworded),
    or not. Said from the claims, so a mode that also weighs something else is never read as rewording."""
    if not supports:
        return ""
    if all(s == "quoted" for s in supports):
        return AUDIT_MEANING["STRICT"]
    return AUDIT_MEANING["HYBRID" if "unsupported" not in supports else "UNGROUNDED"]


def claim_line(c: Claim) -> str:
    """One claim, its mark first; a reworded claim's probability and an unsupported one's reason before
    its text, so neither reads as a quotation."""
    ptr = f" [{','.join(c.pointers)}]" if c.pointers else ""
    if c.support == "quoted":
        return f"{MARKS['quoted']} {c.text}{ptr}"
    if c.support == "supported":
        p = f", p={c.probability:.2f}" if c.probability is not None else ""
        return f"{MARKS['supported']} (reworded{p}) {c.text}{ptr}"
    why = c.violations[0] if c.violations else "no evidence says it"
    return f"{MARKS['unsupported']} (not supported: {why}) {c.text}{ptr}"


def legend(claims: list[Claim]) -> str:
    """`Marks: …` for the marks these claims use, in the order ✓ ≈ ✗; "" for none."""
    used = {c.support for c in claims}
    if not used:
        return ""
    said = {**LEGEND}
    if any(c.support == "supported" and c.probability is not None for c in claims):
        said["supported"] += PROBABILITY
    return LEGEND_PREFIX + LEGEND_SEP.join(said[s] for s in LEGEND if s in used) + "."


def render(claims: list[Claim], audit_mode: str, abstained: bool) -> str:
    """Plain text, deterministic (it is part of the provenance chain)."""
    if abstained or not claims:
        return NOT_FOUND
    lines = [UNGROUNDED_NOTE] if audit_mode == "UNGROUNDED" else []
    lines += [claim_line(c) for c in claims]
    lines.append(legend(claims))
    return "\n".join(lines)

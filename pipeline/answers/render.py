"""The answer as people read it: verified claims marked, an unverified one never shown as fact."""

from __future__ import annotations

from pipeline.answers.model import NOT_FOUND, Claim

VERIFIED, UNVERIFIED = "✓", "✗"
UNGROUNDED_NOTE = (
    "UNGROUNDED: the statements below could not be verified against the cited documentation; do not rely on them."
)


DEFLECTION_NOTE = "Quoted correctly, but this may not answer the question"


def render(claims: list[Claim], audit_mode: str, abstained: bool, deflection: str = "") -> str:
    """Plain text, deterministic (it is part of the provenance chain)."""
    if abstained:
        return NOT_FOUND
    lines = [UNGROUNDED_NOTE] if audit_mode == "UNGROUNDED" else []
    if deflection and audit_mode != "UNGROUNDED":
        lines.append(f"{DEFLECTION_NOTE} ({deflection.removeprefix('deflection: ')}).")
    for c in claims:
        ptr = f" [{','.join(c.pointers)}]" if c.pointers else ""
        if c.verified:
            lines.append(f"{VERIFIED} {c.text}{ptr}")
        else:
            why = c.violations[0] if c.violations else "not supported"
            lines.append(f"{UNVERIFIED} (unverified: {why}) {c.text}{ptr}")
    return "\n".join(lines) if lines else NOT_FOUND

"""The answer as people read it: each claim marked by how the evidence backs it, the legend beside the marks.

    ✓ quoted     the cited evidence says it word for word (the verifier's quote or span: STRICT)
    ≈ reworded   the evidence supports it in other words, with the verifier's probability when it has one
    ✗ unsupported  never shown as fact: the reason comes first

Whether the answer addresses the question is another statement (`Answer.addresses_question`), said apart
by every surface, never folded into these marks. An answer not sure it answers (an extractive answer
below its fitted `sure`) offers candidates instead, each its own numbered block under where it is:

    Not sure this answers it — the closest passages, best first:

    1. accept_limit — Main configuration [E1]
       ✓ accept_limit (default: 50M)
       ✓ The largest message accepted.

    2. …

The text is deterministic: it is a provenance stage (its places read from the evidence stage).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from pipeline.answers.model import NOT_FOUND, Claim, Evidence, Offered

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
# Opens an extractive answer below its fitted `sure`: its lines are candidates, not an answer
# (web/app.js keeps a copy of these three, tested).
UNSURE_HEAD = "Not sure this answers it — the closest passages, best first:"
UNSURE_NEXT = "To read a passage's whole section, open its citation; or ask in other words."
CANDIDATE_INDENT = "   "  # a candidate's lines, under its number
UNGROUNDED_NOTE = (
    "UNGROUNDED: the statements below could not be verified against the cited documentation; do not rely on them."
)


def support_of(claim: dict) -> str:
    """A claim's `support` as JSON carries it; an answer recorded before claims had one: from its strategy."""
    if claim.get("support") in MARKS:
        return str(claim["support"])
    return str(Claim("", (), bool(claim.get("verified")), claim.get("strategy")).support)


def meaning(supports: list[str]) -> str:
    """What the claims are, as a whole, in the audit modes' words: all quoted, all supported (some reworded),
    or not. Said from the claims, so a mode that also weighs something else is never read as rewording."""
    if not supports:
        return ""
    if all(s == "quoted" for s in supports):
        return AUDIT_MEANING["STRICT"]
    return AUDIT_MEANING["HYBRID" if "unsupported" not in supports else "UNGROUNDED"]


def claim_line(c: Claim, cite: bool = True) -> str:
    """One claim, its mark first; a reworded claim's probability and an unsupported one's reason before
    its text, so neither reads as a quotation. `cite`: its pointers after it (a candidate's are in its
    heading)."""
    ptr = f" {_cited(c.pointers)}" if c.pointers and cite else ""
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


def place(title: str, section: str) -> str:
    """Where a candidate is, short: its section's last heading, then its document's title when that
    says more ("accept_limit — Main configuration"); the full path is its citation's."""
    last = " ".join(section.rsplit(" > ", 1)[-1].split())
    title = " ".join(title.split())
    if not last or last == title:
        return title
    return f"{last} — {title}" if title else last


def places(evidence: Iterable[Evidence]) -> dict[str, str]:
    """Each evidence block's `place`, by pointer."""
    return {e.pointer: place(e.title, e.section) for e in evidence}


def offered(claims: list[Claim]) -> list[list[Claim]]:
    """The candidates an unsure answer's claims are, in order: each run of claims citing the same block
    (a candidate's lines are quoted from one block, one block a section: pipeline.answers.shown)."""
    out: list[list[Claim]] = []
    for c in claims:
        if out and out[-1][0].pointers == c.pointers:
            out[-1].append(c)
        else:
            out.append([c])
    return out


def candidates(claims: list[Claim], evidence: Iterable[Evidence], held: Mapping[str, float]) -> list[Offered]:
    """What JSON carries of an unsure answer's candidates, best first (`offered`)."""
    by = {e.pointer: e for e in evidence}
    out = []
    for group in offered(claims):
        at = group[0].pointers[0] if group[0].pointers else ""
        e = by.get(at)
        out.append(
            Offered(
                citation=at,
                title=e.title if e else "",
                section=e.section if e else "",
                url=e.url if e else "",
                text="\n".join(c.text for c in group),
                confidence=held.get(at),
            )
        )
    return out


def render(
    claims: list[Claim],
    audit_mode: str,
    abstained: bool,
    unsure: str = "",
    where: Mapping[str, str] | None = None,
) -> str:
    """Plain text, deterministic (it is part of the provenance chain). `unsure`: why the lines are only
    candidates (an extractive answer below its fitted `sure`): then each candidate is a numbered block
    headed by its place (`where`: pointer → `place`) and pointer, the reader told what to do next."""
    if abstained or not claims:
        return NOT_FOUND
    lines = [UNGROUNDED_NOTE] if audit_mode == "UNGROUNDED" else []
    if not unsure:
        return "\n".join([*lines, *(claim_line(c) for c in claims), legend(claims)])
    lines.append(UNSURE_HEAD)
    for n, group in enumerate(offered(claims), 1):
        ptrs = group[0].pointers
        head = " ".join(x for x in ((where or {}).get(ptrs[0], "") if ptrs else "", _cited(ptrs)) if x)
        lines += ["", f"{n}. {head}", *(CANDIDATE_INDENT + claim_line(c, cite=False) for c in group)]
    return "\n".join([*lines, "", legend(claims), UNSURE_NEXT])


def _cited(pointers: tuple[str, ...]) -> str:
    return f"[{','.join(pointers)}]" if pointers else ""

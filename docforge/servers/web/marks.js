// How an answer's claims read on the page: the marks, legend and audit wording of pipeline.answers.render
// (the CLI's, and the rendered answer's), kept equal by tests/test_web.py. Loaded before app.js, whose
// `el` these call when an answer is drawn.
"use strict";

const MARKS = { quoted: "✓", supported: "≈", unsupported: "✗" };
const LEGEND = { quoted: "✓ quoted word for word from the cited evidence",
  supported: "≈ reworded; the cited evidence supports it",
  unsupported: "✗ not supported by the cited evidence: do not rely on it" };
const PROBABILITY = " (p: how likely it does)";
const AUDIT_MEANING = { STRICT: "every line is quoted from the cited evidence",
  HYBRID: "every line is supported by the cited evidence; some are reworded",
  UNGROUNDED: "some lines are not supported by the cited evidence" };

function support(c) {  // an older API's claim has no `support`: read it from its strategy, as the server does
  return c.support || (!c.verified ? "unsupported" : ["quote", "span"].includes(c.strategy) ? "quoted" : "supported");
}

function meaning(claims) {  // what the claims are as a whole, in the audit modes' words (render.meaning)
  const kinds = claims.map(support);
  const mode = kinds.every((k) => k === "quoted") ? "STRICT" : kinds.includes("unsupported") ? "UNGROUNDED" : "HYBRID";
  return AUDIT_MEANING[mode];
}

function legend(claims) {  // the marks these claims use, in the order ✓ ≈ ✗, beside the claims
  const used = new Set(claims.map(support));
  const probable = claims.some((c) => support(c) === "supported" && typeof c.probability === "number");
  const items = Object.keys(LEGEND).filter((k) => used.has(k))
    .map((k) => el("li", { text: LEGEND[k] + (k === "supported" && probable ? PROBABILITY : "") }));
  return el("div", { class: "legend" }, el("span", { class: "legend-label", text: "Marks:" }), el("ul", {}, ...items));
}

function addresses(a) {  // whether it answers the question: a statement of its own, apart from support
  if (a.addresses_question === true) return "Answers the question: yes.";
  if (a.addresses_question !== false) return null;
  const unsure = a.candidates && a.candidates.length;  // the passages offered instead (the CLI's words)
  const why = String(a.addresses_reason || "").replace(unsure ? /^not sure: / : /^deflection: /, "");
  return `Answers the question: ${unsure ? "not sure" : "perhaps not"}${why ? ` (${why})` : ""}.`;
}

// An answer not sure it answers offers passages instead (render.UNSURE_HEAD, UNSURE_NEXT, place).
const UNSURE_HEAD = "Not sure this answers it — the closest passages, best first:";
const UNSURE_NEXT = "To read a passage's whole section, open its citation; or ask in other words.";

function place(title, section) {  // where a candidate is, short: its last heading, then the title (render.place)
  const squash = (s) => String(s || "").split(/\s+/).filter(Boolean).join(" ");
  const path = String(section || "").split(" > ");
  const last = squash(path[path.length - 1]);
  const t = squash(title);
  if (!last || last === t) return t;
  return t ? `${last} — ${t}` : last;
}

function candidateList(a) {  // each passage numbered, under where it is and its citation, its marked lines
  const items = a.candidates.map((c) => {
    const lines = (a.claims || []).filter((k) => (k.pointers || [])[0] === c.citation);
    const cite = el("button", { type: "button", class: "pointer", "aria-label": `Open citation ${c.citation}`,
                                text: c.citation, onclick: () => openCitation(c.citation) });
    return el("li", { class: "candidate" },
      el("p", { class: "candidate-place" }, el("span", { text: place(c.title, c.section) }), " ", cite),
      el("ul", { class: "claims" }, ...lines.map((k) => claimItem({ ...k, pointers: [] }))));
  });
  return el("ol", { class: "candidates" }, ...items);
}


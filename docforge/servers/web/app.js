// docforge's page: vanilla JS, no dependencies (docs/web.md). Every string from the server reaches the DOM
// through textContent or a text node, never innerHTML; links are kept only when they are http(s).
"use strict";

const TOKEN_KEY = "docforge.token";
const $ = (id) => document.getElementById(id);

function el(tag, props, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(props || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "class") node.className = v;
    else if (k === "text") node.textContent = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children) if (c !== null && c !== undefined) node.append(c);
  return node;
}

function safeUrl(url) {
  try {
    const u = new URL(String(url));  // absolute only: a relative path must not become a link into this API
    return u.protocol === "http:" || u.protocol === "https:" ? u.href : null;
  } catch { return null; }
}

// A link for an http(s) URL; anything else (a local git checkout's file:// URI, which a page served over
// http may not open) as text, the URL in its title and class "source-ref".
function link(url, label) {
  const href = safeUrl(url);
  return href ? el("a", { href, rel: "noopener noreferrer", target: "_blank", class: "source-ref", text: label })
              : el("span", { class: "source-ref", title: String(url), "data-url": String(url), text: label });
}

// --- auth ----------------------------------------------------------------------------------------------

class Unauthorized extends Error {}

async function api(path, body) {
  const token = sessionStorage.getItem(TOKEN_KEY);
  const init = { headers: { Authorization: "Bearer " + token }, cache: "no-store" };
  if (body !== undefined) {
    init.method = "POST";
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const resp = await fetch(path, init);
  if (resp.status === 401) throw new Unauthorized("the token was refused");
  const data = await resp.json().catch(() => ({}));
  if (!resp.ok) {
    const detail = typeof data.detail === "string" ? data.detail : JSON.stringify(data.detail || resp.statusText);
    throw new Error(`${resp.status}: ${detail}`);
  }
  return data;
}

function showLogin(message) {
  sessionStorage.removeItem(TOKEN_KEY);
  $("app-view").hidden = true;
  $("logout").hidden = true;
  $("login-view").hidden = false;
  $("login-error").textContent = message || "";
  $("token").value = "";
  $("token").focus();
}

async function enter() {
  const sources = await api("sources");  // proves the token; fills the source filter
  $("login-view").hidden = true;
  $("app-view").hidden = false;
  $("logout").hidden = false;
  fillSourceFilter(sources.sources);
  renderSources(sources.sources);
  selectTab("tab-search");
  $("q").focus();
}

function failed(err, statusId) {
  if (err instanceof Unauthorized) showLogin("Your token was refused; log in again.");
  else $(statusId).textContent = "Error: " + err.message;
}

// --- tabs (arrow keys move between them, as in the ARIA tabs pattern) -----------------------------------

const TABS = ["tab-search", "tab-ask", "tab-sources", "tab-gaps"];

function selectTab(id) {
  for (const t of TABS) {
    const on = t === id;
    $(t).setAttribute("aria-selected", on ? "true" : "false");
    $(t).tabIndex = on ? 0 : -1;
    $($(t).getAttribute("aria-controls")).hidden = !on;
  }
  if (id === "tab-sources") loadSources();
  if (id === "tab-gaps") loadGaps();
}

// --- search --------------------------------------------------------------------------------------------

// "title › A › B": the rule of pipeline.query.hits.where (the CLI's and the answer prompts' label), so the
// page reads the same; a top heading that repeats the title is left out.
function heading(title, section) {
  const path = (section || "").split(" > ").filter(Boolean);
  if (path.length && path[0] === title) path.shift();
  return (title ? [title, ...path] : path).join(" › ");
}

// Words never marked (the CLI's list, docforge/cli/render.py _STOP; tests/test_web.py keeps them one list).
const STOP = new Set(
  "the and for are was how what who why with from that this not you can does do is in of to on a an".split(" "));

function terms(query) {
  const words = String(query).toLowerCase().match(/[\p{L}\p{N}_]{2,}/gu) || [];
  return [...new Set(words)].filter((w) => !STOP.has(w)).sort((a, b) => b.length - a.length);
}

function escapeRegExp(s) { return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"); }

// Whole words only: "do" marks "do", never the start of "documented".
function wordsRe(words) {
  return new RegExp(`(?<![\\p{L}\\p{N}_])(?:${words.map(escapeRegExp).join("|")})(?![\\p{L}\\p{N}_])`, "giu");
}

// `text` as text nodes with each query term wrapped in <mark>: the text itself is never parsed as HTML.
function marked(text, words) {
  const frag = document.createDocumentFragment();
  if (!words.length) { frag.append(text); return frag; }
  const re = wordsRe(words);
  let last = 0;
  for (const m of text.matchAll(re)) {
    if (m.index > last) frag.append(text.slice(last, m.index));
    frag.append(el("mark", { text: m[0] }));
    last = m.index + m[0].length;
  }
  if (last < text.length) frag.append(text.slice(last));
  return frag;
}

// A window of the text around its first matched term.
function excerpt(text, words, size = 320) {
  const match = words.length ? wordsRe(words).exec(text) : null;
  const first = match ? match.index : 0;
  const start = Math.max(0, Math.min(first - 80, text.length - size));
  const end = Math.min(text.length, start + size);
  return (start > 0 ? "… " : "") + text.slice(start, end) + (end < text.length ? " …" : "");
}

function searchFilters() {
  const parts = [];
  if ($("search-source").value) parts.push({ source: $("search-source").value });
  if ($("search-type").value) parts.push({ type: $("search-type").value });
  const tag = $("search-tag").value.trim();
  if (tag) parts.push({ tags: { $in: [tag] } });
  if (!parts.length) return null;
  return parts.length === 1 ? parts[0] : { $and: parts };
}

async function runSearch(event) {
  event.preventDefault();
  const query = $("q").value.trim();
  if (!query) return;
  const list = $("results");
  list.replaceChildren();
  $("search-status").textContent = "Searching…";
  const body = { query, mode: $("search-mode").value, limit: 10 };
  const filters = searchFilters();
  if (filters) body.filters = filters;
  try {
    const data = await api("search", body);
    const words = terms(query);
    $("search-status").textContent = `${data.hits.length} result${data.hits.length === 1 ? "" : "s"}`;
    for (const h of data.hits) {
      const title = heading(h.title, h.section);
      const meta = [`score ${Number(h.score).toFixed(3)}`, h.source, h.type];
      if (h.page !== null && h.page !== undefined) meta.push(`page ${h.page}`);
      list.append(el("li", { class: "result card" },
        el("h3", {}, link(h.url, title)),
        el("p", { class: "meta", text: meta.join(" · ") }),
        safeUrl(h.url) ? null : el("p", { class: "meta url", text: h.url }),
        el("p", { class: "excerpt" }, marked(excerpt(h.text, words), words))));
    }
  } catch (err) { failed(err, "search-status"); }
}

// --- ask -----------------------------------------------------------------------------------------------

function claimItem(c) {
  const kind = support(c);
  const p = kind === "supported" && typeof c.probability === "number" ? `, p=${c.probability.toFixed(2)}` : "";
  const label = { quoted: "quoted", supported: `reworded${p}`, unsupported: "not supported" }[kind];
  const badge = el("span", { class: "badge mark-" + kind, text: `${MARKS[kind]} ${label}` });
  const why = kind === "unsupported" && c.violations && c.violations.length
    ? el("span", { class: "why", text: `(${c.violations[0]}) ` }) : null;
  const refs = (c.pointers || []).map((p) => el("button", {
    type: "button", class: "pointer", "aria-label": `Open citation ${p}`, text: p,
    onclick: () => openCitation(p) }));
  return el("li", { class: "claim " + kind }, badge, " ", why, el("span", { class: "claim-text", text: c.text }),
            " ", ...refs);
}

function citationCard(c) {
  const title = heading(c.title, c.section);
  const evidence = el("blockquote", { class: "evidence", text: "Loading the evidence…" });
  const where = [c.source, `chunk ${c.chunk_index}`];
  if (c.page !== null && c.page !== undefined) where.push(`page ${c.page}`);
  const card = el("details", { class: "citation card", id: "cite-" + c.pointer },
    el("summary", {}, el("span", { class: "pointer-label", text: `[${c.pointer}]` }), " ", el("span", { text: title })),
    el("p", { class: "meta" }, link(c.url, safeUrl(c.url) ? "Open the source" : c.url), " · " + where.join(" · ")),
    evidence);
  let loaded = false;
  card.addEventListener("toggle", async () => {
    if (!card.open || loaded) return;
    loaded = true;
    try {
      // A block of a joined passage spans several chunks: all of them, in order, as the search joined them.
      const ids = c.chunk_ids && c.chunk_ids.length ? c.chunk_ids : [c.chunk_id];
      const chunks = await Promise.all(ids.map((id) => api("chunks/" + encodeURIComponent(id))));
      evidence.textContent = chunks.map((chunk) => chunk.text).join("\n\n");
    } catch (err) {
      loaded = false;
      if (err instanceof Unauthorized) showLogin("Your token was refused; log in again.");
      else evidence.textContent = "The evidence could not be loaded: " + err.message;
    }
  });
  return card;
}

function openCitation(pointer) {
  const card = $("cite-" + pointer);
  if (!card) return;
  card.open = true;
  card.querySelector("summary").focus();
}

function drawAnswer(a) {  // an answer (POST /ask's JSON) into #answer
  const out = $("answer");
  const mode = String(a.audit_mode);
  out.append(el("p", { class: "answer-head" },
    el("span", { class: "badge audit audit-" + mode.toLowerCase(), text: `audit ${mode}` }), " ",
    el("span", { class: "audit-meaning", text: a.abstained ? "no answer" : `${meaning(a.claims || [])}.` })));
  const said = a.abstained ? null : addresses(a);
  if (said) out.append(el("p", { class: "addresses", text: said }));
  out.append(el("p", { class: "meta", text: `confidence ${Number(a.confidence).toFixed(2)} · ${a.model} · ` +
                       `cache ${a.cache}${a.answer_id ? " · answer " + a.answer_id : ""}` }));
  if (a.abstained) {
    const why = a.addresses_reason ? ` (${a.addresses_reason})` : "";
    out.append(el("p", { class: "warn-text", text: `No answer: the sources do not support one${why}.` }));
  }
  if (a.candidates && a.candidates.length && a.claims && a.claims.length) {  // not sure: passages, not an answer
    out.append(el("h3", { class: "unsure-head", text: UNSURE_HEAD }), candidateList(a), legend(a.claims),
               el("p", { class: "next", text: UNSURE_NEXT }));
  } else if (a.claims && a.claims.length) {  // the marked claims and their legend: the rendered answer, structured
    out.append(el("h3", { text: "Claims" }), el("ul", { class: "claims" }, ...a.claims.map(claimItem)),
               legend(a.claims));
  } else {
    out.append(el("p", { class: "answer-text", text: a.answer }));
  }
  if (a.citations && a.citations.length) {
    out.append(el("h3", { text: "Citations" }), el("div", { class: "citations" }, ...a.citations.map(citationCard)));
  }
  if (a.trace) {
    out.append(el("details", { class: "trace card" }, el("summary", { text: "Trace" }),
                  el("pre", { text: JSON.stringify(a.trace, null, 2) })));
  }
}

async function runAsk(event) {
  event.preventDefault();
  const question = $("question").value.trim();
  if (!question) return;
  const out = $("answer");
  out.hidden = true;
  out.replaceChildren();
  $("ask-status").textContent = "Thinking…";
  try {
    const a = await api("ask", { question, mode: $("ask-mode").value, trace: $("ask-trace").checked });
    $("ask-status").textContent = "";
    drawAnswer(a);
    out.hidden = false;
  } catch (err) { failed(err, "ask-status"); }
}

// --- sources -------------------------------------------------------------------------------------------

function fillSourceFilter(sources) {
  const select = $("search-source");
  select.replaceChildren(el("option", { value: "", text: "any" }),
                         ...sources.map((s) => el("option", { value: s.name, text: s.name })));
  // The types the store holds (git, directory, confluence …), not a fixed list.
  const types = [...new Set(sources.filter((s) => s.documents && s.type).map((s) => s.type))].sort();
  $("search-type").replaceChildren(el("option", { value: "", text: "any" }),
                                   ...types.map((t) => el("option", { value: t, text: t })));
}

function renderSources(sources) {
  const body = $("sources").tBodies[0];
  body.replaceChildren(...sources.map((s) => el("tr", {},
    el("th", { scope: "row", text: s.name + (s.configured ? "" : " (not in config)") }),
    el("td", { "data-label": "Documents", text: String(s.documents) }),
    el("td", { "data-label": "Chunks", text: String(s.chunks) }),
    el("td", { "data-label": "Last ingest" }, s.last_indexed
      ? el("time", { datetime: s.last_indexed, text: new Date(s.last_indexed).toLocaleString() }) : "never"),
    el("td", { "data-label": "Failures", class: s.failures ? "warn-text" : "", text: String(s.failures) }),
    el("td", { "data-label": "Dagster" }, link(s.dagster_url, "partition")))));
  $("sources-status").textContent = `${sources.length} source${sources.length === 1 ? "" : "s"}`;
}

async function loadSources() {
  $("sources").tBodies[0].replaceChildren();  // no stale rows while the fresh ones load
  $("sources-status").textContent = "Loading…";
  try { renderSources((await api("sources")).sources); } catch (err) { failed(err, "sources-status"); }
}

// --- gaps (GET /gaps: full-access tokens only; docs/gaps.md) -----------------------------------------------

function when(iso) {
  return iso ? el("time", { datetime: iso, text: new Date(iso).toLocaleString() }) : "never";
}

function items(id, rows, render, none) {
  $(id).replaceChildren(...(rows.length ? rows.map((r) => el("li", {}, ...render(r))) : [el("li", { text: none })]));
}

function renderGaps(g) {
  $("gaps-groups").tBodies[0].replaceChildren(...g.groups.map((grp) => el("tr", { "data-group": grp.id },
    el("th", { scope: "row", text: grp.representative }),
    el("td", { "data-label": "Asks", text: `${grp.count} (${grp.abstained} abstained)` }),
    el("td", { "data-label": "Wordings", text: grp.wordings.join(" · ") }),
    el("td", { "data-label": "Last asked" }, when(grp.last_asked)),
    el("td", { "data-label": "Closest documents", text: grp.closest.map((d) => d.doc_key).join(", ") || "none" }))));
  items("gaps-weak", g.weak_searches, (w) => [`${w.count}× ${w.query} `,
    el("span", { class: "muted", text: w.best === null ? "(no hit)" : `(best ${w.best.toFixed(2)})` })], "none");
  items("gaps-cited", g.most_cited, (c) => [`${c.citations}× ${c.doc_key}`], "none yet");
  $("gaps-never-title").textContent = `Never retrieved (${g.never_retrieved_total})`;
  items("gaps-never", g.never_retrieved, (k) => [k], "none: every document was retrieved");
  items("gaps-stale", g.stale, (c) => [`${c.citations}× ${c.doc_key}, changed `, when(c.last_changed)], "none");
  $("gaps-status").textContent = `Last ${g.days} days: ${g.asks} asks (${g.gap_asks} unanswered or unsure), ` +
    `${g.searches} searches; ${g.groups.length} group${g.groups.length === 1 ? "" : "s"} of questions`;
  $("gaps").hidden = false;
}

async function loadGaps() {
  $("gaps").hidden = true;  // and emptied: nothing of the last caller's report stays in the page
  for (const id of ["gaps-weak", "gaps-cited", "gaps-never", "gaps-stale"]) $(id).replaceChildren();
  $("gaps-groups").tBodies[0].replaceChildren();
  $("gaps-status").textContent = "Loading…";
  try { renderGaps(await api("gaps")); } catch (err) { failed(err, "gaps-status"); }
}

// --- wiring --------------------------------------------------------------------------------------------

document.addEventListener("DOMContentLoaded", () => {
  $("login-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const token = $("token").value.trim();
    if (!token) return;
    sessionStorage.setItem(TOKEN_KEY, token);
    try { await enter(); } catch (err) {
      showLogin(err instanceof Unauthorized ? "That token was refused." : "Error: " + err.message);
    }
  });
  $("logout").addEventListener("click", () => showLogin(""));
  $("search-form").addEventListener("submit", runSearch);
  $("ask-form").addEventListener("submit", runAsk);
  for (const t of TABS) {
    $(t).addEventListener("click", () => selectTab(t));
    $(t).addEventListener("keydown", (e) => {
      const step = e.key === "ArrowRight" ? 1 : e.key === "ArrowLeft" ? -1 : 0;
      if (!step) return;
      const next = TABS[(TABS.indexOf(t) + step + TABS.length) % TABS.length];
      selectTab(next);
      $(next).focus();
    });
  }
  if (sessionStorage.getItem(TOKEN_KEY)) enter().catch(() => showLogin("Your session ended; log in again."));
  else showLogin("");
});

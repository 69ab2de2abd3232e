"""Answers without an LLM: the sentences of the evidence that answer the question, verbatim, with pointers.

Candidates are the prose sentences of the retrieved chunks (mkdocs admonitions included) and — when the
question asks for a command, a variable, an attribute, a flag or another value — their code lines and
table rows too. Each candidate is scored against the question:

    similarity  the question's embedding against the sentence's (same model as the index, one batch);
    terms       the share of the question's words it carries, each weighted by its rarity in the index
                (IDF from the keyword index's statistics; from the candidates when there are none);
    heading     the share of the question's words its section and title carry;
    shape       it holds what the question asks for (`UV_CACHE_DIR` for "which environment variable",
                `#[must_use]` for "which attribute", `--frozen` for "which flag"...);
    place       a section's lead sentence often defines; a better-ranked document is likelier to answer.

The answer draws from the best document first (its best line, and one more that scores near it), then
the best line of each of up to two other documents that score near the best line — another document
often holds the part the best one leaves out, or is the one that answers — then whatever else scores
near; 1–4 lines (a code line that completes one is not counted), best document first. Table-of-contents
entries (a line that is only links) are not candidates. Every line is verbatim text of the block it
cites (the loop drops one the verifier would not pass by `span`/`quote`), so the answer is STRICT by
construction.

The answer abstains when the evidence does not carry the question's subject (`subject.py`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from pipeline.answers import subject as sj
from pipeline.answers import text as tx
from pipeline.answers.model import Evidence
from pipeline.answers.verify import POINTER_GROUP

EXTRACTIVE_VERSION = "6"
MIN_WORDS, MAX_WORDS = 4, 70
MAX_CODE_CHARS = 140
MAX_CANDIDATES = 40  # embedded per question, in one batch
LEAD_CHARS = 400  # of a document's opening paragraph, embedded with the candidates
MAX_HOLDERS = 8  # further lines embedded for holding the kind of value the question names
# Score = W_SIM·similarity + W_TERMS·terms + W_HEAD·heading + W_SHAPE·shape + place.
W_SIM, W_TERMS, W_HEAD, W_SHAPE = 1.0, 0.5, 0.12, 0.25
W_TOPIC = 0.15  # a line whose code names what its document is about (`dbg!` in "2361-dbg-macro")
# Relevance = the best line's similarity to the question + half the subject share its document carries;
# below this, nothing retrieved answers the question (fitted on bench/answers_dev.jsonl with
# all-MiniLM-L6-v2: answerable questions ≥ 0.6, most unanswerable ones below; names and words the
# index lacks catch the rest).
RELEVANCE_MIN = 0.58
ABOUT_MARGIN = 0.05  # the document whose opening is closest to the question, by this much, adds its best line
ABOUT_FLOOR = 0.5  # if that line scores this share of the best line
MIN_ANSWERED = 0.25  # share of the subject that the best document or the chosen lines must carry
FRAMED_FLOOR = 0.6  # a line that speaks of the question's framing name may lead if it scores this share of the best
OTHER_DOC = 0.6  # a line from another document must score this share of the best line
BEST_DOC_FIRST = 2  # lines of the best document placed before another document's
SAME_DOC = 0.8  # a further line of the best document must score this share of the best line
_BULLET = re.compile(r"^\s*(?:[-*+]|\d{1,3}[.)])\s+")
_ADMONITION = re.compile(r"^\s*(?:!!!|\?\?\?\+?)\s*\w+")
_POINTER_ONLY = re.compile(r"^\W*(see|for more|learn more|refer to|read more|check out)\b", re.I)  # "See the guide"
_LINK_ONLY = re.compile(r"^\W*(?:\[[^\]]*\](?:\[[^\]]*\]|\([^)]*\))\W*)+$")  # a table of contents entry
_LINK_DEF = re.compile(r"^\[[^\]]+\]:\s*\S")  # "[swift]: https://…": a link's target, not a sentence
_FIELD = re.compile(r"^[-*]?\s*[\w ]{2,30}:\s")  # "- Feature Name: clamp functions", a front matter field
_CODE_SPAN = re.compile(r"`([^`]+)`")
_PROMPT = re.compile(r"^\s*(?:\$|>>>|#)\s+")
# A comment line in a code block that reads as a sentence: its marker, then at least four words and
# nothing a shell line would hold ("# so we need to copy instead of using hard links.", "/// Returns
# max if self is greater than max"); "# apt install curl" stays a (root prompt's) code line.
_CONTINUED = re.compile(r"^(?:///?!?|#|--)\s+(?=\S)")  # a further line of a comment already started
_COMMENT = re.compile(r"^(?:///?!?|#|--)\s+(?=[A-Za-z`][^=|&;<>$]*$)(?=(?:\S+\s+){3,}\S)")

Embed = Callable[[Sequence[str]], "Sequence[Sequence[float]]"]


@dataclass(frozen=True)
class Sentence:
    text: str
    evidence: Evidence
    doc_rank: int
    chunk_rank: int
    position: int  # of the sentence within its chunk (1 = lead)
    keys: frozenset[str]
    kind: str = "prose"  # prose | comment (a code block's comment that reads as a sentence) | code | table


@dataclass(frozen=True)
class Extract:
    lines: list[tuple[str, Evidence]]  # (sentence, the evidence it is quoted from), best first
    coverage: float  # of the question's subject by the best line's document, 0..1
    similarity: float = 0.0  # of the best line to the question (cosine)
    margin: float = 0.0  # best line's score minus the best line of another document
    reason: str = ""  # why it abstained, when lines is empty
    answered: float = 0.0  # share of the question's subject (IDF-weighted) the lines and their headings carry


def units(text: str) -> list[tuple[str, str]]:
    """(kind, text) of a chunk: prose paragraphs and list items (admonition bodies dedented), code
    lines of fenced or indented blocks, table rows. Headings and HTML are left out."""
    out: list[tuple[str, str]] = []
    cur: list[str] = []
    comment: list[str] = []  # the lines of a comment in a code block
    fenced, admonition = False, False

    def flush():
        if cur:
            out.append(("prose", " ".join(cur)))
            cur.clear()

    def flush_comment():
        # One line each, as the evidence holds them (a quote must be verbatim); a line that runs on
        # into the next is a part, never a sentence of its own.
        for i, s in enumerate(comment):
            runs_on = i + 1 < len(comment) and not s.rstrip().endswith((".", "!", "?", ":"))
            out.append(("comment-part" if runs_on else "comment", s))
        comment.clear()

    for line in text.splitlines():
        s = line.strip()
        if s.startswith(("```", "~~~")):
            fenced = not fenced
            flush()
            flush_comment()
            continue
        if fenced:
            if m := _COMMENT.match(s) or (comment and _CONTINUED.match(s)):
                # a comment says in words what the code after it does
                comment.append(s[m.end() :])
                continue
            flush_comment()
            if s and not s.startswith("//"):
                out.append(("code", s))
            continue
        if _ADMONITION.match(line):
            flush()
            admonition = True
            continue
        if line.startswith(("    ", "\t")) and not cur and not admonition:
            if s:
                out.append(("code", s))
            continue
        if not line.startswith((" ", "\t")) and s:
            admonition = False
        if s.startswith("|"):
            flush()
            if not re.fullmatch(r"[|:\- ]+", s):
                out.append(("table", s))
            continue
        if not s or s.startswith(("#", "<", "[^")) or re.fullmatch(r"[-=*_ ]{3,}", s) or _LINK_DEF.match(s):
            flush()
            continue
        if re.match(r"([-*+]|\d+[.)])\s+", s):  # a list item starts a block of its own
            flush()
        cur.append(s.lstrip("> ").strip() if s.startswith(">") else s)
    flush()
    flush_comment()
    return out


def candidates(evidence: list[Evidence]) -> list[Sentence]:
    """Sentences, code lines and table rows of the evidence."""
    docs: dict[str, int] = {}
    out: list[Sentence] = []
    for rank, e in enumerate(evidence, 1):
        doc_rank = docs.setdefault(e.doc_key, len(docs) + 1)
        pos = 0
        for kind, block in units(e.text):
            if kind.startswith("comment"):
                pos += 1
                if kind == "comment" and MIN_WORDS <= len(tx.words(block)) <= MAX_WORDS:
                    out.append(Sentence(block, e, doc_rank, rank, pos, frozenset(tx.content_keys(block)), kind))
                continue
            if kind != "prose":
                if len(block) <= MAX_CODE_CHARS and tx.words(block):
                    pos += 1
                    text = _PROMPT.sub("", block) if kind == "code" else block
                    out.append(Sentence(text, e, doc_rank, rank, pos, frozenset(tx.content_keys(text)), kind))
                continue
            for s in tx.split_sentences(_BULLET.sub("", block)):
                pos += 1
                n = len(tx.words(s))
                if (
                    not MIN_WORDS <= n <= MAX_WORDS
                    or POINTER_GROUP.search(s)
                    or _markup_heavy(s)
                    or _LINK_ONLY.match(s)
                ):
                    continue
                out.append(Sentence(s, e, doc_rank, rank, pos, frozenset(tx.content_keys(s))))
    return out


def _markup_heavy(s: str) -> bool:
    letters = sum(map(str.isalpha, s))
    return letters < 0.45 * len(s) or s.lstrip().startswith("![")


def _cosines(question: str, texts: list[str], embed: Embed | None) -> list[float]:
    if embed is None or not texts:
        return [0.0] * len(texts)
    vecs = embed([question, *texts])
    q = vecs[0]
    return [float(sum(a * b for a, b in zip(q, v, strict=False))) for v in vecs[1:]]


def extract(
    question: str,
    evidence: list[Evidence],
    max_sentences: int = 4,
    *,
    embed: Embed | None = None,
    stats: sj.CorpusStats | None = None,
    leads: dict[str, tuple[str, str]] | None = None,
) -> Extract:
    """The lines of `evidence` (ordered by retrieval rank) that answer `question`, or none with a reason.
    `leads`: each document's (title, opening text), for which document is about the question."""
    r = rank(question, evidence, embed=embed, stats=stats, leads=leads)
    if r.reason:
        return Extract([], 0.0, reason=r.reason)
    subj, shape, every, scored, qkeys = r.subject, r.shape, r.every, r.scored, frozenset(r.subject.keys)
    best_score, best_sim, best = scored[0]
    doc = best.evidence.doc_key
    carried = sj.carried(subj, [e for e in evidence if e.doc_key == doc], pool=evidence)
    if not carried.ok:
        return Extract([], carried.coverage, best_sim, reason=carried.reason)
    relevance = best_sim + 0.5 * carried.coverage
    if embed is not None and relevance < RELEVANCE_MIN:
        why = f"no passage is close to the question (relevance {relevance:.2f}, {RELEVANCE_MIN} needed)"
        return Extract([], carried.coverage, best_sim, reason=why)
    other = next((sc for sc, _, s in scored if s.evidence.doc_key != doc), 0.0)
    chosen: list[Sentence] = [best, *_followers(best, every, shape, qkeys)]
    lead = [best]  # the lines chosen for themselves; a line that completes one (its code) is not counted

    def add(s: Sentence) -> None:
        lead.append(s)
        chosen.extend([s, *(f for f in _followers(s, every, shape, qkeys) if f not in chosen)])

    # The best document's strong lines first (BEST_DOC_FIRST of them), then the best line of the next
    # best retrieved documents that come close (another document often holds the part the best one
    # leaves out, or is the one that answers), then whatever else scores near the best line.
    strong = [s for sc, _, s in scored[1:] if s.evidence.doc_key == doc and sc >= SAME_DOC * best_score]
    for s in strong[: BEST_DOC_FIRST - 1]:
        if len(lead) < max_sentences and not any(_same(s, c) for c in chosen):
            add(s)
    for s in _others(scored, doc, best_score, subj)[:2]:
        if len(lead) < max_sentences and not any(_same(s, c) for c in chosen):
            add(s)
    for sc, _, s in scored[1:]:
        if len(lead) >= max_sentences:
            break
        need = SAME_DOC if s.evidence.doc_key == doc else OTHER_DOC
        if sc < need * best_score or s in chosen or any(_same(s, c) for c in chosen):
            continue
        if s.evidence.doc_key != doc and any(c.evidence.doc_key == s.evidence.doc_key for c in chosen):
            continue  # another document adds one line at most
        if s.evidence.doc_key != doc and not sj.carried(subj, [s.evidence]).ok:
            continue
        add(s)
    del chosen[max_sentences + 1 :]
    lead[:] = [s for s in lead if s in chosen]  # a lead cut with the tail is no longer one
    about = _about_line(r, doc, best_score)
    if about and not any(c.evidence.doc_key == about.evidence.doc_key or _same(about, c) for c in chosen):
        # The document the question is about has no line yet: its best line comes last, in the room a
        # completing code line may take (the weakest lines make room when there is none).
        while len(lead) > 1 and len(chosen) > max_sentences:
            del chosen[chosen.index(lead.pop()) :]
        add(about)
        del chosen[max_sentences + 1 :]
    if shape in sj.NAMED_SHAPES and not any(sj.has_shape(c.text, shape) for c in chosen):
        # The question names the kind of value it wants and no line holds one: the best line that does,
        # from the best document first (its code lines included), replaces the weakest.
        holders = [s for _, _, s in scored if sj.has_shape(s.text, shape)]
        holders.sort(key=lambda s: s.evidence.doc_key != doc)
        if holders:
            chosen = [*chosen[: max_sentences - 1], holders[0]]
    if shape in sj.NAMED_SHAPES:
        # The value the best document is named for (`dbg!` in "2361-dbg-macro", `#[naked]` in
        # "1201-naked-fns"): when one of its lines holds it and no chosen line does, that line follows
        # the best one (the weakest line makes room).
        mine = [s for _, _, s in scored if s.evidence.doc_key == doc]
        named = [s for s in mine if r.topic.get(id(s), 0.0) > 0 and sj.has_shape(s.text, shape)]
        if named and not any(c in named for c in chosen):
            at = 1 + sum(1 for c in chosen[1:] if c.evidence.pointer == best.evidence.pointer and c.kind == "code")
            chosen = [*chosen[:at], named[0], *chosen[at:]][: max_sentences + 1]
    if name := sj.unframed(subj, map(_context, chosen)):
        # The question is framed by a name ("a Renovate option") that no chosen line speaks of with the
        # question: the best line that does leads instead; with none, the documentation does not answer.
        framed = [s for sc, _, s in scored if sc >= FRAMED_FLOOR * best_score and not sj.unframed(subj, [_context(s)])]
        if not framed:
            return Extract([], carried.coverage, best_sim, reason=sj.UNFRAMED.format(name))
        first = framed[0]
        chosen = [first, *_followers(first, every, shape, qkeys), *(c for c in chosen if c is not first)]
        del chosen[max_sentences + 1 :]
    answered = sj.carried(subj, map(_context, chosen)).coverage
    if max(carried.coverage, answered) < MIN_ANSWERED:
        why = f"the passages found carry {max(carried.coverage, answered):.0%} of what the question asks about"
        return Extract([], carried.coverage, best_sim, reason=why)
    return Extract(
        [(s.text, s.evidence) for s in chosen],
        round(carried.coverage, 3),
        round(best_sim, 3),
        round(best_score - other, 3),
        answered=round(answered, 3),
    )


@dataclass(frozen=True)
class Ranked:
    subject: sj.Subject
    shape: str | None
    every: list[Sentence]  # all candidates, for the lines that complete a chosen one
    scored: list[tuple[float, float, Sentence]]  # (score, similarity, line) of the embedded ones, best first
    reason: str = ""  # when there is nothing to rank
    about: dict[str, float] = field(default_factory=dict)  # doc_key → its opening's similarity to the question
    topic: dict[int, float] = field(default_factory=dict)  # id(line) → the share of its title its code names


def rank(
    question: str,
    evidence: list[Evidence],
    *,
    embed: Embed | None = None,
    stats: sj.CorpusStats | None = None,
    leads: dict[str, tuple[str, str]] | None = None,
) -> Ranked:
    """Every candidate line of `evidence` scored against `question`, best first; and how close each
    document's opening (`leads`: doc_key → (title, opening text)) is to the question."""
    idf = stats.idf if stats else None
    subj = sj.subject(question, idf, stats.absent if stats else ())
    shape = sj.shape(question)
    sents = candidates(evidence)
    if not subj.keys or not sents:
        return Ranked(subj, shape, sents, [], "nothing retrieved" if not sents else "the question names no subject")
    weights = subj.weights if idf else _local_idf(subj.keys, sents)
    total = sum(weights.values()) or 1.0
    every = sents
    sents = _prefilter(sents, weights, shape)
    openings = {k: lead_line(*v) for k, v in (leads or {}).items()} if embed else {}
    sims = _cosines(question, [s.text for s in sents] + list(openings.values()), embed)
    about = dict(zip(openings, sims[len(sents) :], strict=True))
    sims = sims[: len(sents)]

    def terms(keys: frozenset[str]) -> float:
        return sum(w for k, w in weights.items() if k in keys) / total

    heads = {e.pointer: frozenset(tx.content_keys(f"{e.title} {e.section}")) for e in evidence}
    topic = _topic_weights(sents, shape)
    scored = []
    for s, sim in zip(sents, sims, strict=True):
        score = (
            W_SIM * sim
            + W_TERMS * terms(s.keys)
            + W_HEAD * terms(heads[s.evidence.pointer])
            + (W_SHAPE if shape in sj.NAMED_SHAPES else W_SHAPE / 2) * sj.has_shape(s.text, shape)
            + W_TOPIC * topic.get(id(s), 0.0)
            + 0.3 / s.doc_rank
            + 0.02 / s.chunk_rank
            + (0.02 if s.position == 1 else 0.0)
            - 0.002 * max(0, len(s.keys) - 25)  # long sentences say less per word
            - (0.2 if s.kind in ("code", "table") and not sj.has_shape(s.text, shape) else 0.0)
            - (0.15 if _POINTER_ONLY.match(s.text) else 0.0)
            - (0.1 if s.kind == "prose" and s.text[:1].islower() else 0.0)  # a chunk cut mid-sentence
        )
        scored.append((score, sim, s))
    scored.sort(key=lambda t: -t[0])
    return Ranked(subj, shape, every, scored, about=about, topic=topic)


def lead_line(title: str, text: str) -> str:
    """What a document says it is about: its title and its first paragraph of prose (front matter such
    as "- Start Date: 2017-03-26" left out)."""
    for kind, block in units(text):
        if kind == "prose" and len(tx.words(block)) >= 6 and not _FIELD.match(block):
            return f"{title}: {block[:LEAD_CHARS]}"
    return title


def _topic_weights(sents: list[Sentence], shape: str | None) -> dict[int, float]:
    """For a question that asks for a value: the share of its document's title (words weighted by their
    rarity among the candidates) that a line's code spans carry — the value a document is about is often
    its name (`dbg!` in "2361-dbg-macro", `Pin` in "2349-pin")."""
    if shape is None:
        return {}
    idf = _local_idf(sorted({k for s in sents for k in s.keys}), sents)
    out: dict[int, float] = {}
    for s in sents:
        spans = _CODE_SPAN.findall(s.text) if s.kind in ("prose", "comment") else [s.text]
        code = {tx.key(w) for span in spans for w in re.split(r"[\W_]+", tx.fold(span)) if w}
        title = {tx.key(w) for w in re.split(r"[\W_]+", tx.fold(s.evidence.title)) if w and not w.isdigit()}
        total = sum(idf.get(k, 0.0) for k in title)
        if code and total:
            out[id(s)] = sum(idf.get(k, 0.0) for k in title & code) / total
    return out


def _context(s: Sentence) -> str:
    """A line as a reader meets it: under its document's title and section."""
    return f"{s.evidence.title}\n{s.evidence.section}\n{s.text}"


def _about_line(r: Ranked, doc: str, best_score: float) -> Sentence | None:
    """The best line of the document whose opening is clearly closest to the question, when another
    document's line led: the line that scores best is not always in the document the question is about
    (a clamp RFC's line loses to a float RFC's line that mentions clamping)."""
    if not r.about:
        return None
    top = max(r.about, key=lambda k: r.about[k])
    if top == doc or r.about[top] < r.about.get(doc, 0.0) + ABOUT_MARGIN:
        return None
    line = next((s for sc, _, s in r.scored if s.evidence.doc_key == top and sc >= ABOUT_FLOOR * best_score), None)
    return line if line and sj.carried(r.subject, [line.evidence]).ok else None


def _others(
    scored: list[tuple[float, float, Sentence]], doc: str, best_score: float, subj: sj.Subject
) -> list[Sentence]:
    """The best line of each other document, best first, that scores OTHER_DOC of the best line and
    carries the question's subject."""
    firsts: dict[str, Sentence] = {}
    for sc, _, s in scored:
        if s.evidence.doc_key != doc and sc >= OTHER_DOC * best_score:
            firsts.setdefault(s.evidence.doc_key, s)
    return [s for s in firsts.values() if sj.carried(subj, [s.evidence]).ok]


def _followers(best: Sentence, sents: list[Sentence], shape: str | None, q: frozenset[str]) -> list[Sentence]:
    """What completes a line: the code line that a sentence ending in ':' introduces (of the next few,
    the one sharing most words with the question), or — when the question asks for a value the line
    lacks — the next sentence of its chunk that holds one."""
    same = {s.position: s for s in sents if s.evidence.pointer == best.evidence.pointer}
    after = [same[p] for p in range(best.position + 1, best.position + 4) if p in same]
    if best.kind == "comment":  # the code it describes
        return [s for s in after if s.kind == "code"][:1]
    if best.text.rstrip().endswith(":") and after:
        code = [s for s in after if s.kind in ("code", "table")] or after[:1]
        return [max(code, key=lambda s: (len(s.keys & q), -s.position))]
    if shape and not sj.has_shape(best.text, shape):  # for "how do I", the code line that does it
        return [s for s in after[:2] if sj.has_shape(s.text, shape) or shape == "command" and s.kind == "code"][:1]
    return []


def _prefilter(sents: list[Sentence], weights: dict[str, float], shape: str | None = None) -> list[Sentence]:
    """At most MAX_CANDIDATES to embed: those carrying most of the question's words, then retrieval order;
    and, for a question that names the kind of value it wants, up to MAX_HOLDERS lines holding one (in
    retrieval order): `#[naked]` alone on a code line carries none of the question's words."""
    if len(sents) <= MAX_CANDIDATES:
        return sents
    ranked = sorted(range(len(sents)), key=lambda i: (-sum(w for k, w in weights.items() if k in sents[i].keys), i))
    keep = set(ranked[:MAX_CANDIDATES])
    if shape in sj.NAMED_SHAPES:
        keep.update(
            [i for i in range(len(sents)) if i not in keep and sj.has_shape(sents[i].text, shape)][:MAX_HOLDERS]
        )
    return [sents[i] for i in sorted(keep)]


def _local_idf(keys: Sequence[str], sents: list[Sentence]) -> dict[str, float]:
    n = len(sents)
    return {k: math.log(1 + n / (1 + sum(k in s.keys for s in sents))) for k in keys}


def _same(a: Sentence, b: Sentence) -> bool:
    """Says the same as an already chosen line: mostly the same words, and the same code (the line that
    names `#[cfg_attr(c, attr)]` is not the one naming `#[cfg(c)]` in the same words)."""
    if a.text.strip() == b.text.strip():
        return True
    if set(_CODE_SPAN.findall(a.text)) != set(_CODE_SPAN.findall(b.text)):
        return False
    return len(a.keys & b.keys) / (min(len(a.keys), len(b.keys)) or 1) > 0.7


def answer_text(lines: list[tuple[str, Evidence]]) -> str:
    """The raw answer: one verbatim sentence per line, ending with its pointer."""
    return "\n".join(f"{' '.join(s.split())} [{e.pointer}]" for s, e in lines)

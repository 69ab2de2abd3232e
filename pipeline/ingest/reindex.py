"""Model changes without downtime: build the next generation of vectors beside the live one, then switch.

`docforge reindex --model NAME [--dimensions N]`:

1. a `building` generation is made for the model (or the one an interrupted
   reindex left is resumed: its vectors so far are kept);
2. vectors are copied from any other generation of the same model and dimension;
3. every chunk without a vector of the new generation is embedded from the text
   already stored (`embed_prefix || text`: nothing is listed, fetched or parsed),
   one vector per distinct text, in blocks committed as they land (an interrupted
   reindex resumes at the next block); chunks an ingest adds meanwhile are picked
   up by the next pass;
4. one transaction makes the new generation live once it covers every chunk
   (pipeline.store.generations.switch), rewriting the ledger's fingerprint of
   documents whose chunks fit the new model's window, so the next ingest neither
   re-reads nor re-chunks them;
5. the old generation's table is dropped (after searches still reading it end).

Search serves the live generation all along (pipeline.query.search follows the
switch), and ingest keeps writing the live one (pipeline.ingest.embeddings).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import psycopg
from psycopg import sql
from psycopg.rows import class_row

from pipeline.chunk import make_header
from pipeline.config import Settings
from pipeline.embed import Embedder, RemoteEmbedder, TextEmbedder, for_generation, uses_service
from pipeline.errors import EmbedError, StoreError
from pipeline.ingest.chunks import text_hash
from pipeline.ingest.context import fingerprint_of
from pipeline.progress import Progress
from pipeline.store import generations
from pipeline.store.db import advisory_lock, connect
from pipeline.store.generations import Generation
from pipeline.store.schema import upgrade_built

if TYPE_CHECKING:
    from tokenizers import Tokenizer

log = logging.getLogger(__name__)
BLOCK = 512  # distinct texts per encode call / commit
_PAGE = 8192  # chunks read per pass over the pending ones


@dataclass
class ReindexResult:
    generation: int
    model: str
    dimension: int
    vector_type: str
    chunks: int = 0  # chunks the new generation covers
    embedded: int = 0  # texts the model embedded
    reused: int = 0  # chunk vectors copied (same model elsewhere, or the same text)
    rebuilt_prefix: int = 0  # chunks indexed before 0007 whose embedded text was rebuilt (and checked)
    approximate: int = 0  # of those, texts whose rebuilt form does not match their hash (header cut)
    overflow: int = 0  # chunks longer than the new model reads (truncated; re-chunked by the next ingest)
    switched: bool = False
    dropped: list[int] = field(default_factory=list)
    seconds: float = 0.0

    def as_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass(frozen=True)
class _Row:
    seq: int
    doc_key: str
    text_hash: str
    embed_prefix: str | None
    text: str
    heading_path: list[str]
    title: str | None


_PENDING = sql.SQL(
    """
SELECT c.seq, c.doc_key, c.text_hash, c.embed_prefix, c.text, c.heading_path, d.title
FROM chunks c LEFT JOIN documents d ON d.key = c.doc_key
WHERE c.seq > %s AND NOT """
    + generations.KEYWORD_ONLY
    + """
  AND NOT EXISTS (SELECT 1 FROM {vectors} v WHERE v.seq = c.seq)
ORDER BY c.seq LIMIT %s
"""
)
# A text another chunk already has a new vector for: copied, not embedded again.
_REUSE_SAME_TEXT = sql.SQL("""
INSERT INTO {vectors} (seq, embedding)
SELECT c.seq, x.embedding FROM chunks c JOIN (
    SELECT DISTINCT ON (c2.text_hash) c2.text_hash, v.embedding
    FROM chunks c2 JOIN {vectors} v ON v.seq = c2.seq WHERE c2.text_hash = ANY(%(hashes)s)) x
    ON x.text_hash = c.text_hash
WHERE c.seq = ANY(%(seqs)s)
ON CONFLICT (seq) DO NOTHING
""")
_STORE = sql.SQL("""
INSERT INTO {vectors} (seq, embedding)
SELECT c.seq, n.embedding::{type} FROM chunks c JOIN reindex_vectors n ON n.text_hash = c.text_hash
WHERE c.seq = ANY(%(seqs)s)
ON CONFLICT (seq) DO NOTHING
""")
# At the switch: documents indexed under the old generation's fingerprint whose chunks all fit the new
# model now count as chunked for it (ingest then skips them, as before the switch).
_LEDGER = """
UPDATE ledger SET chunker = %(new_chunker)s, model = %(new_model)s
WHERE chunker = %(old_chunker)s AND model = %(old_model)s
  AND doc_key NOT IN (SELECT doc_key FROM generation_overflow WHERE generation = %(gen)s)
"""


def target_embedder(settings: Settings, model: str, dimensions: int | None) -> TextEmbedder:
    """The new generation's embedder: the embedder service's (remote ingest) or one loaded here."""
    cfg = settings.embedding.model_copy(update={"model": model, "fallbacks": [], "dimensions": dimensions})
    if not uses_service(cfg, "ingest"):
        return Embedder(cfg).load()
    token = cfg.token.get_secret_value() if cfg.token else None
    served = []
    for url in cfg.urls:
        remote = RemoteEmbedder(url, token, timeout_s=cfg.timeout_s, max_retries=cfg.max_retries)
        if model in (remote.model_id, remote.name) and dimensions in (None, remote.dimension):
            return remote
        served.append(f"{remote.model_id!r} (dimension {remote.dimension}) at {url}")
    raise EmbedError(
        f"no embedder service in EMBEDDER_URL serves {model!r}"
        + (f" at {dimensions} dimensions" if dimensions else "")
        + f": they serve {', '.join(served)}"
    )


def reindex(
    settings: Settings, url: str, embedder: TextEmbedder, *, keep_old: bool = False, progress: Progress | None = None
) -> ReindexResult:
    """Build `embedder`'s generation beside the live one, switch to it, drop the old one (see module doc)."""
    t0 = time.perf_counter()
    progress = progress or (lambda stage, done, total: None)
    with connect(url) as conn:
        if upgrade_built(conn) is None:
            raise StoreError(
                "the store is empty: there is nothing to reindex (ingest first; a new store is "
                "built with embedding.model)"
            )
        with advisory_lock(conn, "reindex"):  # one reindex at a time; ingest runs alongside
            live = generations.live(conn)
            assert live is not None
            if (live.model, live.dimension) == (embedder.model_id, embedder.dimension):
                log.info("generation %d already embeds with %s at %d dimensions", live.id, live.model, live.dimension)
                return ReindexResult(
                    live.id, live.model, live.dimension, live.vector_type, seconds=time.perf_counter() - t0
                )
            new = _building(conn, embedder)
            result = ReindexResult(new.id, new.model, new.dimension, new.vector_type)
            result.reused += _copy_same_model(conn, new)
            while True:
                _fill(conn, new, embedder, result, progress)
                if not (
                    missing := generations.switch(conn, new, _LEDGER, _ledger_params(settings, live, new, embedder))
                ):
                    break
                log.info("%d chunks arrived while building generation %d: embedding them", missing, new.id)
            result.switched = True
            result.chunks = generations.coverage(conn, generations.get(conn, new.id) or new)[0]
            log.info("generation %d (%s, %d dimensions) is live", new.id, new.model, new.dimension)
            if not keep_old:
                for old in generations.every(conn):
                    if old.state == "retired":
                        generations.drop(conn, old)
                        result.dropped.append(old.id)
            conn.execute("DELETE FROM generation_overflow WHERE generation <> %s", (new.id,))
    result.seconds = round(time.perf_counter() - t0, 3)
    return result


def cancel(url: str) -> Generation | None:
    """Drop the building generation an interrupted reindex left (None when there is none)."""
    with connect(url) as conn:
        if upgrade_built(conn) is None:
            return None
        with advisory_lock(conn, "reindex"):
            gen = generations.building(conn)
            if gen is not None:
                generations.drop(conn, gen)
                conn.execute("DELETE FROM generation_overflow WHERE generation = %s", (gen.id,))
            return gen


def _building(conn: psycopg.Connection, emb: TextEmbedder) -> Generation:
    """The generation being built for `emb`: an interrupted one resumed, else a new one."""
    gen = generations.building(conn)
    if gen is None:
        name = getattr(emb, "name", None) or emb.model_id
        return generations.create(conn, emb.model_id, name, emb.dimension, "building")
    if (gen.model, gen.dimension) != (emb.model_id, emb.dimension):
        raise StoreError(
            f"a reindex to {gen.model!r} ({gen.dimension} dimensions, generation {gen.id}) was "
            f"interrupted: resume it with `docforge reindex --model {gen.name}"
            f"{f' --dimensions {gen.dimension}' if gen.name == gen.model else ''}`, or drop it "
            "with `docforge reindex --cancel`"
        )
    log.info("resuming generation %d (%s)", gen.id, gen.model)
    return gen


def _copy_same_model(conn: psycopg.Connection, new: Generation) -> int:
    """Vectors of a kept generation of the same model and dimension (a switch back): copied."""
    n = 0
    for old in generations.every(conn):
        if old.id != new.id and old.state != "dropped" and old.same_vectors(new):
            with conn.transaction():
                n += conn.execute(
                    sql.SQL(
                        "INSERT INTO {} (seq, embedding) SELECT seq, embedding FROM {} ON CONFLICT (seq) DO NOTHING"
                    ).format(new.table, old.table)
                ).rowcount
    return n


def _fill(
    conn: psycopg.Connection, gen: Generation, emb: TextEmbedder, result: ReindexResult, progress: Progress
) -> None:
    """Give every chunk a vector of `gen`, a page of pending chunks at a time (committed per block)."""
    total, after, done = generations.missing(conn, gen), 0, 0
    counter = _counter(emb)
    conn.execute(
        "CREATE TEMP TABLE IF NOT EXISTS reindex_vectors (text_hash text, embedding vector) ON COMMIT DELETE ROWS"
    )
    while True:
        with conn.cursor(row_factory=class_row(_Row)) as cur:
            rows = cur.execute(_PENDING.format(vectors=gen.table), (after, _PAGE)).fetchall()
        if not rows:
            break
        after = rows[-1].seq
        seqs = [r.seq for r in rows]
        with conn.transaction():
            result.reused += conn.execute(
                _REUSE_SAME_TEXT.format(vectors=gen.table),
                {"hashes": sorted({r.text_hash for r in rows}), "seqs": seqs},
            ).rowcount
        texts: dict[str, _Row] = {}
        for r in rows:
            texts.setdefault(r.text_hash, r)
        todo = _still_pending(conn, gen, seqs, texts)
        for start in range(0, len(todo), BLOCK):
            block = todo[start : start + BLOCK]
            vectors = _encode(emb, [_embed_text(r, result) for r in block])
            if counter is not None:
                _check_window(conn, gen, counter, emb.document_window, block, result)
            with conn.transaction(), conn.cursor() as cur:
                with cur.copy("COPY reindex_vectors (text_hash, embedding) FROM STDIN WITH (FORMAT BINARY)") as copy:
                    copy.set_types(["text", "vector"])
                    for r, v in zip(block, vectors, strict=True):
                        copy.write_row((r.text_hash, v))
                stored = cur.execute(_STORE.format(vectors=gen.table, type=gen.column_type), {"seqs": seqs}).rowcount
            result.embedded += len(block)
            done += stored
            progress("reindex", min(done, total), total)
    progress("reindex", total, total)


def _still_pending(conn: psycopg.Connection, gen: Generation, seqs: list[int], texts: dict[str, _Row]) -> list[_Row]:
    """The distinct texts of `seqs` that still lack a vector (after reuse), longest first."""
    left = {
        h
        for (h,) in conn.execute(
            sql.SQL(
                "SELECT DISTINCT c.text_hash FROM chunks c WHERE c.seq = ANY(%s) "
                "AND NOT EXISTS (SELECT 1 FROM {} v WHERE v.seq = c.seq)"
            ).format(gen.table),
            (seqs,),
        )
    }
    return sorted((texts[h] for h in left if h in texts), key=lambda r: -len(r.text))


def _embed_text(row: _Row, result: ReindexResult) -> str:
    """The text the chunk was embedded from: its stored prefix + text, or (indexed before migration
    0007) the chunker's header rebuilt from title and heading path, checked against the text hash."""
    if row.embed_prefix is not None:
        return row.embed_prefix + row.text
    result.rebuilt_prefix += 1
    header = make_header(row.title or "", row.heading_path)
    options = [f"{header}\n\n{row.text}" if header else row.text, row.text]
    for text in options:
        if text_hash(text) == row.text_hash:
            return text
    result.approximate += 1  # a header the chunker shortened: close enough to embed, counted
    return options[0]


def _encode(emb: TextEmbedder, texts: list[str]) -> np.ndarray:
    vectors = emb.encode(texts, kind="document")
    if not np.isfinite(vectors).all():
        raise EmbedError(
            f"{emb.model_id} gave a vector that is not finite (NaN or inf) for one of {len(texts)} "
            "chunks: this model cannot index the store"
        )
    return vectors


def _counter(emb: TextEmbedder) -> Tokenizer | None:
    """The new model's tokenizer, counting every token (no truncation, no padding); None when there is none."""
    try:
        from tokenizers import Tokenizer

        tok = Tokenizer.from_str(emb.tokenizer.to_str())
    except Exception as e:  # noqa: BLE001 (no tokenizer at hand: the chunks are kept as they are)
        log.warning("cannot count tokens with %s's tokenizer (%s): chunk lengths not checked", emb.model_id, e)
        return None
    tok.no_truncation()
    tok.no_padding()
    return tok


def _check_window(
    conn: psycopg.Connection, gen: Generation, counter: Tokenizer, window: int, block: list[_Row], result: ReindexResult
) -> None:
    """Record documents with chunks longer than the new model reads (it truncates them)."""
    texts = [r.embed_prefix + r.text if r.embed_prefix is not None else r.text for r in block]
    counts = [len(e.ids) for e in counter.encode_batch(texts)]
    over = sorted({r.doc_key for r, n in zip(block, counts, strict=True) if n > window})
    if over:
        result.overflow += sum(n > window for n in counts)
        conn.execute(
            "INSERT INTO generation_overflow (generation, doc_key) SELECT %s, unnest(%s::text[]) "
            "ON CONFLICT DO NOTHING",
            (gen.id, over),
        )


def _ledger_params(settings: Settings, live: Generation, new: Generation, emb: TextEmbedder) -> dict:
    """The ledger rewrite's parameters: the old and new fingerprints (the old model's window is read
    from its files or service; when it cannot be, no fingerprint matches and ingest re-chunks)."""
    try:
        old_emb = for_generation(settings.embedding, live, "ingest")
        old = fingerprint_of(old_emb, settings.chunking)
    except Exception as e:  # noqa: BLE001 (the old model is gone: its documents are re-chunked later)
        log.warning("the live model %s cannot be read (%s): the next ingest re-chunks every document", live.model, e)
        old = None
    now = fingerprint_of(emb, settings.chunking)
    return {
        "new_chunker": now.chunker,
        "new_model": now.model,
        "old_chunker": old.chunker if old else "",
        "old_model": old.model if old else "",
        "gen": new.id,
    }

"""bench/index_pages.py --vectors: index pages with vectors and without, on one store (see its doc)."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import time
from pathlib import Path


def run_vectors(args: argparse.Namespace) -> Path:
    """Measure, print; returns the store's home (the caller stops its server)."""
    import psycopg

    from pipeline.config import SearchConfig, load_settings
    from pipeline.ingest import IngestContext, ingest_source
    from pipeline.store.db import store_url

    name = args.manual.resolve().name
    d = args.stores / f"{name}-vectors"
    d.mkdir(parents=True, exist_ok=True)
    rows = [json.loads(line) for line in args.questions.read_text(encoding="utf-8").splitlines() if line.strip()]
    rows = [r for r in rows if r.get("phrases")]
    share = SearchConfig().index_link_share  # the configured one is read below, from the store's config
    manual = _subset(args.manual, rows, args.stores / f"{name}-subset", share) if args.subset else args.manual
    config = d / "sources.yml"
    source = f"sources:\n  - name: {name}\n    type: directory\n    path: {manual.resolve()}\n"
    config.write_text(source + "embedding:\n  index_pages: true\n", encoding="utf-8")
    os.environ["DOCFORGE_HOME"] = str(d / "home")
    os.environ.pop("DATABASE_URL", None)
    settings = load_settings(config)
    ctx = IngestContext(settings)
    t = time.perf_counter()
    stats = ingest_source(ctx, name)
    ingest_s = time.perf_counter() - t
    url, share = store_url(settings), settings.search.index_link_share
    with psycopg.connect(url) as conn:
        texts = [r[0] for r in conn.execute(_INDEX_TEXTS, {"share": share}).fetchall()]
        n_chunks, n_pages, n_index = conn.execute(_COUNTS, {"share": share}).fetchone()
    print(f"{name}: {n_pages} pages, {n_index} index pages (link share ≥ {share}); {n_chunks} chunks, "
          f"{len(texts)} of them on index pages ({100 * len(texts) / max(n_chunks, 1):.1f} %)")  # fmt: skip
    print(f"  ingest, every page embedded: {ingest_s:.1f} s ({stats.chunks_embedded} chunks embedded)")
    ctx.embedder.encode(texts[:8])  # warm
    t = time.perf_counter()
    ctx.embedder.encode(texts)
    skipped_s = time.perf_counter() - t
    print(f"  their chunks encoded alone: {skipped_s:.1f} s = {100 * skipped_s / ingest_s:.1f} % of that ingest")
    before = _found(settings, rows)
    with psycopg.connect(url) as conn:
        _keyword_only(conn, share)
    after = _found(settings, rows)
    n = len(rows)
    print(f"{n} answerable questions, top 5, answer phrase in a hit:")
    for mode in before:
        print(f"  {mode:<8} index pages embedded {before[mode]:>3} of {n}   keyword only {after[mode]:>3} of {n}")
    return d / "home"


_INDEX_TEXTS = """
SELECT coalesce(c.embed_prefix, '') || c.text FROM chunks c JOIN documents d ON d.key = c.doc_key
WHERE coalesce((d.meta->>'link_share')::real, 0) >= %(share)s
"""
_COUNTS = """
SELECT (SELECT count(*) FROM chunks), count(*), count(*) FILTER (WHERE coalesce((meta->>'link_share')::real, 0)
       >= %(share)s) FROM documents
"""


def _keyword_only(conn, share: float) -> None:
    """The store as the default ingest leaves it: index pages marked keyword-only, without vectors."""
    from pipeline.store import generations

    gen = generations.live(conn)
    assert gen is not None
    with conn.transaction():
        conn.execute(
            "UPDATE documents SET meta = meta || '{\"keyword_only\": true}' "
            "WHERE coalesce((meta->>'link_share')::real, 0) >= %(share)s",
            {"share": share},
        )
        conn.execute(
            f'DELETE FROM "{gen.table_name}" v USING chunks c JOIN documents d ON d.key = c.doc_key '
            f"WHERE v.seq = c.seq AND {generations.KEYWORD_ONLY}"
        )


def _found(settings, rows: list[dict]) -> dict[str, int]:
    """Questions with an answer phrase in a top-5 hit, per mode."""
    from pipeline.query import Searcher

    out = {}
    with Searcher(settings, reranker=None) as searcher:
        for mode in ("hybrid", "dense", "keyword"):
            out[mode] = sum(
                any(
                    p in " ".join(h.text.split()) for h in searcher.search(r["question"], 5, mode) for p in r["phrases"]
                )
                for r in rows
            )
    return out


def _subset(manual: Path, rows: list[dict], to: Path, share: float) -> Path:
    """The pages the questions name and the manual's index pages, copied into `to` (kept when there)."""
    if to.exists():
        return to
    import hashlib

    from pipeline.parse import parse_document
    from pipeline.records import DocRef, Document

    keep = {Path(r["page"]).name for r in rows if r.get("page")}
    for page in sorted(manual.glob("*.htm*")):
        text = page.read_text(encoding="utf-8", errors="replace")
        ref = DocRef(key=f"m:{page.name}", path=page.name)
        doc = Document(ref, "html", page.stem, "", text, hashlib.sha256(text.encode()).hexdigest())
        if parse_document(doc).link_share >= share:
            keep.add(page.name)
    tmp = to.with_name(to.name + ".part")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    for name in sorted(keep):
        shutil.copy2(manual / name, tmp / name)
    tmp.rename(to)
    return to

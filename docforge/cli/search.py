"""`docforge search`: query the index, with citations."""

from __future__ import annotations

import json

import click

from docforge.cli.options import config_option, filter_option, json_option, mode_option
from pipeline.config import SearchConfig

JSON_KEYS = (
    "doc_key",
    "url",
    "title",
    "section",
    "text",
    "score",
    "chunk_index",
    "source",
    "type",
    "page",
    "rerank_score",
)
EXPLAIN_KEYS = ("dense_rank", "keyword_rank")


def require_indexed(searcher) -> None:
    """Exit 1, saying what to run, when the store holds no chunk at all."""
    from docforge.cli.running import in_progress_line, ingesting
    from pipeline.store.schema import store_model

    with searcher.connection() as conn:
        empty = store_model(conn) is None or conn.execute("SELECT NOT EXISTS (SELECT 1 FROM chunks)").fetchone()[0]
        running = ingesting(conn, [s.name for s in searcher.settings.sources]) if empty else []
    if running:
        raise click.ClickException(_fit(f"nothing is searchable yet: {in_progress_line(running)}"))
    if empty:
        where = searcher.settings.config_path
        raise click.ClickException(
            _fit(
                f"nothing is indexed yet (sources from {where}): run `docforge ingest` for the configured "
                "sources, or `docforge ingest PATH…` to index a folder"
            )
        )


def _fit(message: str) -> str:
    """A message wrapped to the terminal, after the "Error: " click puts before it."""
    import shutil
    import textwrap

    width = shutil.get_terminal_size().columns - len("Error: ")
    return "\n".join(textwrap.wrap(message, max(20, width), break_on_hyphens=False, break_long_words=False))


@click.command("search")
@click.argument("query")
@config_option
@mode_option("Dense vectors, keyword (BM25), or both fused [env: DOCFORGE_SEARCH_MODE].", "DOCFORGE_SEARCH_MODE")
@click.option("--limit", "-n", type=click.IntRange(1, 100), default=5, show_default=True, help="Hits to return.")
@filter_option('Filter expression, e.g. \'{"source": "handbook", "path": {"$prefix": "docs/"}}\' (docs/query.md).')
@click.option(
    "--rerank/--no-rerank",
    default=None,
    help="Rerank the candidates (needs RERANK_ENABLED=true and RERANKER_MODEL or RERANKER_URL). "
    "Default: on when enabled.",
)
@click.option(
    "--per-doc",
    type=click.IntRange(0),
    default=None,
    metavar="N",
    help="At most N chunks of one document in the results (0: no limit) "
    f"[default: {SearchConfig.model_fields['per_doc'].default}, env: DOCFORGE_SEARCH_PER_DOC].",
)
@click.option("--explain", is_flag=True, help="Show each hit's dense and keyword rank next to its fused score.")
@json_option
def command(
    query: str,
    config: str,
    mode: str,
    limit: int,
    filters: dict | None,
    rerank: bool | None,
    per_doc: int | None,
    explain: bool,
    as_json: bool,
) -> None:
    """Search the indexed documentation.

    \b
    Examples:
      docforge search "how do I rotate credentials?"
      docforge search "error E0502" --mode keyword --json
      docforge search "borrow checker" --per-doc 1      # one chunk per document
      docforge search "deploy" --filter '{"tags": {"$in": ["ops"]}}' --explain
    """
    import time

    from pipeline.config import load_settings
    from pipeline.query import Searcher
    from pipeline.usage import for_search, record_once

    settings = load_settings(config)
    with Searcher(settings, keep_queries=True) as searcher:  # a query asked before loads no model
        t = time.perf_counter()
        hits = searcher.search(query, limit=limit, mode=mode, filters=filters, rerank=rerank, per_doc=per_doc)
        ms = (time.perf_counter() - t) * 1000
        if not hits:
            require_indexed(searcher)  # an empty store is an error that says what to run, not "no results"
        record_once(searcher.url, settings.usage, lambda c: for_search(c, "cli", "local", query, mode, hits, ms))
    if as_json:
        keys = JSON_KEYS + (EXPLAIN_KEYS if explain else ())
        click.echo(json.dumps([{k: h.as_dict()[k] for k in keys} for h in hits], indent=2, ensure_ascii=False))
        return
    _print(query, hits, explain)


def _print(query: str, hits, explain: bool) -> None:
    """Each hit as a block that reads at any width (docforge.cli.render)."""
    from rich.console import Console
    from rich.text import Text

    import docforge.cli.render as render
    from pipeline.query.hits import where

    console = Console(highlight=False)
    if not hits:
        console.print(Text(f"No results for {query!r}: try other words, --mode keyword, or a wider --filter."))
        return
    console.print(Text(f"Results for {query!r}", style="bold"))
    words = render.terms(query)
    for i, h in enumerate(hits, 1):
        extra = [f"rerank {h.rerank_score:.3f}"] if h.rerank_score is not None else []
        if explain:
            extra.append(f"dense #{h.dense_rank or '-'}, keyword #{h.keyword_rank or '-'}")
        head = render.heading(where(h.title, h.section), f"({'; '.join(extra)})" if extra else "")
        cite = render.citation(h.doc_key, h.source, h.url, h.page)
        render.emit(
            console, render.block(f"{i:>2}", f"{h.score:.3f}", head, cite, render.excerpt(h.text, words), console.width)
        )

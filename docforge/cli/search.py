"""`docforge search`: query the index, with citations."""

from __future__ import annotations

import json

import click

from docforge.cli.options import config_option, filter_option, json_option
from pipeline.config import load_settings
from pipeline.query import MODES, SearchConfig, Searcher

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


@click.command("search")
@click.argument("query")
@config_option
@click.option(
    "--mode",
    "-m",
    type=click.Choice(MODES),
    default="hybrid",
    show_default=True,
    envvar="DOCFORGE_SEARCH_MODE",
    help="Dense vectors, keyword (BM25), or both fused [env: DOCFORGE_SEARCH_MODE].",
)
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
    with Searcher(load_settings(config)) as searcher:
        hits = searcher.search(query, limit=limit, mode=mode, filters=filters, rerank=rerank, per_doc=per_doc)
    if as_json:
        keys = JSON_KEYS + (EXPLAIN_KEYS if explain else ())
        click.echo(json.dumps([{k: h.as_dict()[k] for k in keys} for h in hits], indent=2, ensure_ascii=False))
        return
    _print(query, hits, explain)


def _print(query: str, hits, explain: bool) -> None:
    """A table of the hits. Query, titles, excerpts and URLs go in as rich `Text`, never markup:
    `x[a..b]` and `[links](…)` print as typed."""
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    console = Console()
    if not hits:
        console.print(Text(f"No results for {query!r}."))
        return
    reranked = any(h.rerank_score is not None for h in hits)
    cols = ["#", "score"] + (["rerank"] if reranked else []) + (["dense#", "kw#"] if explain else [])
    table = Table(
        *cols, "title › section", "excerpt", "citation", title=Text(f"Results for {query!r}"), show_lines=True
    )
    for i, h in enumerate(hits, 1):
        excerpt = " ".join(h.text.split())[:160]
        extra = [f"{h.rerank_score:.3f}" if h.rerank_score is not None else "-"] if reranked else []
        if explain:
            extra += [str(h.dense_rank or "-"), str(h.keyword_rank or "-")]
        where = _where(h.title, h.section) + (f" (page {h.page})" if h.page is not None else "")
        table.add_row(str(i), f"{h.score:.3f}", *extra, Text(where), Text(excerpt), Text(h.url))
    console.print(table)


def _where(title: str, section: str) -> str:
    """Title › section, without repeating a title that is also the top heading."""
    if not section or section == title:
        return title
    return section if section.startswith(f"{title} > ") else f"{title} › {section}"

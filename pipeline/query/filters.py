"""Filter expressions → parameterised SQL over `chunks c JOIN documents doc`.

An expression is a JSON object, Mongo style:

    {"type": "git", "tags": {"$in": ["ops", "sre"]}, "path": {"$contains": "deploy"}}
    {"$or": [{"space": "ENG"}, {"repo": {"$contains": "handbook"}}], "chunk_index": {"$lt": 3}}

Keys of one object are ANDed. A bare value means `$eq` (a bare list, `$in`).
Operators: $eq $ne $gt $gte $lt $lte $in $nin $contains $prefix, and $and/$or
over lists of expressions. Fields are a fixed allowlist (`FIELDS`) plus
`meta.<key>` for any key of `documents.meta`. SQL is only ever assembled from
constant fragments in this module; every value and meta key travels as a bind
parameter, so no input can change the statement.
"""

from __future__ import annotations

import reprlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from psycopg import sql
from psycopg.types.json import Jsonb

from pipeline.errors import QueryError
from pipeline.parse.text import first_surrogate

TEXT, NUM, TIME, TAGS, JSON = "text", "number", "timestamp", "tags", "json"
# name → (SQL expression over c/doc, kind). Labels are merged into tags at ingest;
# team/area match a tag or the meta key of that name.
FIELDS: dict[str, tuple[str, str]] = {
    "type": ("doc.type", TEXT),
    "source": ("doc.source", TEXT),  # the sources.yml name
    "doc_key": ("doc.key", TEXT),
    "path": ("doc.uri", TEXT),
    "url": ("doc.url", TEXT),
    "title": ("doc.title", TEXT),
    "section": ("c.section", TEXT),
    "repo": ("(doc.meta->>'repo')", TEXT),
    "space": ("(doc.meta->>'space')", TEXT),
    "commit": ("(doc.meta->>'commit')", TEXT),
    "tags": ("doc.tags", TAGS),
    "labels": ("doc.tags", TAGS),
    "team": ("(doc.tags || (doc.meta->>'team'))", TAGS),
    "area": ("(doc.tags || (doc.meta->>'area'))", TAGS),
    "chunk_index": ("c.ordinal", NUM),
    "token_count": ("c.token_count", NUM),
    "indexed_at": ("doc.last_crawled_at", TIME),
}
# Older names, still accepted so saved filters keep working; not advertised.
DEPRECATED = {"partition": "source", "key": "doc_key"}
OPERATORS = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin", "$contains", "$prefix")
_COMPARE = {"$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}
# The complexity budget's defaults (search.filter_max_*). A filter is user input and its cost grows with
# each value and condition it holds: past the budget it is refused, naming the limit, before any SQL runs.
MAX_VALUES, MAX_DEPTH, MAX_TERMS = 1000, 8, 64


@dataclass
class _Compiler:
    max_values: int = MAX_VALUES
    max_depth: int = MAX_DEPTH
    max_terms: int = MAX_TERMS
    params: dict[str, Any] = field(default_factory=dict)
    terms: int = 0  # conditions on fields, and branches of $and/$or
    values: int = 0  # scalars compared against, list items counted one by one

    def spend(self, terms: int = 0, values: int = 0) -> None:
        self.terms += terms
        self.values += values
        if self.terms > self.max_terms:
            raise QueryError(
                f"filter has more than {self.max_terms} conditions (fields and $and/$or branches "
                "together; the limit is search.filter_max_terms, DOCFORGE_SEARCH_FILTER_MAX_TERMS)"
            )
        if self.values > self.max_values:
            raise QueryError(
                f"filter holds more than {self.max_values} values in all (the limit is "
                "search.filter_max_values, DOCFORGE_SEARCH_FILTER_MAX_VALUES)"
            )

    def param(self, value: Any, cast: str = "") -> sql.Composable:
        name = f"f{len(self.params)}"
        self.params[name] = value
        return sql.SQL("{}{}").format(sql.Placeholder(name), sql.SQL(cast))

    def expr(self, node: Any, depth: int = 0) -> sql.Composable:
        if depth > self.max_depth:
            raise QueryError(
                f"filter is nested deeper than {self.max_depth} levels (the limit is "
                "search.filter_max_depth, DOCFORGE_SEARCH_FILTER_MAX_DEPTH)"
            )
        if not isinstance(node, dict):
            raise QueryError(f"a filter must be a JSON object, got {type(node).__name__}: {_shown(node)}")
        parts = [self.logical(k, v, depth) if k.startswith("$") else self.field(k, v) for k, v in node.items()]
        return _join(parts, "AND")

    def logical(self, op: str, value: Any, depth: int) -> sql.Composable:
        if op not in ("$and", "$or"):
            raise QueryError(f"unknown operator {_shown(op)} at the top of a filter: use $and/$or, or a field name")
        if not isinstance(value, list) or not value:
            raise QueryError(f"{op} takes a non-empty list of filter objects, got {_shown(value)}")
        self.spend(terms=len(value))
        return _join([self.expr(v, depth + 1) for v in value], "AND" if op == "$and" else "OR")

    def field(self, name: str, spec: Any) -> sql.Composable:
        target, kind = self.resolve(name)
        if not isinstance(spec, dict):
            spec = {"$in": spec} if isinstance(spec, list) else {"$eq": spec}
        if not spec:
            raise QueryError(f"field {_shown(name)}: empty condition {{}}")
        out = []
        for op, value in spec.items():
            self.spend(terms=1, values=len(value) if isinstance(value, list) else 1)
            if op not in OPERATORS:
                raise QueryError(
                    f"unknown operator {_shown(op)} on field {_shown(name)}: use one of {', '.join(OPERATORS)}"
                )
            build = _BUILDERS[kind].get(op)
            if build is None:
                raise QueryError(f"operator {op} does not apply to {kind} field {_shown(name)}")
            out.append(build(self, target, _check(name, op, kind, value)))
        return _join(out, "AND")

    def resolve(self, name: str) -> tuple[sql.Composable, str]:
        if name in FIELDS or name in DEPRECATED:
            expr, kind = FIELDS[DEPRECATED.get(name, name)]
            return sql.SQL(expr), kind
        if name.startswith("meta.") and len(name) > 5:
            return sql.SQL("(doc.meta -> {})").format(self.param(_text(name[5:]), "::text")), JSON
        raise QueryError(f"unknown filter field {_shown(name)}: use one of {', '.join(FIELDS)} or meta.<key>")


def with_repo(filters: dict | None, repo: str | None) -> dict | None:
    """`filters` ANDed with "the repository's path or URL contains `repo`" (the surfaces' `filter_repo`)."""
    if not repo:
        return filters
    match = {"$or": [{"repo": {"$contains": repo}}, {"url": {"$contains": repo}}]}
    return {"$and": [filters, match]} if filters else match


def compile_filter(
    expr: dict | None, *, max_values: int = MAX_VALUES, max_depth: int = MAX_DEPTH, max_terms: int = MAX_TERMS
) -> tuple[sql.Composable, dict[str, Any]]:
    """(SQL condition, bind parameters); TRUE for no filter. Raises QueryError on a bad expression, or one
    over the complexity budget: more values in all, deeper $and/$or nesting, or more conditions than given."""
    if not expr:
        return sql.SQL("TRUE"), {}
    c = _Compiler(max_values, max_depth, max_terms)
    return c.expr(expr), c.params


def _join(parts: list[sql.Composable], op: str) -> sql.Composable:
    if not parts:
        return sql.SQL("TRUE")
    return sql.SQL("(") + sql.SQL(f" {op} ").join(parts) + sql.SQL(")")


def _check(name: str, op: str, kind: str, value: Any) -> Any:
    """Reject values of the wrong shape before they reach the database."""
    if op in ("$in", "$nin"):
        if not isinstance(value, list):
            raise QueryError(f"field {_shown(name)}: {op} takes a list of values, got {_shown(value)}")
        return [_scalar(name, op, kind, v) for v in value]
    if value is None and op in ("$eq", "$ne"):
        return None
    return _scalar(name, op, kind, value)


def _scalar(name: str, op: str, kind: str, value: Any) -> Any:
    if kind == NUM:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise QueryError(f"field {_shown(name)} is a number: {op} needs a number, got {_shown(value)}")
        return value
    if kind == JSON:
        if isinstance(value, (dict, list)) or (op in ("$contains", "$prefix") and not isinstance(value, str)):
            raise QueryError(f"field {_shown(name)}: {op} needs a string, number or boolean, got {_shown(value)}")
        return _text(value) if isinstance(value, str) else value
    if not isinstance(value, str):
        raise QueryError(f"field {_shown(name)} is {kind}: {op} needs a string, got {_shown(value)}")
    return _text(value)


def _text(value: str) -> str:
    if (i := first_surrogate(value)) is not None:  # no UTF-8 form: it could never reach the database
        raise QueryError(
            f"a filter string is not valid Unicode: a lone surrogate U+{ord(value[i]):04X} at character {i}"
        )
    # Postgres text cannot hold NUL, so no stored value contains one: U+FFFD matches the same nothing.
    return value.replace("\x00", "\ufffd")


_SHORT = reprlib.Repr()  # keyword arguments only from Python 3.12
_SHORT.maxstring = _SHORT.maxother = 80
_SHORT.maxlist = _SHORT.maxdict = 5


def _shown(value: Any) -> str:
    """A value, shortened for an error message (a list of a thousand values is not repeated back)."""
    return _SHORT.repr(value)


def _text_ops(cast: str = "") -> dict[str, Callable]:
    # `x op v AND x IS NOT NULL` is never NULL (so NOT of it is exact) and, unlike
    # coalesce(x op v, false), lets the planner use an index on x (documents.key, source).
    def cmp(sym: str) -> Callable:
        return lambda c, t, v: sql.SQL("({} {} {} AND {} IS NOT NULL)").format(t, sql.SQL(sym), c.param(v, cast), t)

    def eq(c, t, v):
        return sql.SQL("{} IS NULL").format(t) if v is None else cmp("=")(c, t, v)

    arr = (cast or "::text") + "[]"
    ops = {
        "$eq": eq,
        "$ne": lambda c, t, v: sql.SQL("NOT {}").format(eq(c, t, v)),
        "$in": lambda c, t, v: sql.SQL("({} = ANY({}) AND {} IS NOT NULL)").format(t, c.param(v, arr), t),
        "$nin": lambda c, t, v: sql.SQL("NOT ({} = ANY({}) AND {} IS NOT NULL)").format(t, c.param(v, arr), t),
        **{op: cmp(sym) for op, sym in _COMPARE.items()},
    }
    if not cast:  # case-insensitive substring / exact prefix, no LIKE wildcards to escape
        ops["$contains"] = lambda c, t, v: sql.SQL("coalesce(strpos(lower({}), lower({})) > 0, false)").format(
            t, c.param(v, "::text")
        )
        ops["$prefix"] = lambda c, t, v: sql.SQL("coalesce(starts_with({}, {}), false)").format(t, c.param(v, "::text"))
    return ops


def _has_tag(c, t, v):
    return sql.SQL("coalesce({} = ANY({}), false)").format(c.param(v, "::text"), t)


def _has_any(c, t, v):
    return sql.SQL("coalesce({} && {}, false)").format(t, c.param(v, "::text[]"))


_TAGS = {
    "$eq": _has_tag,
    "$contains": _has_tag,
    "$ne": lambda c, t, v: sql.SQL("NOT {}").format(_has_tag(c, t, v)),
    "$in": _has_any,
    "$nin": lambda c, t, v: sql.SQL("NOT {}").format(_has_any(c, t, v)),
}


def _json_eq(c, t, v):
    if v is None:
        return sql.SQL("({} IS NULL OR {} = 'null'::jsonb)").format(t, t)
    return sql.SQL("coalesce({} = {} OR (jsonb_typeof({}) = 'array' AND {} @> {}), false)").format(
        t, c.param(Jsonb(v)), t, t, c.param(Jsonb([v]))
    )


def _json_cmp(sym: str) -> Callable:
    return lambda c, t, v: sql.SQL("coalesce({} {} {}, false)").format(t, sql.SQL(sym), c.param(Jsonb(v)))


def _json_in(c, t, v):
    # _json_eq for any of v, as one array parameter: not an OR (and two parameters) per value.
    parts = []
    if values := [x for x in v if x is not None]:
        arr = c.param([Jsonb(x) for x in values], "::jsonb[]")
        parts.append(
            sql.SQL(
                "coalesce({} = ANY({}) OR (jsonb_typeof({}) = 'array' AND EXISTS ("
                "SELECT 1 FROM jsonb_array_elements({}) e WHERE e = ANY({}))), false)"
            ).format(t, arr, t, t, arr)
        )
    if len(values) < len(v):
        parts.append(_json_eq(c, t, None))
    return _join(parts, "OR") if parts else sql.SQL("FALSE")


def _json_contains(c, t, v):
    return sql.SQL(
        "coalesce(CASE jsonb_typeof({}) WHEN 'array' THEN {} @> {} WHEN 'string' THEN "
        "strpos(lower({} #>> ARRAY[]::text[]), lower({})) > 0 END, false)"
    ).format(t, t, c.param(Jsonb([v])), t, c.param(v, "::text"))


def _json_prefix(c, t, v):
    return sql.SQL("coalesce(jsonb_typeof({}) = 'string' AND starts_with({} #>> ARRAY[]::text[], {}), false)").format(
        t, t, c.param(v, "::text")
    )


_JSON = {
    "$eq": _json_eq,
    "$ne": lambda c, t, v: sql.SQL("NOT {}").format(_json_eq(c, t, v)),
    "$in": _json_in,
    "$nin": lambda c, t, v: sql.SQL("NOT {}").format(_json_in(c, t, v)),
    "$contains": _json_contains,
    "$prefix": _json_prefix,
    **{op: _json_cmp(sym) for op, sym in _COMPARE.items()},
}
_BUILDERS: dict[str, dict[str, Callable]] = {
    TEXT: _text_ops(),
    NUM: _text_ops("::numeric"),
    TIME: _text_ops("::timestamptz"),
    TAGS: _TAGS,
    JSON: _JSON,
}

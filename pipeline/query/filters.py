"""Filter expressions → parameterised SQL over `chunks c JOIN sources s`.

An expression is a JSON object, Mongo style:

    {"type": "git", "tags": {"$in": ["ops", "sre"]}, "path": {"$contains": "deploy"}}
    {"$or": [{"space": "ENG"}, {"repo": {"$contains": "handbook"}}], "chunk_index": {"$lt": 3}}

Keys of one object are ANDed. A bare value means `$eq` (a bare list, `$in`).
Operators: $eq $ne $gt $gte $lt $lte $in $nin $contains $prefix, and $and/$or
over lists of expressions. Fields are a fixed allowlist (`FIELDS`) plus
`meta.<key>` for any key of `sources.meta`. SQL is only ever assembled from
constant fragments in this module; every value and meta key travels as a bind
parameter, so no input can change the statement.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from psycopg import sql
from psycopg.types.json import Jsonb

from pipeline.errors import QueryError

TEXT, NUM, TIME, TAGS, JSON = "text", "number", "timestamp", "tags", "json"
# name → (SQL expression over c/s, kind). Labels are merged into tags at ingest;
# team/area match a tag or the meta key of that name.
FIELDS: dict[str, tuple[str, str]] = {
    "type": ("s.type", TEXT),
    "source": ("s.partition", TEXT),
    "partition": ("s.partition", TEXT),
    "key": ("s.key", TEXT),
    "path": ("s.uri", TEXT),
    "url": ("s.url", TEXT),
    "title": ("s.title", TEXT),
    "section": ("c.section", TEXT),
    "repo": ("(s.meta->>'repo')", TEXT),
    "space": ("(s.meta->>'space')", TEXT),
    "commit": ("(s.meta->>'commit')", TEXT),
    "tags": ("s.tags", TAGS),
    "labels": ("s.tags", TAGS),
    "team": ("(s.tags || (s.meta->>'team'))", TAGS),
    "area": ("(s.tags || (s.meta->>'area'))", TAGS),
    "chunk_index": ("c.ordinal", NUM),
    "token_count": ("c.token_count", NUM),
    "indexed_at": ("s.last_crawled_at", TIME),
}
OPERATORS = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin", "$contains", "$prefix")
_COMPARE = {"$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}
MAX_DEPTH, MAX_CLAUSES, MAX_LIST = 8, 64, 1000


@dataclass
class _Compiler:
    params: dict[str, Any] = field(default_factory=dict)
    clauses: int = 0

    def param(self, value: Any, cast: str = "") -> sql.Composable:
        name = f"f{len(self.params)}"
        self.params[name] = value
        return sql.SQL("{}{}").format(sql.Placeholder(name), sql.SQL(cast))

    def expr(self, node: Any, depth: int = 0) -> sql.Composable:
        if depth > MAX_DEPTH:
            raise QueryError(f"filter is nested deeper than {MAX_DEPTH} levels")
        if not isinstance(node, dict):
            raise QueryError(f"a filter must be a JSON object, got {type(node).__name__}: {node!r}")
        parts = [self.logical(k, v, depth) if k.startswith("$") else self.field(k, v) for k, v in node.items()]
        return _join(parts, "AND")

    def logical(self, op: str, value: Any, depth: int) -> sql.Composable:
        if op not in ("$and", "$or"):
            raise QueryError(f"unknown operator {op!r} at the top of a filter: use $and/$or, or a field name")
        if not isinstance(value, list) or not value:
            raise QueryError(f"{op} takes a non-empty list of filter objects, got {value!r}")
        return _join([self.expr(v, depth + 1) for v in value], "AND" if op == "$and" else "OR")

    def field(self, name: str, spec: Any) -> sql.Composable:
        target, kind = self.resolve(name)
        if not isinstance(spec, dict):
            spec = {"$in": spec} if isinstance(spec, list) else {"$eq": spec}
        if not spec:
            raise QueryError(f"field {name!r}: empty condition {{}}")
        out = []
        for op, value in spec.items():
            self.clauses += 1
            if self.clauses > MAX_CLAUSES:
                raise QueryError(f"filter has more than {MAX_CLAUSES} conditions")
            if op not in OPERATORS:
                raise QueryError(f"unknown operator {op!r} on field {name!r}: use one of {', '.join(OPERATORS)}")
            build = _BUILDERS[kind].get(op)
            if build is None:
                raise QueryError(f"operator {op} does not apply to {kind} field {name!r}")
            out.append(build(self, target, _check(name, op, kind, value)))
        return _join(out, "AND")

    def resolve(self, name: str) -> tuple[sql.Composable, str]:
        if name in FIELDS:
            expr, kind = FIELDS[name]
            return sql.SQL(expr), kind
        if name.startswith("meta.") and len(name) > 5:
            return sql.SQL("(s.meta -> {})").format(self.param(_text(name[5:]), "::text")), JSON
        raise QueryError(f"unknown filter field {name!r}: use one of {', '.join(FIELDS)} or meta.<key>")


def compile_filter(expr: dict | None) -> tuple[sql.Composable, dict[str, Any]]:
    """(SQL condition, bind parameters); TRUE for no filter. Raises QueryError on a bad expression."""
    if not expr:
        return sql.SQL("TRUE"), {}
    c = _Compiler()
    return c.expr(expr), c.params


def _join(parts: list[sql.Composable], op: str) -> sql.Composable:
    if not parts:
        return sql.SQL("TRUE")
    return sql.SQL("(") + sql.SQL(f" {op} ").join(parts) + sql.SQL(")")


def _check(name: str, op: str, kind: str, value: Any) -> Any:
    """Reject values of the wrong shape before they reach the database."""
    if op in ("$in", "$nin"):
        if not isinstance(value, list) or len(value) > MAX_LIST:
            raise QueryError(f"field {name!r}: {op} takes a list of at most {MAX_LIST} values, got {value!r}")
        return [_scalar(name, op, kind, v) for v in value]
    if value is None and op in ("$eq", "$ne"):
        return None
    return _scalar(name, op, kind, value)


def _scalar(name: str, op: str, kind: str, value: Any) -> Any:
    if kind == NUM:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise QueryError(f"field {name!r} is a number: {op} needs a number, got {value!r}")
        return value
    if kind == JSON:
        if isinstance(value, (dict, list)) or (op in ("$contains", "$prefix") and not isinstance(value, str)):
            raise QueryError(f"field {name!r}: {op} needs a string, number or boolean, got {value!r}")
        return _text(value) if isinstance(value, str) else value
    if not isinstance(value, str):
        raise QueryError(f"field {name!r} is {kind}: {op} needs a string, got {value!r}")
    return _text(value)


def _text(value: str) -> str:
    # Postgres text cannot hold NUL, so no stored value contains one: U+FFFD matches the same nothing.
    return value.replace("\x00", "\ufffd")


def _text_ops(cast: str = "") -> dict[str, Callable]:
    # `x op v AND x IS NOT NULL` is never NULL (so NOT of it is exact) and, unlike
    # coalesce(x op v, false), lets the planner use an index on x (sources.key, partition).
    def cmp(sym: str) -> Callable:
        return lambda c, t, v: sql.SQL("({} {} {} AND {} IS NOT NULL)").format(t, sql.SQL(sym), c.param(v, cast), t)

    def eq(c, t, v):
        return sql.SQL("{} IS NULL").format(t) if v is None else cmp("=")(c, t, v)

    arr = (cast or "::text") + "[]"
    ops = {"$eq": eq, "$ne": lambda c, t, v: sql.SQL("NOT {}").format(eq(c, t, v)),
           "$in": lambda c, t, v: sql.SQL("({} = ANY({}) AND {} IS NOT NULL)").format(t, c.param(v, arr), t),
           "$nin": lambda c, t, v: sql.SQL("NOT ({} = ANY({}) AND {} IS NOT NULL)").format(t, c.param(v, arr), t),
           **{op: cmp(sym) for op, sym in _COMPARE.items()}}
    if not cast:  # case-insensitive substring / exact prefix, no LIKE wildcards to escape
        ops["$contains"] = lambda c, t, v: sql.SQL("coalesce(strpos(lower({}), lower({})) > 0, false)").format(
            t, c.param(v, "::text"))
        ops["$prefix"] = lambda c, t, v: sql.SQL("coalesce(starts_with({}, {}), false)").format(t, c.param(v, "::text"))
    return ops


def _has_tag(c, t, v):
    return sql.SQL("coalesce({} = ANY({}), false)").format(c.param(v, "::text"), t)


def _has_any(c, t, v):
    return sql.SQL("coalesce({} && {}, false)").format(t, c.param(v, "::text[]"))


_TAGS = {"$eq": _has_tag, "$contains": _has_tag, "$ne": lambda c, t, v: sql.SQL("NOT {}").format(_has_tag(c, t, v)),
         "$in": _has_any, "$nin": lambda c, t, v: sql.SQL("NOT {}").format(_has_any(c, t, v))}


def _json_eq(c, t, v):
    if v is None:
        return sql.SQL("({} IS NULL OR {} = 'null'::jsonb)").format(t, t)
    return sql.SQL("coalesce({} = {} OR (jsonb_typeof({}) = 'array' AND {} @> {}), false)").format(
        t, c.param(Jsonb(v)), t, t, c.param(Jsonb([v])))


def _json_cmp(sym: str) -> Callable:
    return lambda c, t, v: sql.SQL("coalesce({} {} {}, false)").format(t, sql.SQL(sym), c.param(Jsonb(v)))


def _json_in(c, t, v):
    return _join([_json_eq(c, t, x) for x in v], "OR") if v else sql.SQL("FALSE")


def _json_contains(c, t, v):
    return sql.SQL("coalesce(CASE jsonb_typeof({}) WHEN 'array' THEN {} @> {} WHEN 'string' THEN "
                   "strpos(lower({} #>> ARRAY[]::text[]), lower({})) > 0 END, false)").format(
        t, t, c.param(Jsonb([v])), t, c.param(v, "::text"))


def _json_prefix(c, t, v):
    return sql.SQL("coalesce(jsonb_typeof({}) = 'string' AND starts_with({} #>> ARRAY[]::text[], {}), false)").format(
        t, t, c.param(v, "::text"))


_JSON = {"$eq": _json_eq, "$ne": lambda c, t, v: sql.SQL("NOT {}").format(_json_eq(c, t, v)),
         "$in": _json_in, "$nin": lambda c, t, v: sql.SQL("NOT {}").format(_json_in(c, t, v)),
         "$contains": _json_contains, "$prefix": _json_prefix,
         **{op: _json_cmp(sym) for op, sym in _COMPARE.items()}}
_BUILDERS: dict[str, dict[str, Callable]] = {
    TEXT: _text_ops(), NUM: _text_ops("::numeric"), TIME: _text_ops("::timestamptz"), TAGS: _TAGS, JSON: _JSON}

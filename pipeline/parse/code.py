"""Source code → one section per function, class or method, with the symbol path as its heading path.

tree-sitter grammars (the per-language PyPI wheels: tree-sitter-python, -go ...)
give each file's syntax tree; a function, class, method, type, impl block or SQL
`CREATE` statement is a section whose heading path is `module › Class › method`.
Classes, impl blocks, namespaces and traits are containers: their members are
sections of their own, and the lines between members (fields, a class's
docstring) a section of the container. Lines outside any symbol (imports,
constants) are sections of the module. Comments just above a symbol go with it.
A chunk never holds two symbols (`Parsed.pack` is off), so its heading path names
what it holds; the chunker cuts a long function at blank lines, then lines, so no
chunk is over the window. A container's closing bracket joins the member before
it. A language without a grammar here, or a file whose tree holds no symbol, is
split by blank lines and lines alone.
"""

from __future__ import annotations

import importlib
import re
from functools import cache
from pathlib import PurePosixPath
from typing import Any

from pipeline.parse.blocks import as_code
from pipeline.parse.parsed import Parsed
from pipeline.parse.plain import paragraphs
from pipeline.parse.text import scrub
from pipeline.records import Section

# format → (module, function returning the grammar)
GRAMMARS = {
    "python": ("tree_sitter_python", "language"),
    "javascript": ("tree_sitter_javascript", "language"),
    "typescript": ("tree_sitter_typescript", "language_typescript"),
    "tsx": ("tree_sitter_typescript", "language_tsx"),
    "go": ("tree_sitter_go", "language"),
    "rust": ("tree_sitter_rust", "language"),
    "java": ("tree_sitter_java", "language"),
    "c": ("tree_sitter_c", "language"),
    "cpp": ("tree_sitter_cpp", "language"),
    "shell": ("tree_sitter_bash", "language"),
    "sql": ("tree_sitter_sql", "language"),
}
MAX_NESTING = 8  # containers deeper than this are kept whole: bounded recursion on any input

_CONTAINERS = {
    "class_definition",
    "class_declaration",
    "abstract_class_declaration",
    "class",
    "class_specifier",
    "struct_specifier",
    "namespace_definition",
    "internal_module",
    "impl_item",
    "trait_item",
    "mod_item",
    "interface_declaration",
    "enum_declaration",
    "record_declaration",
}
_LEAVES = {
    "function_definition",
    "function_declaration",
    "generator_function_declaration",
    "method_definition",
    "method_declaration",
    "constructor_declaration",
    "function_item",
    "function_signature_item",
    "type_alias_declaration",
    "struct_item",
    "enum_item",
    "union_item",
    "type_item",
    "macro_definition",
    "type_declaration",
    "type_definition",
    "annotation_type_declaration",
    "union_specifier",
}
# Containers that are leaves in some languages: a C struct has no methods, a TS enum or interface no bodies.
_LEAF_IN = {
    ("c", "struct_specifier"),
    ("typescript", "enum_declaration"),
    ("tsx", "enum_declaration"),
    ("typescript", "interface_declaration"),
    ("tsx", "interface_declaration"),
}
_WRAPPERS = {"export_statement", "decorated_definition", "template_declaration", "expression_statement"}
_COMMENTS = {"comment", "line_comment", "block_comment"}
_FUNCTION_VALUES = {"arrow_function", "function_expression", "function", "generator_function", "class"}
_BODIES = {
    "class_body",
    "block",
    "declaration_list",
    "field_declaration_list",
    "statement_block",
    "interface_body",
    "enum_body",
}
_CLOSING = re.compile(r"[\s})\];,]*")  # only closing brackets: no section of its own
_DECLARATOR_NAMES = {
    "identifier",
    "field_identifier",
    "qualified_identifier",
    "operator_name",
    "destructor_name",
    "type_identifier",
}


@cache
def _parser(fmt: str):
    import tree_sitter

    module, fn = GRAMMARS[fmt]
    return tree_sitter.Parser(tree_sitter.Language(getattr(importlib.import_module(module), fn)()))


def module_name(path: str, fmt: str) -> str:
    """How a file is named in its symbols' paths: a Python module's dotted name, else the file name."""
    p = PurePosixPath(path)
    if fmt == "python":
        parts = list(p.with_suffix("").parts)
        if parts and parts[-1] == "__init__":
            parts.pop()
        parts = [x for x in parts if x not in ("src", "lib", "/")] or [p.stem]
        return ".".join(parts)
    return p.name


def parse_code(text: str, fmt: str, path: str) -> Parsed:
    """Sections by symbol for a format with a grammar, else by blank lines (the chunker then cuts by lines)."""
    text = scrub(text).replace("\r\n", "\n").replace("\r", "\n")
    module = (module_name(path, fmt),)
    if fmt not in GRAMMARS:
        return Parsed("", as_code(paragraphs(text, module), fmt) if text.strip() else [], pack=False)
    tree = _parser(fmt).parse(text.encode("utf-8"))
    lines = text.split("\n")
    walker = _Walker(fmt, lines)
    spans = walker.scope(tree.root_node, module, 0, len(lines), 0)
    if not walker.symbols:  # a script of plain statements: blank lines are its only structure
        return Parsed("", as_code(paragraphs(text, module), fmt) if text.strip() else [], pack=False)
    sections: list[Section] = []
    for symbol_path, a, b in spans:
        body = "\n".join(lines[a:b])
        if sections and _CLOSING.fullmatch(body):  # a container's closing `};` goes with the member before it
            sections[-1] = Section(sections[-1].heading_path, f"{sections[-1].text}\n{body}")
        elif body.strip():
            sections.append(Section(symbol_path, body))
    return Parsed("", as_code(sections, fmt), pack=False)  # a chunk holds one symbol: its path names it


class _Walker:
    def __init__(self, fmt: str, lines: list[str]):
        self.fmt, self.lines, self.symbols = fmt, lines, 0

    def scope(self, node, path: tuple[str, ...], start: int, end: int, depth: int) -> list[tuple[tuple, int, int]]:
        """(path, first line, line after) spans covering lines [start, end) of a scope, in order."""
        out: list[tuple[tuple, int, int]] = []
        pos = start
        for child in node.children:
            found = self.symbol(child)
            if found is None:
                continue
            names, sym, body = found
            a = max(pos, self._leading_comments(child), start)
            b = min(max(child.end_point.row + 1, a), end)
            if b <= a:
                continue
            if a > pos:
                out.append((path, pos, a))
            self.symbols += 1
            inner = path + names
            # A container on one line is kept whole: its members could not be told apart by lines.
            if body is not None and b - a > 1 and depth < MAX_NESTING and (self.fmt, sym.type) not in _LEAF_IN:
                out += self.scope(body, inner, a, b, depth + 1)
            else:
                out.append((inner, a, b))
            pos = b
        if pos < end:
            out.append((path, pos, end))
        return out

    def _leading_comments(self, node) -> int:
        """The first line of the comments directly above a node (its own first line if none)."""
        row = node.start_point.row
        prev = node.prev_sibling
        while prev is not None and prev.type in _COMMENTS and prev.end_point.row >= row - 1:
            row = prev.start_point.row
            prev = prev.prev_sibling
        return row

    def symbol(self, node) -> tuple[tuple[str, ...], Any, Any | None] | None:
        """(name parts, the symbol's node, its body if a container) for a symbol node, else None."""
        inner = node
        for _ in range(4):  # export default, decorators, templates wrap a declaration
            if inner.type not in _WRAPPERS:
                break
            decl = inner.child_by_field_name("declaration") or inner.child_by_field_name("definition")
            decl = decl or next((c for c in reversed(inner.named_children) if c.type not in _COMMENTS), None)
            if decl is None:
                return None
            inner = decl
        t = inner.type
        if self.fmt == "sql":
            return self._sql(inner)
        if t in ("lexical_declaration", "variable_declaration"):
            for d in inner.named_children:
                value = d.child_by_field_name("value")
                if d.type == "variable_declarator" and value is not None and value.type in _FUNCTION_VALUES:
                    return (_text(d.child_by_field_name("name")) or "?",), inner, None
            return None
        if t not in _CONTAINERS and t not in _LEAVES:
            return None
        body = inner.child_by_field_name("body") if t in _CONTAINERS else None
        if body is None and t in _CONTAINERS:
            body = next((c for c in inner.named_children if c.type in _BODIES), None)
        if t in ("struct_specifier", "union_specifier", "class_specifier") and body is None:
            return None  # a use of the type (`struct S x;`), not its definition
        names = self._names(inner)
        return (names, inner, body) if names else None

    def _names(self, node) -> tuple[str, ...]:
        t = node.type
        if t == "method_declaration" and self.fmt == "go":
            recv = _text(node.child_by_field_name("receiver"))
            m = re.search(r"(\w+)\s*(?:\[[^\]]*\])?\s*\)\s*$", recv)
            name = _text(node.child_by_field_name("name"))
            return (m.group(1), name) if m else (name,)
        if t == "type_declaration":
            spec = next((c for c in node.named_children if c.type in ("type_spec", "type_alias")), None)
            return (_text(spec.child_by_field_name("name")),) if spec is not None else ()
        if t == "impl_item":
            ty = re.sub(r"<.*", "", _text(node.child_by_field_name("type"))).strip()
            return (ty,) if ty else ()
        if t in ("function_definition", "type_definition") and self.fmt in ("c", "cpp"):
            d = node.child_by_field_name("declarator")
            for _ in range(16):
                if d is None or d.type in _DECLARATOR_NAMES:
                    break
                d = d.child_by_field_name("declarator") or next(
                    (c for c in d.named_children if c.type in _DECLARATOR_NAMES), None
                )
            return (_text(d),) if d is not None and _text(d) else ()
        name = _text(node.child_by_field_name("name"))
        if not name and t == "class":
            name = "default"
        return (name,) if name else ()

    def _sql(self, node) -> tuple[tuple[str, ...], Any, None] | None:
        stmt = node.named_children[0] if node.type == "statement" and node.named_children else node
        kind = stmt.type
        if not kind.startswith(("create_", "alter_")):
            return None
        ref = next((c for c in stmt.named_children if c.type == "identifier"), None) if kind == "create_index" else None
        ref = ref or next((c for c in stmt.named_children if c.type in ("object_reference", "identifier")), None)
        label = kind.replace("create_", "").replace("_", " ")
        return ((f"{label} {_text(ref)}" if ref is not None else label),), node, None


def _text(node) -> str:
    return " ".join(node.text.decode("utf-8", "replace").split()) if node is not None and node.text else ""

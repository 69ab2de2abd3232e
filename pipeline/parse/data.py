"""Configuration and data files (YAML, TOML, JSON) → one section per top-level key.

The heading path is `file › key`, so "what does `services` configure" finds the
`services:` block. YAML and TOML are split on their text, by lines (comments just
above a key go with it; TOML splits at `[table]` headers): the file as written is
what a reader should see. JSON is split on its parsed top-level object, each key
re-printed; JSON that does not parse, or is not an object, is split by lines.
"""

from __future__ import annotations

import json
import re
from pathlib import PurePosixPath

from pipeline.parse.blocks import as_code
from pipeline.parse.parsed import Parsed
from pipeline.parse.plain import paragraphs
from pipeline.parse.text import scrub
from pipeline.records import Section

# Linear on any line (no two quantifiers compete for the same characters): a hostile file cannot stall them.
_YAML_KEY = re.compile(r"""^(?:"((?:[^"\\]|\\.)*)"|'([^']*)'|([^\s#\-?:'"!&*|>%@`{}\[\],][^:#]*)):(?:[ \t]|$)""")
_TOML_TABLE = re.compile(r"^[ \t]*\[\[?([^\]\n]+)\]\]?[ \t]*(?:#.*)?$")
_COMMENT = re.compile(r"^[ \t]*#")


def parse_data(text: str, fmt: str, path: str) -> Parsed:
    text = scrub(text).replace("\r\n", "\n").replace("\r", "\n")
    file = (PurePosixPath(path).name,)
    if fmt == "json":
        sections = _json(text, file)
    else:
        lines = text.split("\n")
        starts = [(i, _key(fmt, line)) for i, line in enumerate(lines)]
        sections = _split(lines, [(i, k) for i, k in starts if k], file)
    sections = sections or (paragraphs(text, file) if text.strip() else [])
    return Parsed("", as_code(sections, fmt), pack=False)  # a chunk per key


def _key(fmt: str, line: str) -> str | None:
    if fmt == "yaml":
        m = _YAML_KEY.match(line)
        key = next((g for g in m.groups() if g is not None), None) if m else None
        return key.strip() if key else None
    m = _TOML_TABLE.match(line)
    return m.group(1).replace('"', "").replace(" ", "").replace("\t", "") if m else None


def _split(lines: list[str], keys: list[tuple[int, str]], file: tuple[str, ...]) -> list[Section]:
    if not keys:
        return []
    out: list[Section] = []
    bounds = []
    for i, key in keys:
        start = i
        while start > 0 and _COMMENT.match(lines[start - 1]):  # a key's comments go with it
            start -= 1
        bounds.append((start, key))
    bounds = [(s, k) for n, (s, k) in enumerate(bounds) if n == 0 or s > bounds[n - 1][0]]
    if bounds[0][0] > 0:
        out.append(Section(file, "\n".join(lines[: bounds[0][0]])))
    for n, (start, key) in enumerate(bounds):
        end = bounds[n + 1][0] if n + 1 < len(bounds) else len(lines)
        out.append(Section(file + (key,), "\n".join(lines[start:end])))
    return [s for s in out if s.text.strip()]


def _json(text: str, file: tuple[str, ...]) -> list[Section]:
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return []
    if not isinstance(data, dict):
        return []
    try:
        return [
            Section(
                file + (str(k),), f"{json.dumps(k, ensure_ascii=False)}: {json.dumps(v, indent=2, ensure_ascii=False)}"
            )
            for k, v in data.items()
        ]
    except (ValueError, RecursionError):  # nested too deep to print: read it by lines
        return []

"""Outside JSON is measured before it is decoded (pipeline/json_strict.py): too large or too deep is a
JSONDecodeError that says which, never a RecursionError; brackets inside strings are no nesting."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from docforge.cli import main
from pipeline import json_strict


@pytest.mark.parametrize("text", ["[" * 100_000 + "]" * 100_000, '{"a": ' * 5000 + "1" + "}" * 5000])
def test_deep_text_is_refused_before_decoding(text):
    with pytest.raises(json.JSONDecodeError, match="nested .* deep"):
        json_strict.loads(text)
    with pytest.raises(json.JSONDecodeError, match="nested"):
        json_strict.loads(text.encode())


def test_brackets_inside_strings_do_not_count():
    text = json.dumps({"q": "[" * 1000 + '\\" {{{', "n": [[1, 2], {"k": "]]]"}]})
    assert json_strict.depth(text) == 3 == json_strict.depth(text.encode())
    assert json_strict.loads(text)["n"][1]["k"] == "]]]"


def test_the_depth_bound_is_exact():
    at = "[" * json_strict.MAX_DEPTH + "]" * json_strict.MAX_DEPTH
    assert json_strict.depth(at) == json_strict.MAX_DEPTH
    json_strict.loads(at)
    with pytest.raises(json.JSONDecodeError):
        json_strict.loads("[" + at + "]")


def test_size_is_bounded():
    with pytest.raises(json.JSONDecodeError, match="too large"):
        json_strict.loads(b'"' + b"x" * 100 + b'"', max_bytes=50)
    assert json_strict.loads('"' + "é" * 20 + '"', max_bytes=50) == "é" * 20  # 42 bytes of UTF-8


def test_docforge_verify_answers_a_deep_line_and_verifies_the_next():
    ok = json.dumps({"answer": "Keys rotate yearly [E1].", "evidence": {"E1": "Keys rotate yearly."}})
    res = CliRunner().invoke(main, ["verify"], input=("[" * 100_000 + "]" * 100_000 + "\n" + ok + "\n").encode())
    lines = [json.loads(line) for line in res.output.splitlines() if line.startswith("{")]
    assert "nested" in lines[0]["error"] and "error" not in lines[1], res.output

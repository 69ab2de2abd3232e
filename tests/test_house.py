"""House rules a reviewer should not have to check by eye: package `__init__`s only re-export, modules
and bench scripts stay under 400 lines and functions under 80 (docs/architecture.md, "Sizes"), no class
name means two things, no large file is tracked outside tests/, migrations are numbered 1..n once each,
and the import graph, package `__init__`s included, has no cycle (test_layers.py holds the contracts
that keep it so; this walks the whole graph, so a cycle no contract foresaw fails here too)."""

from __future__ import annotations

import ast
import re
import subprocess
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("pipeline", "assets", "resources", "orchestration", "docforge")
HOUSE = (*PACKAGES, "bench")  # everything that is not a test: the code and the scripts that measure it
MODULE_MAX_LINES = 400  # docs/architecture.md, "Sizes": a module or bench script past this is two concerns
FUNCTION_MAX_LINES = 80  # docs/architecture.md, "Sizes": a function past this is two steps
TRACKED_MAX_BYTES = 1 << 20  # data worth more than 1 MB belongs in ../shared/data, not in git
LAZY_EXPORT = "__getattr__"  # a module-level __getattr__ that imports on first use is still a re-export


def tracked(pattern: str) -> list[Path]:
    out = subprocess.run(["git", "ls-files", pattern], cwd=ROOT, capture_output=True, text=True, check=True)
    return [ROOT / p for p in out.stdout.split()]


def test_package_inits_only_re_export():
    defining = {}
    for init in tracked("*__init__.py"):
        tree = ast.parse(init.read_text(), str(init))
        names = [
            n.name
            for n in tree.body
            if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and n.name != LAZY_EXPORT
        ]
        if names:
            defining[str(init.relative_to(ROOT))] = names
    assert not defining, f"move these into a module named for what they do: {defining}"


def house_files() -> list[Path]:
    return [p for pkg in HOUSE for p in tracked(f"{pkg}/*.py")]


def test_no_module_or_bench_script_is_too_long():
    long = {
        str(p.relative_to(ROOT)): n for p in house_files() if (n := len(p.read_text().splitlines())) > MODULE_MAX_LINES
    }
    assert not long, f"split these by what each part does (over {MODULE_MAX_LINES} lines): {long}"


def test_no_function_is_too_long():
    long = {
        f"{p.relative_to(ROOT)}:{n.lineno} {n.name}": size
        for p in house_files()
        for n in ast.walk(ast.parse(p.read_text(), str(p)))
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
        and (size := n.end_lineno - n.lineno + 1) > FUNCTION_MAX_LINES  # type: ignore[operator]
    }
    assert not long, f"split these into steps named for what they do (over {FUNCTION_MAX_LINES} lines): {long}"


def test_no_class_name_is_defined_twice():
    """One name per concept (issue 50): a second `Block` or `Plan` elsewhere is a second concept, so it gets
    its own name. Across every package of the house (the four the issue names, and resources)."""
    homes: dict[str, list[str]] = {}
    for pkg in PACKAGES:
        for p in tracked(f"{pkg}/*.py"):
            for n in ast.walk(ast.parse(p.read_text(), str(p))):
                if isinstance(n, ast.ClassDef):
                    homes.setdefault(n.name, []).append(f"{p.relative_to(ROOT)}:{n.lineno}")
    assert homes, "no classes found: the test reads nothing"
    twice = {name: where for name, where in homes.items() if len(where) > 1}
    assert not twice, f"name each for what it is: {twice}"


def test_no_large_file_is_tracked_outside_tests():
    large = {
        str(p.relative_to(ROOT)): s
        for p in tracked("*")
        if p.relative_to(ROOT).parts[0] != "tests" and p.is_file() and (s := p.stat().st_size) > TRACKED_MAX_BYTES
    }
    assert not large, f"tracked files over {TRACKED_MAX_BYTES} bytes: {large}"


def test_migrations_are_numbered_contiguously_once_each():
    names = sorted(p.name for p in (ROOT / "pipeline/store/migrations").glob("*.sql"))
    numbers = [int(m.group(1)) for n in names if (m := re.match(r"(\d+)_", n))]
    assert len(numbers) == len(names), f"a migration without a number: {names}"
    assert numbers == list(range(1, len(numbers) + 1)), f"gaps or duplicates: {numbers}"


def grimp_edges(graph: grimp.ImportGraph) -> dict[str, set[str]]:
    return {m: set(graph.find_modules_directly_imported_by(m)) for m in graph.modules}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on.add(start)
        while work:
            node, edges = work[-1]
            nxt = next((m for m in edges if m in graph), None)
            if nxt is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    comp = []
                    while True:
                        m = stack.pop()
                        on.discard(m)
                        comp.append(m)
                        if m == node:
                            break
                    if len(comp) > 1:
                        found.append(sorted(comp))
            elif nxt not in index:
                index[nxt] = low[nxt] = len(index)
                stack.append(nxt)
                on.add(nxt)
                work.append((nxt, iter(sorted(graph[nxt]))))
            elif nxt in on:
                low[node] = min(low[node], index[nxt])
    return found


def test_cycle_finder_finds_a_cycle(tmp_path, monkeypatch):
    pkg = tmp_path / "loop"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from loop.a import x\n")
    (pkg / "a.py").write_text("import loop\nx = 1\n")
    (pkg / "b.py").write_text("x = 2\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert cycles(grimp_edges(grimp.build_graph("loop", cache_dir=None))) == [["loop", "loop.a"]]


def test_no_import_cycle_anywhere():
    found = cycles(grimp_edges(grimp.build_graph(*PACKAGES, cache_dir=None)))
    assert not found, f"import cycles: {found}"


def module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def load_time_imports(body: list[ast.stmt]) -> list[ast.Import | ast.ImportFrom]:
    """The imports a module runs as it loads: top level, inside `if`/`try`/`with`, not under TYPE_CHECKING
    and not inside a function (those run when called, after every module has loaded)."""
    found: list[ast.Import | ast.ImportFrom] = []
    for node in body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            found.append(node)
        elif isinstance(node, ast.If):
            if "TYPE_CHECKING" not in ast.unparse(node.test):
                found += load_time_imports(node.body)
            found += load_time_imports(node.orelse)
        elif isinstance(node, ast.Try):
            for block in (node.body, node.orelse, node.finalbody, *(h.body for h in node.handlers)):
                found += load_time_imports(block)
        elif isinstance(node, ast.With):
            found += load_time_imports(node.body)
    return found


def package_graph(root: Path, packages: tuple[str, ...]) -> dict[str, set[str]]:
    """Who runs whom as it loads, with a package meaning its `__init__`. Unlike grimp, `from pkg import mod`
    is an edge to `pkg` as well as to `pkg.mod`: it reads the package's namespace, which is half made while
    the package's own `__init__` is what loads the importer. A bench script's bare `import x` is `bench.x`."""
    files = {module_name(p, root): p for pkg in packages for p in (root / pkg).rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        here = name if path.name == "__init__.py" else name.rpartition(".")[0]
        found: set[str] = set()
        for node in load_time_imports(ast.parse(path.read_text(), str(path)).body):
            if isinstance(node, ast.Import):
                found |= {a.name for a in node.names}
                continue
            base = node.module or ""
            if node.level:
                up = here.split(".")[: len(here.split(".")) - node.level + 1]
                base = ".".join([*up, *([node.module] if node.module else [])])
            found |= {base, *(f"{base}.{a.name}" for a in node.names)}
        if name.startswith("bench."):
            found |= {f"bench.{m}" for m in found}
        graph[name] = {m for m in found if m in files} - {name}
    return graph


def test_package_graph_sees_a_package_read_while_it_loads(tmp_path):
    pkg = tmp_path / "loop"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from loop.a import x\n")
    (pkg / "a.py").write_text("from loop import b\nx = b.y\n")
    (pkg / "b.py").write_text("y = 2\n")
    (pkg / "c.py").write_text("def late():\n    import loop\n")
    assert cycles(package_graph(tmp_path, ("loop",))) == [["loop", "loop.a"]]


def test_no_package_reads_itself_while_it_loads():
    """Issue 50: `pipeline.answers.verify`'s `__init__` loaded `audit`, which loaded `strategies`, which ran
    `from pipeline.answers.verify import ...` on the half-made package. Import a sibling by its full name."""
    found = cycles(package_graph(ROOT, HOUSE))
    assert not found, f"import circles through a package `__init__`: {found}"


def test_every_data_file_of_a_package_ships_in_the_wheel():
    """A file a package reads at run time (SQL, parameters, the page) is in pyproject's package-data: an
    install that is not editable (the API image) has only what the wheel holds."""
    import fnmatch
    import tomllib

    data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    globs = [f"{pkg.replace('.', '/')}/{g}" for pkg, gs in data.items() for g in gs]
    files = [p.relative_to(ROOT).as_posix() for pkg in PACKAGES for p in tracked(f"{pkg}/*") if p.suffix != ".py"]
    assert files, "no data files found: the test reads nothing"
    assert [f for f in files if not any(fnmatch.fnmatch(f, g) for g in globs)] == []


def test_the_answer_layer_names_no_corpus_product_or_dataset():
    # Issue 33: the answerer and verifier hold for documentation nobody tuned them on, so no rule, word list
    # or comment under pipeline/answers/ names a corpus they were fitted or measured on (bench/sets/corpora.yml)
    # or a dataset or product the earlier rules were written for.
    import yaml

    corpora = [c["name"] for c in yaml.safe_load((ROOT / "bench/sets/corpora.yml").read_text())["corpora"]]
    names = corpora + ["rfc", "rfcs", "rust", "cargo", "halueval", "scifact", "sqlite", "wikipedia"]
    pattern = re.compile(r"(?<![\w-])(" + "|".join(map(re.escape, names)) + r")(?![\w-])", re.I)
    found = [
        f"{p.relative_to(ROOT)}:{i}: {m.group(0)}"
        for p in sorted((ROOT / "pipeline/answers").rglob("*.py"))
        for i, line in enumerate(p.read_text().splitlines(), 1)
        for m in pattern.finditer(line)
    ]
    assert not found, found


def bench_imports() -> dict[str, set[str]]:
    """bench/'s modules and the bench modules each imports (by its bare name or as `bench.x`)."""
    names = {p.stem for p in tracked("bench/*.py")}
    graph: dict[str, set[str]] = {}
    for path in tracked("bench/*.py"):
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and node.module:
                found.add(node.module.removeprefix("bench."))
                if node.module == "bench":
                    found |= {a.name for a in node.names}
            elif isinstance(node, ast.Import):
                found |= {a.name.removeprefix("bench.") for a in node.names}
        graph[path.stem] = found & names - {path.stem}
    return graph


def test_no_bench_module_imports_back_what_imports_it():
    """bench/'s scripts share helpers through modules that import none of them back (issue 50)."""
    graph, found = bench_imports(), []
    for start in graph:
        stack, seen = [(start, [start])], set()
        while stack:
            node, path = stack.pop()
            for nxt in graph[node]:
                if nxt == start:
                    found.append(" -> ".join([*path, nxt]))
                elif nxt not in seen:
                    seen.add(nxt)
                    stack.append((nxt, [*path, nxt]))
    assert graph["query"] and not found, f"bench import circles: {sorted(set(found))}"


BROAD = {"Exception", "BaseException"}


def broad(handler: ast.ExceptHandler) -> bool:
    kinds = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return any(k is None or (isinstance(k, ast.Name) and k.id in BROAD) for k in kinds)


def test_every_broad_catch_says_why():
    """Issue 50: a catch names what can fail; one that must stay broad (a per-item loop that must not stop the
    others, a library's many kinds mapped once at its boundary) says why on its `except` line. A handler
    that cleans up and raises again catches nothing."""
    silent = []
    for p in house_files():
        lines = p.read_text().splitlines()
        for n in ast.walk(ast.parse("\n".join(lines), str(p))):
            if not isinstance(n, ast.ExceptHandler) or not broad(n) or "#" in lines[n.lineno - 1]:
                continue
            if not any(isinstance(s, ast.Raise) and s.exc is None for s in n.body):  # cleans up, raises again
                silent.append(f"{p.relative_to(ROOT)}:{n.lineno}")
    assert not silent, f"catch what can fail, or say in a comment why every fault is caught here: {silent}"

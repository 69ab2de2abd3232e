"""Who may read what, at ingest (issue 27): a source's `access:` and what a listing finds (DocRef.access)
become documents.access and the ledger's fingerprint; a change of either is applied in place, with no
document re-cut and no vector computed."""

from __future__ import annotations

import json
from dataclasses import replace

import psycopg
import pytest

from pipeline import access
from pipeline.config import load_settings
from pipeline.errors import ConfigError
from pipeline.ingest import IngestContext, ingest_source
from pipeline.ingest import documents as stage1
from pipeline.ingest.noop import settled
from pipeline.sources.directory import DirectorySource
from tests.helpers import write_files


def run(config, url, embedder, source):
    return ingest_source(IngestContext(load_settings(config), url=url, embedder=embedder), source)


def stored(url, source):
    with psycopg.connect(url) as conn:
        return {
            k: (a, h)
            for k, a, h in conn.execute(
                "SELECT d.key, d.access, l.access_hash FROM documents d JOIN ledger l ON l.doc_key = d.key "
                "WHERE d.source = %s ORDER BY d.key",
                (source,),
            )
        }


@pytest.fixture
def folders(tmp_path):
    for name, text in (("open", "Lunch is served at noon."), ("hr", "Salary bands are reviewed in March.")):
        write_files(tmp_path / name, {"a.md": f"# {name}\n\n{text}\n", "b.md": f"# {name} b\n\nMore {name}.\n"})
    return tmp_path


def test_a_source_access_is_stored_and_an_edit_is_applied_without_a_vector(
    folders, write_config, database_url, embedder
):
    config = write_config(
        [
            {"name": "open", "type": "directory", "path": str(folders / "open")},
            {"name": "hr", "type": "directory", "path": str(folders / "hr"), "access": ["hr", "user:Boss@X.com"]},
        ]
    )
    first = run(config, database_url, embedder, "hr")
    assert first.chunks_embedded > 0 and first.files_access_updated == 0
    run(config, database_url, embedder, "open")
    clause = [["group:hr", "user:boss@x.com"]]  # canonical: sorted, user ids lower-cased
    rows = stored(database_url, "hr")
    assert [a for a, _ in rows.values()] == [clause, clause]
    assert {h for _, h in rows.values()} == {access.fingerprint((tuple(clause[0]),))}
    assert {v for v in stored(database_url, "open").values()} == {(None, None)}

    # Nothing changed: nothing updated, and a run with nothing to do is proven so without the stages.
    again = run(config, database_url, embedder, "hr")
    assert (again.files_access_updated, again.chunks_embedded, again.files_unchanged) == (0, 0, 2)
    settings = load_settings(config)
    assert settled(IngestContext(settings, url=database_url, embedder=embedder), "hr") is not None

    # The source's access edited: applied in place, 0 chunks cut, 0 vectors computed.
    config = write_config(
        [
            {"name": "open", "type": "directory", "path": str(folders / "open"), "access": ["staff"]},
            {"name": "hr", "type": "directory", "path": str(folders / "hr"), "access": ["group:hr-leads"]},
        ]
    )
    ctx = IngestContext(load_settings(config), url=database_url, embedder=embedder)
    assert settled(ctx, "hr") is None  # the no-op shortcut sees the change: the real run applies it
    edited = run(config, database_url, embedder, "hr")
    assert edited.files_access_updated == 2
    assert (edited.chunks_embedded, edited.chunks_indexed, edited.files_added, edited.files_updated) == (0, 0, 0, 0)
    assert [a for a, _ in stored(database_url, "hr").values()] == [[["group:hr-leads"]]] * 2
    opened = run(config, database_url, embedder, "open")
    assert (opened.files_access_updated, opened.chunks_embedded) == (2, 0)

    # Dropped again: everyone, and the fingerprint back to NULL (as an upgraded store holds).
    config = write_config([{"name": "hr", "type": "directory", "path": str(folders / "hr")}])
    back = run(config, database_url, embedder, "hr")
    assert (back.files_access_updated, back.chunks_embedded) == (2, 0)
    assert set(stored(database_url, "hr").values()) == {(None, None)}


def test_new_content_carries_its_access_and_an_upgraded_store_reembeds_nothing(
    folders, write_config, database_url, embedder
):
    config = write_config([{"name": "open", "type": "directory", "path": str(folders / "open")}])
    run(config, database_url, embedder, "open")
    with psycopg.connect(database_url) as conn:  # as a store from before migration 0011 holds it
        conn.execute("UPDATE ledger SET access_hash = NULL")
        conn.execute("UPDATE documents SET access = NULL")
    upgraded = run(config, database_url, embedder, "open")
    assert (upgraded.files_access_updated, upgraded.chunks_embedded, upgraded.files_unchanged) == (0, 0, 2)

    config = write_config([{"name": "open", "type": "directory", "path": str(folders / "open"), "access": "ops"}])
    write_files(folders / "open", {"c.md": "# New\n\nThe ops rota lives in the wiki.\n"})
    s = run(config, database_url, embedder, "open")
    assert (s.files_added, s.files_access_updated) == (1, 2)
    assert [a for a, _ in stored(database_url, "open").values()] == [[["group:ops"]]] * 3


class _Restricting(DirectorySource):
    """A directory whose files under `secret/` carry a restriction as a Confluence sync would find it:
    a clause for the space and one for a restricted ancestor."""

    clauses: tuple[tuple[str, ...], ...] = (("group:eng",), ("user:ann@x.com", "group:leads"))

    def list_refs(self):
        return [replace(r, access=self.clauses) if r.path.startswith("secret/") else r for r in super().list_refs()]


def test_a_restriction_found_upstream_is_combined_with_the_source_access(
    tmp_path, write_config, database_url, embedder, monkeypatch
):
    write_files(tmp_path / "wiki", {"secret/plan.md": "# Plan\n\nThe merger closes in May.\n", "home.md": "# Home\n"})
    monkeypatch.setattr(stage1, "open_source", lambda settings, cfg: _Restricting(cfg, settings.resolve_path(cfg.path)))
    config = write_config([{"name": "wiki", "type": "directory", "path": str(tmp_path / "wiki"), "access": ["staff"]}])
    run(config, database_url, embedder, "wiki")
    rows = stored(database_url, "wiki")
    assert rows["wiki:home.md"][0] == [["group:staff"]]
    assert rows["wiki:secret/plan.md"][0] == [["group:eng"], ["group:leads", "user:ann@x.com"], ["group:staff"]]

    # A permission changed upstream, not the content: updated in place.
    monkeypatch.setattr(_Restricting, "clauses", (("group:eng",), ("group:leads",)))
    s = run(config, database_url, embedder, "wiki")
    assert (s.files_access_updated, s.chunks_embedded, s.files_unchanged) == (1, 0, 2)
    assert stored(database_url, "wiki")["wiki:secret/plan.md"][0] == [["group:eng"], ["group:leads"], ["group:staff"]]


def test_the_canonical_form_and_fingerprint():
    a = access.effective(["group:b", "group:a"], [("user:X@Y.com",), ("group:a", "group:b")])
    b = access.effective(["group:a", "group:b"], [["user:x@y.com"]])
    assert a == b == (("group:a", "group:b"), ("user:x@y.com",))
    assert access.fingerprint(a) == access.fingerprint(b) and access.fingerprint(a) is not None
    assert access.effective(None, None) is None and access.effective(None, []) is None
    assert access.fingerprint(None) is None
    assert access.effective([], None) == ((),)  # `access: []`: a clause no one meets (admins only)
    assert json.loads(access.as_json(a) or "") == [["group:a", "group:b"], ["user:x@y.com"]]
    odd = access.effective(None, [("hr", "team:x")])  # not a principal a caller can hold: fails closed
    assert odd == (("hr", "team:x"),) and not access.may_read(odd, access.Principal("x", frozenset({"hr", "x"})))


@pytest.mark.parametrize(
    "entry, expected",
    [
        (["team:x"], "'team' is not a kind of principal; write a group name, group:<name> or user:<email>"),
        ([""], "is empty: write a group name"),
        (["user:"], "names no user"),
        ([["hr"]], "access entry ['hr'] is not a name"),
        ({"hr": 1}, "access is a list of group names"),
    ],
)
def test_a_bad_access_entry_is_named(write_config, tmp_path, entry, expected):
    config = write_config([{"name": "hr", "type": "directory", "path": str(tmp_path), "access": entry}])
    with pytest.raises(ConfigError, match="hr") as e:
        load_settings(config)
    assert expected in str(e.value)


def test_access_entries_are_principals(write_config, tmp_path):
    config = write_config(
        [{"name": "hr", "type": "directory", "path": str(tmp_path), "access": ["hr", "group:legal", "user:A@B.c"]}]
    )
    assert load_settings(config).source("hr").access == ["group:hr", "group:legal", "user:a@b.c"]


def test_docforge_may_read_agrees_with_the_model_for_every_shape(database_url):
    """The inlined body (migration 0012) gives 0011's answer: every access of up to five clauses over
    three principals, against every set of them a caller may hold."""
    import itertools
    import random

    from pipeline.store.schema import ensure_schema

    names = ["group:a", "group:b", "user:c@x.com"]
    rng = random.Random(27)
    shapes = [None, ()] + [
        tuple(tuple(rng.sample(names, rng.randint(0, 3))) for _ in range(n)) for n in range(1, 6) for _ in range(12)
    ]
    callers = [list(c) for r in range(4) for c in itertools.combinations(names, r)]
    with psycopg.connect(database_url) as conn:
        ensure_schema(conn, "test-model", 8)
        for shape, held in itertools.product(shapes, callers):
            got = conn.execute(
                "SELECT docforge_may_read(%s::jsonb, %s::text[])", (access.as_json(shape), held)
            ).fetchone()[0]
            reader = access.Principal("c@x.com" if "user:c@x.com" in held else "z@x.com")
            reader = replace(reader, groups=frozenset(p.removeprefix("group:") for p in held if p.startswith("group:")))
            assert got == access.may_read(shape, reader), (shape, held)


def test_docforge_sources_says_who_may_read_each_source(write_config, tmp_path):
    from click.testing import CliRunner

    from docforge.cli import main  # through the group: a command invoked alone keeps a help option without -h

    config = write_config(
        [
            {"name": "hr", "type": "directory", "path": str(tmp_path), "access": ["hr", "user:Ann@X.com"]},
            {"name": "vault", "type": "directory", "path": str(tmp_path), "access": []},
            {"name": "open", "type": "directory", "path": str(tmp_path)},
        ]
    )
    out = CliRunner().invoke(main, ["sources", "--config", str(config), "--no-counts"], env={"COLUMNS": "80"}).output
    flat = " ".join(out.replace("│", " ").split())
    assert "readable by: group:hr, user:ann@x.com" in flat and "readable by: admins only" in flat
    assert flat.count("readable by") == 2 and max(len(line) for line in out.splitlines()) <= 80
    rows = json.loads(CliRunner().invoke(main, ["sources", "--config", str(config), "--no-counts", "--json"]).output)
    assert [r["access"] for r in rows] == [["group:hr", "user:ann@x.com"], [], None]

"""`docforge ingest PATH…`: ad-hoc directory sources, recorded under $DOCFORGE_HOME, merged into the settings."""

from __future__ import annotations

import io
import json

import yaml
from rich.console import Console

from docforge.cli.ingest import print_report
from pipeline.adhoc import register
from pipeline.config import adhoc_file, load_settings
from tests.helpers import write_files
from tests.test_ingest_cli import docforge


def test_register_names_paths_and_load_settings_merges_them(tmp_path, write_config, docforge_home):
    write_files(
        tmp_path, {"notes/a.md": "# A\n", "other/notes/b.md": "# B\n", "docs/c.md": "# C\n", "guide.md": "# G\n"}
    )
    config = write_config(
        [{"name": "docs", "type": "directory", "path": "docs"}, {"name": "guide.md", "type": "git", "repo": "."}]
    )
    settings = load_settings(config)
    names = register(
        settings, [tmp_path / "notes", tmp_path / "other" / "notes", tmp_path / "docs", tmp_path / "guide.md"]
    )
    assert names[0] == "notes" and names[1].startswith("notes-") and len(names[1]) == len("notes-") + 8
    assert names[2] == "docs"  # sources.yml already indexes this very directory
    assert names[3].startswith("guide.md-")  # the name is taken by another source of sources.yml
    recorded = yaml.safe_load(adhoc_file(docforge_home).read_text())["sources"]
    assert [(s["name"], s["path"]) for s in recorded] == [
        (names[0], (tmp_path / "notes").as_posix()),
        (names[1], (tmp_path / "other" / "notes").as_posix()),
        (names[3], (tmp_path / "guide.md").as_posix()),
    ]
    merged = load_settings(config)
    assert [s.name for s in merged.sources] == ["docs", "guide.md", *names[:2], names[3]]
    assert register(merged, [tmp_path / "notes"]) == ["notes"]  # the same path: the same source, updated
    assert len(yaml.safe_load(adhoc_file(docforge_home).read_text())["sources"]) == 3


def test_ingest_paths_without_sources_yml(tmp_path, database_url, docforge_home):
    root = tmp_path / "scratch"
    write_files(
        root,
        {
            "README.md": "# Scratch\n\nNotes about the billing migration.\n",
            "tools/migrate.py": 'def migrate_invoices(batch):\n    """Move invoices to v2."""\n',
            "node_modules/x/index.js": "1\n",
            "icon.png": b"\x89PNG\x00",
        },
    )
    run = docforge("ingest", str(root), "--json", "--config", str(tmp_path / "absent.yml"))
    report = json.loads(run.stdout)["sources"]["scratch"]
    assert report["files_added"] == 2 and report["languages"] == {"markdown": 1, "python": 1}
    assert {s["path"] for s in report["skipped_files"]} == {"node_modules/", "icon.png"}
    assert report["files_skipped"] == 2
    assert yaml.safe_load(adhoc_file(docforge_home).read_text())["sources"][0]["path"] == root.as_posix()

    hits = json.loads(
        docforge("search", "move invoices to v2", "--json", "--config", str(adhoc_file(docforge_home))).stdout
    )
    assert hits[0]["doc_key"] == "scratch:tools/migrate.py" and hits[0]["section"] == "tools.migrate > migrate_invoices"
    again = json.loads(docforge("ingest", str(root), "--json", "--config", str(tmp_path / "absent.yml")).stdout)
    assert again["sources"]["scratch"]["files_unchanged"] == 2 and list(again["sources"]) == ["scratch"]


def test_the_table_lists_formats_and_skipped_files():
    report = {
        "proj": {
            "files_added": 2,
            "files_updated": 0,
            "files_unchanged": 0,
            "files_deleted": 0,
            "files_failed": 0,
            "files_skipped": 12,
            "chunks_indexed": 3,
            "chunks_embedded": 3,
            "chunks_reused": 0,
            "chunks_deleted": 0,
            "seconds": {"documents": 0.1},
            "wall_seconds": 0.2,
            "failures": [],
            "languages": {"python": 1, "pdf": 1},
            "skipped_files": [
                {"path": f"bin{i}.png", "reason": "binary file type (.png): not read"} for i in range(12)
            ],
            "checks": [],
        }
    }
    out = io.StringIO()
    print_report(Console(file=out, width=100), report)
    text = out.getvalue()
    assert "12 skipped" in text and "source 'proj': 1 python, 1 pdf" in text
    assert "proj:bin0.png skipped: binary file type (.png)" in text and "2 more skipped in proj" in text

"""deploy/compose.yaml (docs/deploy.md, section 5) stays true: every docforge command in it is one the CLI
accepts, every variable it sets is one docforge or Dagster reads, and every file it names exists."""

from __future__ import annotations

import re
from pathlib import Path

import click
import pytest
import yaml

from docforge.cli import main
from pipeline.config.settings import sections

ROOT = Path(__file__).resolve().parents[1]
COMPOSE = yaml.safe_load((ROOT / "deploy" / "compose.yaml").read_text())
SERVICES = COMPOSE["services"]
DOCFORGE_SERVICES = [n for n, s in SERVICES.items() if s.get("command", [""])[0] == "docforge"]
DAGSTER_NAMES = {"DAGSTER_HOME", "DAGSTER_PG_URL"}


def known_names() -> set[str]:
    names = {"DATABASE_URL", "DOCFORGE_CONFIG", "DOCFORGE_HOME", *DAGSTER_NAMES}
    for cls in sections().values():
        for key in cls.model_fields:
            names.update(cls.env_names(key))
    return names


def test_the_layout_is_complete():
    assert {"postgres", "embedder", "reranker", "api", "dagster-webserver", "dagster-daemon"} <= SERVICES.keys()
    assert sorted(DOCFORGE_SERVICES) == ["api", "embedder", "reranker"]


@pytest.mark.parametrize("name", DOCFORGE_SERVICES)
def test_each_docforge_command_is_one_the_cli_accepts(name):
    args = SERVICES[name]["command"][1:]
    ctx = main.make_context("docforge", list(args), resilient_parsing=False)
    sub = main.get_command(ctx, args[0])
    assert isinstance(sub, click.Command)
    # under its parent, as the CLI parses it: a parentless context would cache a help option without -h
    sub.make_context(args[0], list(args[1:]), parent=ctx)  # raises on an unknown option or a bad value


@pytest.mark.parametrize("name", sorted(SERVICES))
def test_every_variable_is_one_something_reads(name):
    env = SERVICES[name].get("environment") or {}
    if name == "postgres":
        return  # the postgres image's own
    unknown = sorted(set(env) - known_names())
    assert unknown == [], f"{name}: {unknown}"


def test_the_files_it_names_exist():
    assert (ROOT / "deploy" / "initdb" / "dagster.sql").is_file()
    dagster_home = SERVICES["dagster-daemon"]["environment"]["DAGSTER_HOME"].removeprefix("/app/")
    assert (ROOT / dagster_home / "dagster.yaml").is_file()
    for copied in re.findall(r"^COPY (.+) \S+$", (ROOT / "deploy" / "Dockerfile").read_text(), re.M):
        for path in copied.split():
            assert (ROOT / path).exists(), path


def test_every_image_ships_the_wordnet_the_verifier_was_measured_with(monkeypatch):
    """The stage every role builds from installs Debian's wordnet-base where the verifier reads it."""
    from pipeline.answers import lexicon

    dockerfile = (ROOT / "deploy" / "Dockerfile").read_text()
    source = dockerfile.split("FROM ", 2)[1]  # the first stage, `source`: api and full both build FROM it
    assert source.startswith("python:") and " AS source" in source.splitlines()[0]
    assert re.search(r"apt-get install [^\n]*\bwordnet-base\b", source)
    assert set(re.findall(r"^FROM (\S+) AS (?!source)", dockerfile, re.M)) == {"source"}
    monkeypatch.delenv("DOCFORGE_WORDNET", raising=False)
    assert str(lexicon.folder()) == "/usr/share/wordnet"  # Debian's path: the image sets no DOCFORGE_WORDNET
    assert "DOCFORGE_WORDNET" not in dockerfile

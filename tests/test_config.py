"""sources.yml validation: clear errors naming the key and the source."""

import pytest

from pipeline.config import DEFAULT_GLOBS, load_settings
from pipeline.errors import ConfigError


def test_defaults(write_config):
    s = load_settings(write_config([{"name": "hb", "type": "git", "repo": "../hb"}]))
    src = s.sources[0]
    assert src.globs == DEFAULT_GLOBS and src.branch is None and src.tags == []
    assert s.embedding.model == "all-MiniLM-L6-v2"
    assert s.resolve_path(src.repo) == (s.config_path.parent / "../hb").resolve()


@pytest.mark.parametrize("entry, expected", [
    ({"name": "hb", "type": "git", "repo": ".", "rpo": "x"}, "source 'hb' (sources[0]), key 'rpo': unknown key"),
    ({"name": "hb", "type": "git", "repo": ".", "globs": "docs/*.md"}, "source 'hb' (sources[0]), key 'globs'"),
    ({"name": "hb", "type": "git"}, "source 'hb' (sources[0]), key 'repo': Field required"),
    ({"name": "c", "type": "confluence", "base_url": 3}, "source 'c' (sources[0]), key 'base_url'"),
    ({"name": "x", "type": "svn", "repo": "."}, "source 'x' (sources[0])"),
])
def test_bad_source_is_named(write_config, entry, expected):
    with pytest.raises(ConfigError) as e:
        load_settings(write_config([entry]))
    assert expected in str(e.value)


def test_unknown_top_level_key(write_config):
    with pytest.raises(ConfigError, match="embeddings: unknown key"):
        load_settings(write_config([], embeddings={"model": "x"}))


def test_duplicate_names(write_config):
    src = {"name": "hb", "type": "git", "repo": "."}
    with pytest.raises(ConfigError, match="duplicate source name 'hb'"):
        load_settings(write_config([src, src]))


def test_missing_and_malformed_files(tmp_path):
    with pytest.raises(ConfigError, match="file not found"):
        load_settings(tmp_path / "nope.yml")
    bad = tmp_path / "bad.yml"
    bad.write_text("sources: [\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_settings(bad)


def test_environment_beats_file(write_config, monkeypatch):
    monkeypatch.setenv("DOCFORGE_EMBEDDING__MODEL", "/models/other")
    s = load_settings(write_config([], embedding={"model": "all-MiniLM-L6-v2"}))
    assert s.embedding.model == "/models/other"


def test_unknown_source_name(write_config):
    s = load_settings(write_config([{"name": "hb", "type": "git", "repo": "."}]))
    with pytest.raises(ConfigError, match="no source named 'nope'.*known: hb"):
        s.source("nope")


def test_confluence_needs_a_scope(write_config):
    with pytest.raises(ConfigError, match="source 'c' .*set 'space'"):
        load_settings(write_config([{"name": "c", "type": "confluence", "base_url": "https://x.atlassian.net/wiki"}]))

"""The configuration tree: sources.yml validation (clear errors naming the key and the source),
environment overrides under every documented name, secrets from the environment only, config edges."""

import os
import subprocess

import pytest
from click.testing import CliRunner
from pydantic import SecretStr

from pipeline.config import (
    DEFAULT_GLOBS,
    AuthConfig,
    ConfluenceCredentials,
    OrchestrationConfig,
    SearchConfig,
    Settings,
    check_source_name,
    env_section,
    env_settings,
    load_settings,
    safe_source_name,
)
from pipeline.errors import ConfigError, GitSourceError

_TREE_PREFIXES = ("DOCFORGE_", "RERANK", "CONFLUENCE_")


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    """Only what a test sets: no DOCFORGE_*/RERANK*/CONFLUENCE_* from the shell running the tests."""
    for name in list(os.environ):
        if name.startswith(_TREE_PREFIXES) and name not in ("DOCFORGE_HOME", "DOCFORGE_CONFIG"):
            monkeypatch.delenv(name)
    monkeypatch.delenv("DATABASE_URL", raising=False)


def test_defaults(write_config):
    s = load_settings(write_config([{"name": "hb", "type": "git", "repo": "../hb"}]))
    src = s.sources[0]
    assert src.globs == DEFAULT_GLOBS and src.branch is None and src.tags == []
    assert s.embedding.model == "all-MiniLM-L6-v2"
    assert s.resolve_path(src.repo) == (s.config_path.parent / "../hb").resolve()


@pytest.mark.parametrize(
    "entry, expected",
    [
        ({"name": "hb", "type": "git", "repo": ".", "rpo": "x"}, "source 'hb' (sources[0]), key 'rpo': unknown key"),
        ({"name": "hb", "type": "git", "repo": ".", "globs": "docs/*.md"}, "source 'hb' (sources[0]), key 'globs'"),
        ({"name": "hb", "type": "git"}, "source 'hb' (sources[0]), key 'repo': Field required"),
        ({"name": "c", "type": "confluence", "base_url": 3}, "source 'c' (sources[0]), key 'base_url'"),
        ({"name": "x", "type": "svn", "repo": "."}, "source 'x' (sources[0])"),
        # every source type's tag is left out of the key, not only git's and confluence's
        ({"name": "d", "type": "directory"}, "source 'd' (sources[0]), key 'path': Field required"),
        ({"name": "d", "type": "directory", "path": "."}, None),
        (
            {"name": "d", "type": "directory", "path": ".", "gitignore": "maybe"},
            "source 'd' (sources[0]), key 'gitignore'",
        ),
    ],
)
def test_bad_source_is_named(write_config, entry, expected):
    if expected is None:  # the control: the same source, valid
        assert load_settings(write_config([entry])).source(entry["name"])
        return
    with pytest.raises(ConfigError) as e:
        load_settings(write_config([entry]))
    assert expected in str(e.value) and f"'{entry['type']}." not in str(e.value)


def test_a_name_made_from_a_path_is_one_the_name_rules_accept():
    """`docforge ingest PATH` names a source after the path; the one rule of a source's name accepts it."""
    for raw in ("a...b", "tab\there", "esc\x1bname", " padded ", "...", "\x7f"):
        assert check_source_name(safe_source_name(raw)) == safe_source_name(raw)
    with pytest.raises(ValueError, match="Dagster partition key"):
        check_source_name("esc\x1bname")


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


# --- one tree: sources.yml + environment ------------------------------------------------------------


def test_the_tree_from_yaml_with_environment_overrides(write_config, monkeypatch):
    path = write_config(
        [{"name": "hb", "type": "git", "repo": "."}],
        search={"fetch_k": 20, "rrf_k": 30},
        rerank={"url": "http://127.0.0.1:9", "timeout_s": 3},
        auth={"jwt_audience": "api://docs"},
        embedding={"device": "cpu"},
    )
    monkeypatch.setenv("DOCFORGE_SEARCH_FETCH_K", "80")  # the documented name
    monkeypatch.setenv("DOCFORGE_CHUNKING__MAX_TOKENS", "200")  # a section without names of its own
    monkeypatch.setenv("RERANK_ENABLED", "true")
    monkeypatch.setenv("DOCFORGE_MODEL_CACHE", "/tmp/models")
    s = load_settings(path)
    assert (s.search.fetch_k, s.search.rrf_k, s.search.ef_search, s.chunking.max_tokens) == (80, 30, 100, 200)
    assert (s.rerank.enabled, s.rerank.url, s.rerank.timeout_s) == (True, "http://127.0.0.1:9", 3)
    assert s.auth.jwt_audience == "api://docs" and s.embedding.device == "cpu"
    assert str(s.embedding.cache_dir) == "/tmp/models" and s.sources[0].name == "hb"


def test_one_environment_name_per_setting_the_other_refused(write_config, monkeypatch):
    """A key of a section with names of its own is read only under them: its generic
    DOCFORGE_<SECTION>__<KEY> is refused with the right name, never silently read."""
    path = write_config([{"name": "hb", "type": "git", "repo": "."}])
    monkeypatch.setenv("DOCFORGE_SEARCH__FETCH_K", "80")
    monkeypatch.setenv("DOCFORGE_LLM__API_KEY", "sk-secret-value")
    with pytest.raises(ConfigError) as e:
        load_settings(path)
    assert str(e.value) == (
        "environment: 2 problem(s)\n"
        "  DOCFORGE_SEARCH__FETCH_K is not read: set DOCFORGE_SEARCH_FETCH_K instead (search.fetch_k)\n"
        "  DOCFORGE_LLM__API_KEY is not read: set DOCFORGE_LLM_API_KEY instead (llm.api_key)"
    )
    with pytest.raises(ConfigError, match="set DOCFORGE_SEARCH_FETCH_K instead"):
        env_section(SearchConfig)
    monkeypatch.delenv("DOCFORGE_SEARCH__FETCH_K")
    monkeypatch.delenv("DOCFORGE_LLM__API_KEY")
    monkeypatch.setenv("DOCFORGE_SEARCH_FETCH_K", "80")
    assert load_settings(path).search.fetch_k == 80 == env_section(SearchConfig).fetch_k


def test_the_one_underscore_spelling_of_a_generic_name_is_refused(write_config, monkeypatch):
    """DOCFORGE_EMBEDDING_BACKEND looks like a name of its own but the embedding section has none: it was
    ignored in silence (docs once spelled it so); now it is refused, naming DOCFORGE_EMBEDDING__BACKEND."""
    path = write_config([{"name": "hb", "type": "git", "repo": "."}])
    monkeypatch.setenv("DOCFORGE_EMBEDDING_BACKEND", "onnx")
    with pytest.raises(ConfigError) as e:
        load_settings(path)
    assert str(e.value) == (
        "environment: 1 problem(s)\n"
        "  DOCFORGE_EMBEDDING_BACKEND is not read: set DOCFORGE_EMBEDDING__BACKEND instead (embedding.backend)"
    )
    monkeypatch.delenv("DOCFORGE_EMBEDDING_BACKEND")
    monkeypatch.setenv("DOCFORGE_EMBEDDING__BACKEND", "onnx")
    assert load_settings(path).embedding.backend == "onnx"


@pytest.mark.parametrize(
    "env, value, path, expected",
    [
        ("DATABASE_URL", "postgresql://u:pw@db/docs", ("database_url",), SecretStr),
        ("DOCFORGE_HOME", "/srv/docforge", ("home",), "/srv/docforge"),
        ("DOCFORGE_EMBEDDING__MODEL", "/models/x", ("embedding", "model"), "/models/x"),
        ("DOCFORGE_MODEL_CACHE", "/cache", ("embedding", "cache_dir"), "/cache"),
        ("DOCFORGE_SEARCH_EF_SEARCH", "200", ("search", "ef_search"), 200),
        ("RERANK_ENABLED", "1", ("rerank", "enabled"), True),
        ("RERANKER_MODEL", "/models/ce", ("rerank", "model"), "/models/ce"),
        ("RERANKER_URL", "http://r", ("rerank", "url"), "http://r"),
        ("RERANKER_API_KEY", "rk", ("rerank", "api_key"), SecretStr),
        ("RERANKER_TIMEOUT_S", "2.5", ("rerank", "timeout_s"), 2.5),
        ("DOCFORGE_API_TOKENS", "a,b", ("auth", "api_tokens"), SecretStr),
        ("DOCFORGE_API_TOKEN", "t", ("auth", "remote_api_token"), SecretStr),
        ("DOCFORGE_JWT_JWKS_URL", "https://idp/keys", ("auth", "jwt_jwks_url"), "https://idp/keys"),
        ("DOCFORGE_JWT_AUDIENCE", "aud", ("auth", "jwt_audience"), "aud"),
        ("DOCFORGE_JWT_ISSUER", "iss", ("auth", "jwt_issuer"), "iss"),
        ("DOCFORGE_JWT_ALGORITHMS", "ES256", ("auth", "jwt_algorithms"), "ES256"),
        ("DOCFORGE_API_TOKENS_FILE", "/etc/docforge/tokens.yml", ("auth", "tokens_file"), "/etc/docforge/tokens.yml"),
        ("DOCFORGE_JWT_USER_CLAIMS", "sub", ("auth", "jwt_user_claims"), "sub"),
        ("DOCFORGE_JWT_GROUP_CLAIMS", "groups,wids", ("auth", "jwt_group_claims"), "groups,wids"),
        ("DOCFORGE_MCP_PRINCIPAL", "ann@x.com", ("auth", "mcp_principal"), "ann@x.com"),
        ("DOCFORGE_MCP_GROUPS", "hr,eng", ("auth", "mcp_groups"), "hr,eng"),
        ("CONFLUENCE_EMAIL", "a@b.c", ("confluence", "email"), "a@b.c"),
        ("CONFLUENCE_API_TOKEN", "ct", ("confluence", "api_token"), SecretStr),
        ("CONFLUENCE_BEARER_TOKEN", "bt", ("confluence", "bearer_token"), SecretStr),
        ("CONFLUENCE_PAT", "pat", ("confluence", "bearer_token"), SecretStr),
        ("DOCFORGE_EXECUTOR", " In_Process ", ("orchestration", "executor"), "in_process"),
        ("DOCFORGE_EMBED_POOL", "l4", ("orchestration", "embed_pool"), "l4"),
        ("DOCFORGE_EMBED_GPUS", "2", ("orchestration", "embed_gpus"), 2),
        ("DOCFORGE_EMBED_NODE_SELECTOR", '{"gpu": "l4"}', ("orchestration", "embed_node_selector"), {"gpu": "l4"}),
    ],
)
def test_every_documented_variable_lands_in_the_tree(monkeypatch, env, value, path, expected):
    monkeypatch.setenv(env, value)
    node = env_settings()
    for part in path:
        node = getattr(node, part)
    if expected is SecretStr:
        assert isinstance(node, SecretStr) and node.get_secret_value() == value
    else:
        assert (str(node) if isinstance(node, os.PathLike) else node) == expected


def test_environment_only_sections_read_alone(monkeypatch):
    """A section read on its own (the Dagster shell, a credentials default) ignores a problem elsewhere."""
    monkeypatch.setenv("DOCFORGE_SEARCH_FETCH_K", "many")
    monkeypatch.setenv("DOCFORGE_EXECUTOR", "k8s")
    monkeypatch.setenv("CONFLUENCE_PAT", "pat-1")
    with pytest.raises(ConfigError, match=r"search.fetch_k \(from DOCFORGE_SEARCH_FETCH_K='many'\)"):
        env_settings()
    assert env_section(OrchestrationConfig).executor == "k8s"
    assert env_section(ConfluenceCredentials).bearer_token.get_secret_value() == "pat-1"
    monkeypatch.setenv("DOCFORGE_EMBED_NODE_SELECTOR", "gpu=l4")
    with pytest.raises(ConfigError, match="DOCFORGE_EMBED_NODE_SELECTOR='gpu=l4'.*not JSON"):
        env_section(OrchestrationConfig)


@pytest.mark.parametrize(
    "top, where, env",
    [
        ({"database_url": "postgresql://u:s3cret-value@h/db"}, "database_url", "DATABASE_URL"),
        ({"DATABASE_URL": "postgresql://u:s3cret-value@h/db"}, "database_url", "DATABASE_URL"),
        ({"rerank": {"api_key": "s3cret-value"}}, "rerank.api_key", "RERANKER_API_KEY"),
        ({"auth": {"api_tokens": "s3cret-value"}}, "auth.api_tokens", "DOCFORGE_API_TOKENS"),
        ({"auth": {"remote_api_token": "s3cret-value"}}, "auth.remote_api_token", "DOCFORGE_API_TOKEN"),
        ({"confluence": {"api_token": "s3cret-value"}}, "confluence.api_token", "CONFLUENCE_API_TOKEN"),
        ({"confluence": {"bearer_token": "s3cret-value"}}, "confluence.bearer_token", "CONFLUENCE_BEARER_TOKEN"),
    ],
)
def test_a_secret_in_the_file_is_refused(write_config, top, where, env):
    with pytest.raises(ConfigError) as e:
        load_settings(write_config([], **top))
    msg = str(e.value)
    assert f"{where} is a secret" in msg and f"set {env} in the environment" in msg
    assert "s3cret-value" not in msg


@pytest.mark.parametrize(
    "top, message",
    [
        ({"orchestration": {"executor": "k8s"}}, "'orchestration' cannot be set in this file.*DOCFORGE_EXECUTOR"),
        ({"confluence": {"email": "bot@example.com"}}, "'confluence' cannot be set in this file.*CONFLUENCE_EMAIL"),
        ({"config_path": "/elsewhere.yml"}, "'config_path' cannot be set in this file"),
    ],
)
def test_environment_only_keys_are_refused_in_the_file(write_config, top, message):
    with pytest.raises(ConfigError, match=message):
        load_settings(write_config([], **top))


def test_secrets_never_show_in_repr_dumps_or_errors(write_config, monkeypatch):
    secrets = {
        "DATABASE_URL": "postgresql://u:pw-1a2b@h/db",
        "CONFLUENCE_API_TOKEN": "conf-3c4d",
        "DOCFORGE_API_TOKENS": "api-5e6f",
        "RERANKER_API_KEY": "rr-7a8b",
        "CONFLUENCE_PAT": "pat-9c0d",
    }
    for k, v in secrets.items():
        monkeypatch.setenv(k, v)
    s = load_settings(write_config([{"name": "hb", "type": "git", "repo": "."}]))
    texts = [repr(s), str(s), s.model_dump_json(), str(s.model_dump()), repr(s.confluence), repr(s.auth)]
    monkeypatch.setenv("DOCFORGE_SEARCH_FETCH_K", "many")  # now fail validation with every secret set
    with pytest.raises(ConfigError) as e:
        load_settings(write_config([{"name": "", "type": "git", "repo": "."}]))
    texts.append(str(e.value))
    assert "DOCFORGE_SEARCH_FETCH_K='many'" in texts[-1] and "a non-empty name" in texts[-1]
    for text in texts:
        for secret in secrets.values():
            assert secret not in text
    assert s.database_url.get_secret_value() == secrets["DATABASE_URL"]  # yet the code can read them


def test_the_database_url_is_read_by_the_settings_only(monkeypatch, tmp_path):
    from pipeline.store.db import store_url

    monkeypatch.setenv("DATABASE_URL", "postgresql://u@db.example/docs")
    settings = env_settings()
    assert store_url(settings) == "postgresql://u@db.example/docs"
    assert store_url(settings, "postgresql://other/x") == "postgresql://other/x"  # an explicit one wins
    assert store_url(Settings(database_url="postgresql://code/x")) == "postgresql://u@db.example/docs"  # env first


def test_surfaces_take_auth_from_the_tree(write_config, monkeypatch):
    from docforge.servers.auth import Authenticator

    monkeypatch.setenv("DOCFORGE_API_TOKENS", "one, two")
    auth = Authenticator(load_settings(write_config([])).auth)
    assert auth.authenticate("two").name == "token#2" and auth.authenticate("three") is None
    assert Authenticator(AuthConfig(api_tokens="x")).tokens == ["x"]


# --- config edges (issue 12 item 10) ----------------------------------------------------------------


@pytest.mark.parametrize(
    "name, message",
    [
        ("", "a non-empty name"),
        ("   ", "a non-empty name"),
        (" hb", "starts or ends with whitespace"),
        ("a...b", "Dagster partition key"),
        ("a\tb", "Dagster partition key"),
    ],
)
def test_bad_source_names_are_refused(write_config, name, message):
    with pytest.raises(ConfigError, match=f"sources\\[0\\]\\), key 'name': .*{message}"):
        load_settings(write_config([{"name": name, "type": "git", "repo": "."}]))


@pytest.mark.parametrize("glob", ["../x/*.md", "docs/../../x.md", "!../drafts/**", "/../x.md"])
def test_globs_outside_the_repository_are_refused(write_config, glob):
    with pytest.raises(ConfigError, match=r"key 'globs': .*points outside the repository"):
        load_settings(write_config([{"name": "hb", "type": "git", "repo": ".", "globs": ["docs/*.md", glob]}]))


def test_an_empty_file_warns_and_ingest_refuses_to_do_nothing(tmp_path, caplog):
    from docforge.cli import main

    empty = tmp_path / "sources.yml"
    empty.write_text("")
    assert load_settings(empty).sources == [] and "is empty" in caplog.text
    for text in ("", "sources: []\n"):
        empty.write_text(text)
        res = CliRunner().invoke(main, ["ingest", "--config", str(empty)])
        assert res.exit_code == 1 and "no sources configured, nothing to ingest" in res.output


def test_a_repo_path_that_is_a_file_is_named_so(write_config, tmp_path):
    from pipeline.sources import open_source

    (tmp_path / "afile").write_text("not a repo")
    s = load_settings(
        write_config([{"name": "f", "type": "git", "repo": "afile"}, {"name": "m", "type": "git", "repo": "missing"}])
    )
    with pytest.raises(GitSourceError, match="afile is not a directory"):
        open_source(s, s.source("f"))
    with pytest.raises(GitSourceError, match="missing does not exist"):
        open_source(s, s.source("m"))


def test_a_repository_without_a_commit_indexes_its_working_tree(write_config, tmp_path):
    from pipeline.records import Document
    from pipeline.sources import open_source

    repo = tmp_path / "fresh"
    repo.mkdir()
    subprocess.run(["git", "-C", str(repo), "init", "-q"], check=True)
    (repo / "README.md").write_text("# Fresh\n\nNo commit yet.\n")
    (repo / "docs").mkdir()
    (repo / "docs" / "a.md").write_text("# A\n")
    s = load_settings(write_config([{"name": "fresh", "type": "git", "repo": "fresh"}]))
    src = open_source(s, s.source("fresh"))
    refs = src.list_refs()
    docs = list(src.fetch(refs))
    assert [r.path for r in refs] == ["README.md", "docs/a.md"] and src.commit is None
    assert all(isinstance(d, Document) for d in docs) and docs[0].url == (repo / "README.md").resolve().as_uri()
    with pytest.raises(GitSourceError, match="branch 'main' not found"):  # a branch still needs a commit
        open_source(s, s.source("fresh").model_copy(update={"branch": "main"}))


def test_a_sources_file_read_while_serving_is_taken_only_when_two_reads_agree(tmp_path):
    """Issue 48: a sensor's tick reads sources.yml twice, SETTLE_S apart; a file written meanwhile (cut
    after its first source: valid YAML, and the sync sensor would purge the rest) is refused, not taken."""
    import threading

    from pipeline.config.loader import SETTLE_S

    whole = "sources:\n  - name: a\n    type: directory\n    path: a\n  - name: b\n    type: directory\n    path: b\n"
    path = tmp_path / "sources.yml"
    path.write_text(whole[: whole.index("  - name: b")])  # the torn moment: only `a`
    finish = threading.Timer(SETTLE_S / 3, lambda: path.write_text(whole))
    finish.start()
    with pytest.raises(ConfigError, match="changed while it was read.*replace it by rename"):
        load_settings(path, settled=True)
    finish.join()
    assert [s.name for s in load_settings(path, settled=True).sources] == ["a", "b"]

"""Git source: globs, working tree vs branch, bad files, missing repos."""

import pytest

from pipeline.config import GitSourceConfig
from pipeline.errors import GitSourceError
from pipeline.records import Document, Failure
from pipeline.sources.git import GitSource, web_url
from tests.helpers import git, write_files


def source(repo, **kw):
    return GitSource(GitSourceConfig(name="hb", type="git", repo=str(repo), **kw), repo)


def test_default_globs_are_anchored(make_repo):
    repo = make_repo(
        {
            "README.md": "# r",
            "CLAUDE.md": "c",
            "docs/a.md": "a",
            "docs/x/b.md": "b",
            "sub/README.md": "nested readme",
            "docs/c.txt": "t",
            "notes.md": "n",
        }
    )
    assert [r.path for r in source(repo).list_refs()] == ["CLAUDE.md", "README.md", "docs/a.md", "docs/x/b.md"]


def test_negated_globs_and_untracked_files(make_repo):
    repo = make_repo({"docs/a.md": "a", "docs/drafts/b.md": "b", ".gitignore": "docs/ignored.md\n"})
    write_files(repo, {"docs/new.md": "untracked", "docs/ignored.md": "ignored"})
    refs = source(repo, globs=["docs/**/*.md", "!docs/drafts/**"]).list_refs()
    assert [r.path for r in refs] == ["docs/a.md", "docs/new.md"]


def test_binary_and_invalid_utf8_are_reported_not_fatal(make_repo):
    repo = make_repo({"docs/ok.md": "# Fine", "docs/bin.md": b"\x89PNG\x00\x00", "docs/bad.md": b"# x \xff\xfe"})
    src = source(repo)
    out = {(i.ref.key if isinstance(i, Document) else i.key): i for i in src.fetch(src.list_refs())}
    assert isinstance(out["hb:docs/ok.md"], Document)
    assert isinstance(out["hb:docs/bin.md"], Failure) and "binary" in out["hb:docs/bin.md"].error
    assert isinstance(out["hb:docs/bad.md"], Failure) and "not valid UTF-8" in out["hb:docs/bad.md"].error


def test_branch_mode_reads_the_ref_not_the_working_tree(make_repo):
    repo = make_repo({"docs/a.md": "v1"})
    git(repo, "checkout", "-q", "-b", "feature")
    write_files(repo, {"docs/a.md": "v2", "docs/b.md": "new"})
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "v2")
    git(repo, "checkout", "-q", "main")
    src = source(repo, branch="feature")
    refs = src.list_refs()
    assert [r.path for r in refs] == ["docs/a.md", "docs/b.md"] and all(len(r.version) == 40 for r in refs)
    assert [d.content for d in src.fetch(refs)] == ["v2", "new"]
    assert src.commit == git(repo, "rev-parse", "feature")


def test_missing_repo_and_not_a_repo(tmp_path):
    with pytest.raises(GitSourceError, match="source 'hb': repo path .*nope does not exist"):
        source(tmp_path / "nope")
    (tmp_path / "plain").mkdir()
    with pytest.raises(GitSourceError, match="is not a git repository"):
        source(tmp_path / "plain")


@pytest.mark.parametrize(
    "remote, url",
    [
        ("git@github.com:acme/handbook.git", "https://github.com/acme/handbook"),
        ("https://token@gitlab.example.com/acme/hb.git", "https://gitlab.example.com/acme/hb"),
        ("/srv/git/hb.git", None),
    ],
)
def test_web_urls_never_carry_credentials(remote, url):
    assert web_url(remote) == url

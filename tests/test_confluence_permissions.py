"""`permissions: sync`: each listed Confluence page carries who may read it, read from the API double
(real HTTP): the space's permissions, its own and every ancestor's read restriction, paged as the real
API pages them, cached per run, failing closed page by page."""

from __future__ import annotations

import pytest

from pipeline.config import ConfluenceSourceConfig, load_settings
from pipeline.errors import ConfigError
from pipeline.records import DocRef
from pipeline.sources.confluence import ConfluenceSource
from pipeline.sources.confluence_access import PageAccess
from tests.confluence_double import ConfluenceDouble
from tests.conftest_confluence import confluence_double, confluence_env  # noqa: F401 (fixtures)

ANN, BOB = "5b10ac8d82e05b22cc7d4ef5", "712020:0f4c2b4e-9a7d-4c55-9f55-3c1a2b3c4d5e"
STAFF = ("group:staff",)


def source(d: ConfluenceDouble, **kw) -> ConfluenceSource:
    cfg = {"name": "wiki", "type": "confluence", "base_url": d.base_url, "space": "DOCS", "permissions": "sync"}
    cfg.update(max_retry_after_s=0.05, retry_budget_s=5, **kw)
    return ConfluenceSource(ConfluenceSourceConfig(**cfg))


def by_path(refs: list[DocRef]) -> dict[str, DocRef]:
    return {r.path: r for r in refs}


@pytest.fixture
def tree(confluence_double: ConfluenceDouble) -> ConfluenceDouble:
    """Space DOCS, readable by group staff and by Ann (account id; email shown):
    100 Home ─ 200 HR (restricted: group hr, and Bob) ─ 300 Salaries ─ 400 Bands;  100 ─ 500 Handbook."""
    d = confluence_double
    d.add_user(ANN, "Ann@Example.com")
    d.add_user(BOB, "")  # email hidden by his privacy settings
    d.grant_space("group", "staff")  # by name: the double registers the group, serves its id
    d.grant_space("user", ANN)
    d.grant_space("group", d.add_group("contractors"), key="update")  # not a read of the space
    d.add_page("100", "Home", "<p>home</p>")
    d.add_page("200", "HR", "<p>hr</p>", parent_id="100", read_groups=["hr"], read_users=[BOB])
    d.add_page("300", "Salaries", "<p>pay</p>", parent_id="200")
    d.add_page("400", "Bands", "<p>bands</p>", parent_id="300")
    d.add_page("500", "Handbook", "<p>handbook</p>", parent_id="100")
    return d


SPACE = ("group:staff", f"user:{ANN}", "user:ann@example.com")
HR = ("group:hr", f"user:{BOB}")


def test_a_restriction_binds_the_whole_subtree(tree):
    src = source(tree)
    refs = by_path(src.list_refs())
    assert refs["100"].access == refs["500"].access == (SPACE,)
    assert refs["200"].access == refs["300"].access == refs["400"].access == (SPACE, HR)
    assert src.failures == []
    # one read of the space, one restriction read per page, parents from the listing: no ancestors read
    assert (tree.counts["space_permissions"], tree.counts["restriction"], tree.counts["ancestors"]) == (1, 5, 0)
    assert tree.counts["group_by_id"] == 1 and tree.counts["user"] == 1  # staff's name; Ann's email
    assert src.access is not None and src.access.summary().startswith("8 requests")


def test_each_restricted_ancestor_is_its_own_clause(tree):
    tree.restrict("300", groups=["payroll"])
    tree.restrict("400", users=[ANN])
    refs = by_path(source(tree).list_refs())
    assert refs["300"].access == (SPACE, HR, ("group:payroll",))
    assert refs["400"].access == (SPACE, HR, ("group:payroll",), (f"user:{ANN}", "user:ann@example.com"))


def test_a_page_whose_parent_is_not_listed_reads_its_ancestors(tree, monkeypatch):
    monkeypatch.setattr(PageAccess, "ancestors_limit", 1)  # one ancestor per answer: the API's paging rule
    src = source(tree, space=None, page_ids=["400"])
    [ref] = src.list_refs()
    assert ref.access == (SPACE, HR)
    assert tree.counts["ancestors"] == 4  # 300, then above 300: 200, above 200: 100, above 100: none
    assert tree.counts["restriction"] == 4  # 400 and each ancestor


def test_a_webhook_part_carries_the_same_access(tree):
    """A delivered page is read without the space listing: its ancestors come from the API."""
    part = source(tree).list_part(["400", "500"])
    refs = by_path(part.refs)
    assert refs["400"].access == (SPACE, HR) and refs["500"].access == (SPACE,)
    assert tree.counts["space_pages"] == 0 and tree.counts["ancestors"] == 2  # 400's, 500's; 300, 200 from 400's


def test_restriction_lists_and_space_grants_are_paged(tree):
    users = [tree.add_user(f"acc-{i}", f"u{i}@example.com") for i in range(7)]
    tree.restrict("500", users=users, groups=["g1", "g2", "g3", "g4"])  # 7 users, 4 groups: 3 per answer
    for i in range(5):
        tree.grant_space("group", tree.add_group(f"team-{i}"))
    refs = by_path(source(tree).list_refs())
    space = tuple(sorted({*SPACE, *(f"group:team-{i}" for i in range(5))}))
    assert refs["100"].access == (space,)
    restricted = {f"user:acc-{i}" for i in range(7)} | {f"user:u{i}@example.com" for i in range(7)}
    assert set(refs["500"].access[1]) == restricted | {f"group:g{i}" for i in range(1, 5)}
    assert sum(1 for path, _ in tree.log if "/content/500/restriction" in path) == 3
    assert sum(1 for path, _ in tree.log if "/spaces/98765/permissions" in path) == 3  # 8 grants


def test_a_public_space_and_everyone_groups_add_no_clause(tree):
    tree.grant_space("role", "ANONYMOUS")
    refs = by_path(source(tree).list_refs())
    assert refs["100"].access == () and refs["300"].access == (HR,)
    tree.space_grants.clear()
    tree.grant_space("group", tree.add_group("confluence-users"))
    tree.restrict("300", groups=["confluence-users"])
    refs = by_path(source(tree, everyone_groups=["confluence-users"]).list_refs())
    assert refs["100"].access == () and refs["300"].access == (HR,)
    tree.space_grants.clear()
    tree.grant_space("role", "all-licensed-users")  # an access class: unnamed, unless everyone holds it
    assert by_path(source(tree).list_refs())["100"].access == ((),)
    assert by_path(source(tree, everyone_groups=["all-licensed-users"]).list_refs())["100"].access == ()


def test_a_double_without_grants_serves_a_public_space(confluence_double):
    d = confluence_double
    d.add_page("1", "Open", "<p>open</p>")
    d.add_page("2", "Closed", "<p>closed</p>", parent_id="1", read_groups=["legal"])
    refs = by_path(source(d).list_refs())
    assert refs["1"].access == () and refs["2"].access == (("group:legal",),)


def test_space_readable_by_unnamed_roles_only_admits_full_access_callers(tree):
    tree.space_grants.clear()
    tree.grant_space("role", "space-member-role")
    refs = by_path(source(tree).list_refs())
    assert refs["100"].access == ((),)


def test_a_failed_restriction_read_fails_its_subtree_closed(tree):
    tree.pages["200"].restriction_fail = 500
    tree.add_attachment("300", "pay.pdf", b"%PDF-1.4 pay")
    src = source(tree, attachments=True, max_attempts=2)
    refs = by_path(src.list_refs())
    closed = {p for p, r in refs.items() if r.access == ((),)}
    assert closed == {"200", "300", "400", "300/attachments/att30001"}  # HR's subtree: its reading failed
    assert refs["500"].access == refs["100"].access == (SPACE,)
    assert [f.key for f in src.failures] == ["wiki:200", "wiki:300", "wiki:400"]
    message = src.failures[0].error
    assert src.failures[0].stage == "permissions" and "HTTP 500" in message
    assert "/content/200/restriction" in message and "hidden from all but full-access callers" in message
    assert "its read restriction: GET" in message
    assert "the read restriction of ancestor 200: GET" in src.failures[1].error  # 300's, caused by 200
    assert tree.counts["restriction"] == 6  # each page once, 200 twice (max_attempts); none read again


def test_a_failed_root_fails_the_space_and_the_next_listing_reads_afresh(tree):
    tree.pages["100"].restriction_fail = 503
    src = source(tree, max_attempts=2)
    src.list_refs()
    assert [f.key for f in src.failures] == [f"wiki:{p}" for p in ("100", "200", "300", "400", "500")]
    tree.pages["100"].restriction_fail = None
    refs = by_path(src.list_refs())  # the next run reads afresh: nothing is kept across listings
    assert src.failures == [] and refs["300"].access == (SPACE, HR)


def test_a_rate_limit_storm_is_waited_out(tree):
    tree.inject(429, 3, retry_after="0", endpoint="restriction")  # on whichever reads come first
    src = source(tree, max_attempts=4)
    refs = by_path(src.list_refs())
    assert src.failures == [] and not tree.faults and refs["400"].access == (SPACE, HR)


def test_a_429_storm_on_a_leaf_fails_only_the_leaf(tree):
    tree.pages["400"].restriction_fail = 429
    src = source(tree, max_attempts=2)
    refs = by_path(src.list_refs())
    assert [f.key for f in src.failures] == ["wiki:400"] and "429" in src.failures[0].error
    assert refs["400"].access == ((),) and refs["300"].access == (SPACE, HR)


def test_unreadable_space_permissions_fail_every_page_closed(tree):
    tree.inject(403, 1, endpoint="space_permissions")
    src = source(tree)
    refs = src.list_refs()
    assert {r.access for r in refs} == {((),)} and len(src.failures) == 5
    assert "the permissions of space 98765: GET" in src.failures[0].error and "forbidden" in src.failures[0].error


def test_off_reads_no_permission(tree):
    src = source(tree, permissions="off")
    assert all(r.access is None for r in src.list_refs())
    assert not {"space_permissions", "restriction", "ancestors"} & set(tree.counts)


@pytest.mark.parametrize(
    "value, expected",
    [
        ("yes", "permissions must be 'sync'"),
        ("Sync", "permissions must be 'sync'"),
        (True, "permissions must be 'sync'"),
        ("off", None),
        (False, None),  # YAML 1.1 reads a bare `off` as false
        ("sync", None),
    ],
)
def test_the_permissions_setting(write_config, value, expected):
    entry = {"name": "c", "type": "confluence", "base_url": "https://x.atlassian.net/wiki", "space": "D"}
    path = write_config([{**entry, "permissions": value}])
    if expected is None:
        assert load_settings(path).source("c").permissions == ("sync" if value == "sync" else "off")
        return
    with pytest.raises(ConfigError, match=expected) as e:
        load_settings(path)
    assert "source 'c'" in str(e.value)


def test_everyone_groups_need_sync(write_config):
    entry = {"name": "c", "type": "confluence", "base_url": "https://x.atlassian.net/wiki", "space": "D"}
    with pytest.raises(ConfigError, match="everyone_groups applies only with `permissions: sync`"):
        load_settings(write_config([{**entry, "everyone_groups": ["confluence-users"]}]))


@pytest.mark.parametrize("served", [{"restriction_all"}, {"content"}])
def test_a_site_without_the_paged_restriction_read_is_asked_the_other_forms(tree, served):
    """A 404 from `byOperation/read` (a site or proxy without it): the same lists are read from each
    operation's restrictions or the expanded content, and that form is asked first from then on."""
    tree.restriction_forms = served
    src = source(tree)
    refs = by_path(src.list_refs())
    assert refs["100"].access == refs["500"].access == (SPACE,)
    assert refs["200"].access == refs["300"].access == refs["400"].access == (SPACE, HR)
    assert src.failures == []
    [form] = served
    assert tree.counts[form] == 5  # each page once
    # the paged form was asked until one read found the form the site answers (reads run in parallel)
    assert 1 <= tree.counts["restriction"] <= 5


def test_no_form_of_the_restriction_read_fails_closed(tree):
    tree.restriction_forms = set()
    src = source(tree)
    refs = by_path(src.list_refs())
    assert all(ref.access == ((),) for ref in refs.values())  # full-access callers only
    assert {f.key.split(":")[-1] for f in src.failures} >= {"100", "200", "300", "400", "500"}
    assert all(f.stage == "permissions" and "HTTP 404" in f.error for f in src.failures)


def test_a_group_without_a_name_lookup_is_matched_by_its_id(tree):
    """No `group/by-id` on the site (404): the group's id is the only name there is."""
    gid = tree._group_id("staff")
    del tree.groups[gid]
    refs = by_path(source(tree).list_refs())
    assert refs["100"].access == (tuple(sorted((f"group:{gid}", f"user:{ANN}", "user:ann@example.com"))),)

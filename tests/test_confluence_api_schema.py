"""The API double answers like Confluence Cloud: its JSON validates against the official v2 spec.

Beyond schema validity (types, enums, required shapes), every key the double
sends must be declared by the spec, so a field invented here cannot creep into
the client's expectations. The same validator accepts real captured responses.
"""

from __future__ import annotations

import json
from urllib.parse import quote

import httpx
import pytest
from jsonschema import Draft4Validator, validators
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT4

from tests.confluence_double import ConfluenceDouble
from tests.conftest_confluence import DATA, EMAIL, TOKEN, confluence_double, confluence_env  # noqa: F401 (fixtures)

SPEC_PATH = DATA / "api" / "openapi-v2.v3.json"
SPEC_URI = "urn:confluence-cloud-v2"


@pytest.fixture(scope="module")
def spec() -> dict:
    if not SPEC_PATH.is_file():
        pytest.skip(f"official Confluence v2 OpenAPI spec not found at {SPEC_PATH} (needs ../shared/data)")
    return json.loads(SPEC_PATH.read_text())


@pytest.fixture(scope="module")
def registry(spec) -> Registry:
    return Registry().with_resource(SPEC_URI, Resource.from_contents(spec, default_specification=DRAFT4))


def _type_or_null(validator, types, instance, schema):
    # OpenAPI 3.0's `nullable: true` (which JSON Schema draft 4 lacks) also admits null.
    if instance is None and schema.get("nullable"):
        return
    yield from Draft4Validator.VALIDATORS["type"](validator, types, instance, schema)


OpenAPI30Validator = validators.extend(Draft4Validator, {"type": _type_or_null})


def response_schema(operation: str, status: str = "200") -> dict:
    pointer = "/".join(
        quote(p.replace("~", "~0").replace("/", "~1"), safe="")
        for p in ["paths", operation, "get", "responses", status, "content", "application/json", "schema"]
    )
    return {"$ref": f"{SPEC_URI}#/{pointer}"}


def _flatten(schemas: list[dict], registry: Registry) -> list[dict]:
    """Schemas with $refs resolved and allOf parts spliced in."""
    resolver, out = registry.resolver(SPEC_URI), []
    for schema in schemas:
        while "$ref" in schema:
            schema = resolver.lookup(schema["$ref"]).contents
        out += [schema, *_flatten(schema.get("allOf", []), registry)]
    return out


def undeclared(instance, schemas: list[dict], registry: Registry, where: str = "$") -> list[str]:
    """Paths of object keys in `instance` that no `properties` of any of `schemas` declares."""
    schemas = _flatten(schemas, registry)
    out: list[str] = []
    if isinstance(instance, dict):
        props: dict[str, list[dict]] = {}
        for schema in schemas:
            for key, sub in schema.get("properties", {}).items():
                props.setdefault(key, []).append(sub)
        for key, value in instance.items():
            out += undeclared(value, props[key], registry, f"{where}.{key}") if key in props else [f"{where}.{key}"]
    elif isinstance(instance, list):
        items = [s["items"] for s in schemas if "items" in s]
        for i, item in enumerate(instance):
            out += undeclared(item, items, registry, f"{where}[{i}]") if items else []
    return out


def check(instance, operation: str, registry: Registry, strict: bool = True) -> None:
    schema = response_schema(operation)
    errors = [
        f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
        for e in OpenAPI30Validator(schema, registry=registry).iter_errors(instance)
    ]
    assert not errors, f"{operation}: {errors}"
    if strict:
        assert not undeclared(instance, [schema], registry), f"{operation}: keys not in the spec"


@pytest.fixture
def served(confluence_double: ConfluenceDouble) -> tuple[ConfluenceDouble, httpx.Client]:
    d = confluence_double
    d.add_page("1001", "Home", "<p>home</p>", labels=["root"])
    d.add_page("1002", "Guide", "<p>guide</p>", parent_id="1001", labels=["howto", "eng"])
    for i in range(3, 8):
        d.add_page(f"10{i:02d}", f"Leaf {i}", f"<p>leaf {i}</p>", parent_id="1002")
    d.grant_space("group", d.add_group("staff"))
    d.grant_space("user", d.add_user("5b10ac8d82e05b22cc7d4ef5"), key="update", target="page")
    d.grant_space("role", "ANONYMOUS")
    with httpx.Client(base_url=d.base_url + "/api/v2", auth=(EMAIL, TOKEN)) as client:
        yield d, client


def test_strict_check_catches_invented_keys(registry):
    page = {"id": "1", "title": "t", "invented": 1, "version": {"number": 2, "bogus": True}, "_links": {"base": "x"}}
    assert undeclared(page, [response_schema("/pages/{id}")], registry) == ["$.invented", "$.version.bogus"]


CALLS = [  # (request under /wiki/api/v2, operation in the spec)
    ("/spaces?keys=DOCS", "/spaces"),
    ("/spaces?ids=98765", "/spaces"),
    ("/spaces/98765/pages?status=current&limit=2", "/spaces/{id}/pages"),
    ("/pages?id=1001,1002,1005&status=current", "/pages"),
    ("/pages/1002", "/pages/{id}"),
    ("/pages/1002?body-format=storage&include-labels=true", "/pages/{id}"),
    ("/pages/1001/children?limit=2", "/pages/{id}/children"),
    ("/pages/1005/ancestors?limit=250", "/pages/{id}/ancestors"),
    ("/pages/1002/labels", "/pages/{id}/labels"),
    ("/spaces/98765/permissions?limit=2", "/spaces/{id}/permissions"),
]


@pytest.mark.parametrize("path, operation", CALLS, ids=[c[0] for c in CALLS])
def test_double_responses_match_the_official_schema(served, registry, path, operation):
    _, client = served
    resp = client.get(path)
    assert resp.status_code == 200, resp.text
    check(resp.json(), operation, registry)


def test_every_cursor_page_matches_and_links_follow_the_spec(served, registry):
    d, client = served
    resp, pages = client.get("/spaces/98765/pages?limit=2"), 1
    while True:
        check(resp.json(), "/spaces/{id}/pages", registry)
        nxt = resp.json()["_links"].get("next")
        if not nxt:
            break
        assert nxt.startswith("/wiki/api/v2/spaces/98765/pages?") and "cursor=" in nxt  # relative to the host
        assert resp.headers["Link"] == f'<{nxt}>; rel="next", <{d.base_url}>; rel="base"'
        resp, pages = httpx.get(d.base_url.removesuffix("/wiki") + nxt, auth=(EMAIL, TOKEN)), pages + 1
    assert pages == 4  # 7 pages, 2 per response


def test_double_shapes_match_real_captured_responses(served, registry):
    """Real v2 responses (querypie) validate too, and the double sends no key they lack."""
    real_dir = DATA / "api" / "querypie"
    _, client = served
    mine = client.get("/pages/1002?body-format=storage").json()
    for path in sorted(real_dir.glob("v2-page-*.json")):
        real = json.loads(path.read_text())
        check(real, "/pages/{id}", registry, strict=False)
        assert set(mine) - {"lastOwnerId"} <= set(real), path.name  # lastOwnerId: in the spec, null in reality
        assert set(mine["version"]) <= set(real["version"]) and set(mine["_links"]) <= set(real["_links"])
    mine = client.get("/pages/1001/children").json()["results"][0]
    for path in sorted(real_dir.glob("v2-direct-children-*.json")):
        real = json.loads(path.read_text())
        check(real, "/pages/{id}/children", registry)
        assert all(set(child) == set(mine) for child in real["results"]), path.name


@pytest.mark.parametrize(
    "path, status",
    [
        ("/spaces/98765/pages?limit=0", 400),
        ("/spaces/98765/pages?limit=251", 400),
        ("/pages/1001?body-format=wiki", 400),
        ("/spaces/98765/pages?status=bogus", 400),
        ("/pages/4242", 404),
        ("/spaces/1/pages", 404),
        ("/pages?id=abc", 400),
    ],
)
def test_double_rejects_what_the_real_api_rejects(served, path, status):
    _, client = served
    assert client.get(path).status_code == status


def test_double_checks_credentials(served):
    d, _ = served
    assert httpx.get(d.base_url + "/api/v2/spaces", auth=(EMAIL, "wrong")).status_code == 401
    assert httpx.get(d.base_url + "/api/v2/spaces").status_code == 401

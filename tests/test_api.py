"""The HTTP API on a real uvicorn server (127.0.0.1), with bearer tokens and JWTs checked
against a JWKS served by another real server; and the MCP proxy to it (`--remote-api`)."""

from __future__ import annotations

import re
import subprocess
import time

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from fastapi import FastAPI
from mcp import StdioServerParameters

from docforge.servers import LocalSearch
from docforge.servers.api import create_app
from docforge.servers.auth import AuthConfig, Authenticator
from pipeline.errors import ConfigError
from pipeline.query import Searcher
from tests.helpers import ServerThread
from tests.test_mcp import DOCFORGE, session_calls

AUDIENCE, ISSUER, TOKENS = "api://docforge", "https://idp.example.test/tenant/v2.0", ("tok-one", "tok-two")
QUESTION = {"query": "how do I give a customer their money back?", "user_name": "ada", "team_name": "payments"}


def rsa_key():
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def pem(key) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


@pytest.fixture(scope="module")
def signing_key():
    return rsa_key()


@pytest.fixture(scope="module")
def jwks_url(signing_key):
    jwk = jwt.algorithms.RSAAlgorithm.to_jwk(signing_key.public_key(), as_dict=True)
    app = FastAPI()
    app.get("/keys")(lambda: {"keys": [{**jwk, "kid": "k1", "use": "sig", "alg": "RS256"}]})
    with ServerThread(app) as srv:
        yield f"{srv.url}/keys"


@pytest.fixture(scope="module")
def api(corpus, embedder, jwks_url):
    auth = Authenticator(
        AuthConfig(api_tokens=",".join(TOKENS), jwt_jwks_url=jwks_url, jwt_audience=AUDIENCE, jwt_issuer=ISSUER)
    )
    search = LocalSearch(Searcher(corpus.settings, url=corpus.url, embedder=embedder, reranker=None))
    with ServerThread(create_app(search, auth, health=search.health)) as srv:
        srv.corpus = corpus
        yield srv
    search.searcher.close()


def token(key, **overrides) -> str:
    claims = {
        "sub": "u-1",
        "preferred_username": "ada@example.test",
        "aud": AUDIENCE,
        "iss": ISSUER,
        "iat": int(time.time()),
        "exp": int(time.time()) + 300,
        **overrides,
    }
    return jwt.encode(claims, pem(key), algorithm="RS256", headers={"kid": "k1"})


def post(api, body: dict, bearer: str | None = None) -> httpx.Response:
    headers = {"Authorization": f"Bearer {bearer}"} if bearer else {}
    return httpx.post(f"{api.url}/search", json=body, headers=headers, timeout=60)


def test_health_is_the_only_open_route(api):
    assert httpx.get(f"{api.url}/health").json()["status"] == "ok"
    for method, path in [("POST", "/search"), ("GET", "/openapi.json"), ("GET", "/docs"), ("GET", "/redoc")]:
        resp = httpx.request(method, f"{api.url}{path}", json=QUESTION if method == "POST" else None)
        assert resp.status_code in (401, 404), path
        assert resp.status_code == 401 or path == "/redoc"
    assert post(api, QUESTION).headers["www-authenticate"] == "Bearer"


@pytest.mark.parametrize("bearer", TOKENS)
def test_search_with_a_token(api, bearer):
    resp = post(api, {**QUESTION, "limit": 2}, bearer)
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert body["query"] == QUESTION["query"] and len(body["hits"]) == 2
    top = body["hits"][0]
    assert (top["doc_key"], top["source"], top["title"], top["section"]) == (
        "payments:docs/refunds.md",
        "payments",
        "Issuing refunds",
        "Issuing refunds",
    )
    assert top["url"].endswith("/payments/docs/refunds.md") and 0 < top["score"] <= 1


@pytest.mark.parametrize("bearer", ["", "tok", "tok-one-", "TOK-ONE", "tok-one,tok-two", "a.b.c", "Basic dG9r"])
def test_bad_tokens_are_refused(api, bearer):
    assert post(api, QUESTION, bearer or None).status_code == 401


def test_valid_jwt_is_accepted(api, signing_key, caplog):
    resp = post(api, QUESTION, token(signing_key))
    assert resp.status_code == 200 and resp.json()["hits"][0]["doc_key"] == "payments:docs/refunds.md"


@pytest.mark.parametrize(
    "claims",
    [
        {"exp": int(time.time()) - 600},
        {"aud": "api://someone-else"},
        {"iss": "https://evil.example.test/"},
        {"aud": None},
    ],
)
def test_invalid_jwts_are_refused(api, signing_key, claims):
    bad = token(signing_key, **claims)
    if claims == {"aud": None}:
        bad = jwt.encode(
            {"sub": "x", "iss": ISSUER, "exp": int(time.time()) + 300},
            pem(signing_key),
            algorithm="RS256",
            headers={"kid": "k1"},
        )
    assert post(api, QUESTION, bad).status_code == 401


def test_forged_jwts_are_refused(api, signing_key):
    other = token(rsa_key())  # right kid, wrong key
    public = signing_key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    claims = jwt.decode(token(signing_key), options={"verify_signature": False})
    unsigned = jwt.encode(claims, None, algorithm="none", headers={"kid": "k1"})
    assert post(api, QUESTION, other).status_code == 401
    assert post(api, QUESTION, unsigned).status_code == 401
    import base64
    import hashlib
    import hmac  # noqa: E401 — HS256 keyed with the public key (algorithm confusion)
    import json

    b64 = lambda b: base64.urlsafe_b64encode(b).rstrip(b"=").decode()  # noqa: E731
    head = (
        b64(json.dumps({"alg": "HS256", "typ": "JWT", "kid": "k1"}).encode()) + "." + b64(json.dumps(claims).encode())
    )
    confused = head + "." + b64(hmac.new(public, head.encode(), hashlib.sha256).digest())
    assert post(api, QUESTION, confused).status_code == 401


def test_openapi_and_docs_behind_auth(api):
    headers = {"Authorization": f"Bearer {TOKENS[0]}"}
    spec = httpx.get(f"{api.url}/openapi.json", headers=headers).json()
    assert "/search" in spec["paths"] and "/health" in spec["paths"]
    assert spec["components"]["securitySchemes"]["HTTPBearer"]["scheme"] == "bearer"
    assert set(spec["components"]["schemas"]["SearchRequest"]["properties"]) >= {
        "query",
        "user_name",
        "team_name",
        "area_name",
        "limit",
        "filters",
        "filter_repo",
    }
    page = httpx.get(f"{api.url}/docs", headers=headers)
    assert page.status_code == 200 and "SwaggerUIBundle" in page.text and '"/search"' in page.text


def test_docs_page_assets_are_served_locally(api):
    """/docs works offline: every script, stylesheet and icon it loads comes from this server."""
    page = httpx.get(f"{api.url}/docs", headers={"Authorization": f"Bearer {TOKENS[0]}"})
    urls = re.findall(r'(?:src|href)="([^"]*)"', page.text)
    assert {u.rsplit("/", 1)[-1] for u in urls} == {"swagger-ui-bundle.js", "swagger-ui.css", "favicon.png"}
    types = {".js": "text/javascript", ".css": "text/css", ".png": "image/png"}
    for url in urls:
        assert url.startswith("/docs/assets/"), url  # a path on this server, not a CDN
        resp = httpx.get(f"{api.url}{url}")  # a browser loads them without the bearer header
        assert resp.status_code == 200, url
        assert resp.headers["content-type"].split(";")[0] == types[url[url.rindex(".") :]], url
    bundle = httpx.get(f"{api.url}/docs/assets/swagger-ui-bundle.js").text
    assert "SwaggerUIBundle" in bundle and "cdn." not in page.text


def test_bad_requests(api):
    auth = TOKENS[0]
    assert post(api, {**QUESTION, "limit": 0}, auth).status_code == 422
    assert post(api, {**QUESTION, "unknown": 1}, auth).status_code == 422
    resp = post(api, {**QUESTION, "filters": {"source": {"$regex": "x"}}}, auth)
    assert resp.status_code == 400 and "unknown operator '$regex'" in resp.json()["detail"]
    resp = post(api, {**QUESTION, "filters": {"source": "payments' OR '1'='1"}}, auth)
    assert resp.status_code == 200 and resp.json()["hits"] == []
    resp = post(api, {**QUESTION, "filter_repo": "handbook", "filters": {"path": {"$prefix": "docs/"}}}, auth)
    assert {h["doc_key"] for h in resp.json()["hits"]} == {
        "handbook:docs/deploy.md",
        "handbook:docs/credentials.md",
        "handbook:docs/onboarding.md",
        "handbook:docs/testing.md",
    }


def test_authenticator_refuses_to_run_open():
    with pytest.raises(ConfigError, match="DOCFORGE_API_TOKENS"):
        Authenticator(AuthConfig(api_tokens=None, jwt_jwks_url=None))
    with pytest.raises(ConfigError, match="DOCFORGE_JWT_AUDIENCE"):
        Authenticator(AuthConfig(jwt_jwks_url="http://127.0.0.1:9/keys", jwt_audience=None))
    with pytest.raises(ConfigError, match="asymmetric"):
        Authenticator(AuthConfig(api_tokens="t", jwt_algorithms="HS256"))


def test_cli_api_without_auth_exits_1(tmp_path):
    env = {"PATH": "/usr/bin:/bin", "DOCFORGE_HOME": str(tmp_path), "HOME": str(tmp_path)}
    res = subprocess.run(
        [DOCFORGE, "serve", "--api", "--port", "0"], capture_output=True, text=True, env=env, timeout=120
    )
    assert res.returncode == 1 and "DOCFORGE_API_TOKENS" in res.stderr


def test_mcp_proxy_to_the_hosted_api(api, tmp_path):
    """`docforge serve --remote-api URL`: the MCP tool answered by the API, with the token from env."""
    env = {"DOCFORGE_HOME": str(tmp_path), "HF_HUB_OFFLINE": "1"}
    good = StdioServerParameters(
        command=DOCFORGE, args=["serve", "--remote-api", api.url], env={**env, "DOCFORGE_API_TOKEN": TOKENS[1]}
    )
    bad = StdioServerParameters(
        command=DOCFORGE, args=["serve", "--remote-api", api.url], env={**env, "DOCFORGE_API_TOKEN": "wrong"}
    )
    with open(tmp_path / "stderr.log", "w") as errlog:
        _, (ok,) = session_calls(good, errlog, [{**QUESTION, "area_name": "finance", "limit": 2}])
        _, (refused,) = session_calls(bad, errlog, [QUESTION])
    assert not ok.is_error and ok.structured_content["hits"][0]["doc_key"] == "payments:docs/refunds.md"
    assert len(ok.structured_content["hits"]) == 2
    assert refused.is_error and "401" in refused.content[0].text
    assert "user='ada' team='payments' area='finance'" in (tmp_path / "stderr.log").read_text()

"""Every route with every role and with no token; the OpenAPI document matches the routes."""

from __future__ import annotations

from typing import Any

import pytest
from starlette.routing import Route

from gateway.server import ENDPOINTS, create_app
from gateway.server._openapi import openapi
from tests.gateway.server._gateway import (
    ROLES,
    Gateway,
    fill_path,
    tiny_gateway,
)

pytestmark = pytest.mark.slow


def _kind(role: str | None) -> str | None:
    return None if role is None else role.split(":", 1)[0]


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Any:
    with tiny_gateway(tmp_path_factory.mktemp("routes"), eval_workers=0) as gw:
        yield gw


@pytest.mark.parametrize("endpoint", ENDPOINTS, ids=lambda e: f"{e.method} {e.path}")
def test_every_route_with_every_role(gateway: Gateway, endpoint: Any) -> None:
    body: dict[str, Any] | None = {} if endpoint.method in ("POST", "PUT") else None
    for role in (None, *ROLES):
        response = gateway.call(endpoint.method, fill_path(endpoint.path), role, json=body)
        where = f"{endpoint.method} {endpoint.path} as {role or 'no token'}"
        assert response.status_code < 500 or endpoint.path == "/healthz", where
        error = response.json().get("error") if "json" in response.headers["content-type"] else None
        if endpoint.access == "none":
            assert response.status_code not in (401, 403), where
            continue
        if role is None:
            assert response.status_code == 401, where
            assert response.headers["www-authenticate"] == "Bearer"
            assert error is not None and error["code"] == "unauthorized"
            continue
        admitted = endpoint.access == "any" or _kind(role) in endpoint.access
        role_refusal = (
            response.status_code == 403
            and error is not None
            and error["code"] == "forbidden"
            and "roles" in error["details"]
        )
        if admitted:
            assert response.status_code != 401 and not role_refusal, (where, response.text)
        else:
            assert role_refusal, (where, response.text)


def test_a_bad_token_is_401_not_403(gateway: Gateway) -> None:
    for header in ("Bearer hol_not-a-real-token", "Basic abc", "Bearer"):
        response = gateway.call("GET", "/v1/agents", headers={"Authorization": header})
        assert response.status_code == 401, header


def test_a_revoked_token_stops_working(gateway: Gateway) -> None:
    info, token = gateway.store.tokens.create("operator")
    headers = {"Authorization": f"Bearer {token}"}
    assert gateway.call("GET", "/v1/agents", headers=headers).status_code == 200
    gateway.store.tokens.revoke(info.id)
    assert gateway.call("GET", "/v1/agents", headers=headers).status_code == 401


def test_an_org_acts_on_its_own_agents_only(gateway: Gateway) -> None:
    own = gateway.call("POST", "/v1/agents/acme/ticket-triage/disable", "org:acme")
    assert own.status_code == 200 and own.json()["disabled"] is True
    assert gateway.call("POST", "/v1/agents/acme/ticket-triage/enable", "org:acme").is_success
    other = gateway.call("POST", "/v1/agents/acme/ticket-triage/disable", "org:other")
    assert other.status_code == 403 and other.json()["error"]["code"] == "forbidden"
    record = gateway.call("GET", "/v1/records/acme/ticket-triage", "org:other")
    assert record.status_code == 403


def test_the_api_refuses_asgi_agents(gateway: Gateway) -> None:
    manifest = gateway.store.agents.get("acme/ticket-triage").manifest
    response = gateway.call("POST", "/v1/agents", "org:acme", json=manifest)
    assert response.status_code == 409 and "asgi" in response.json()["error"]["message"]


def test_unknown_routes_and_methods_use_the_error_shape(gateway: Gateway) -> None:
    missing = gateway.call("GET", "/v1/nothing-here", "operator")
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"
    wrong = gateway.call("DELETE", "/v1/agents", "operator")
    assert wrong.status_code == 405 and wrong.json()["error"]["code"] == "method_not_allowed"


def test_oversized_and_malformed_bodies(gateway: Gateway) -> None:
    big = gateway.call(
        "POST",
        "/v1/mandates",
        "operator",
        content=b"[" * (300 * 1024),
        headers={"content-type": "application/json"},
    )
    assert big.status_code == 413 and big.json()["error"]["code"] == "payload_too_large"
    deep = gateway.call(
        "POST",
        "/v1/mandates",
        "operator",
        content=b"[" * 100 + b"]" * 100,
        headers={"content-type": "application/json"},
    )
    assert deep.status_code == 400 and "nested" in deep.json()["error"]["message"]
    broken = gateway.call(
        "POST",
        "/v1/mandates",
        "operator",
        content=b"{nope",
        headers={"content-type": "application/json"},
    )
    assert broken.status_code == 400 and "not valid JSON" in broken.json()["error"]["message"]


def test_openapi_lists_exactly_the_routes(gateway: Gateway) -> None:
    spec = gateway.call("GET", "/openapi.json").json()
    assert spec["openapi"] == "3.1.0"
    documented = {(m.upper(), p) for p, ops in spec["paths"].items() for m in ops}
    app = create_app()
    served = {
        (method, route.path)
        for route in app.routes
        if isinstance(route, Route)
        for method in (route.methods or set()) - {"HEAD"}
    }
    assert documented == served == {(e.method, e.path) for e in ENDPOINTS}
    for endpoint in ENDPOINTS:
        operation = spec["paths"][endpoint.path][endpoint.method.lower()]
        roles = operation["x-holon-roles"]
        expected = (
            [endpoint.access] if isinstance(endpoint.access, str) else sorted(endpoint.access)
        )
        assert roles == expected
        if endpoint.access != "none":
            assert {"401", "403"} <= set(operation["responses"])
    assert openapi(ENDPOINTS) == spec


def test_healthz_and_metrics(gateway: Gateway) -> None:
    assert gateway.call("GET", "/healthz").json() == {"status": "ok", "database": "ok"}
    text = gateway.call("GET", "/metrics", "operator").text
    assert "# TYPE holon_http_requests_total counter" in text
    assert 'holon_http_requests_total{method="GET",route="/healthz",status="200"}' in text

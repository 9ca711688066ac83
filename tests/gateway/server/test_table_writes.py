"""The writes the operation table routes (agents.register, the agent's secret, mandates.grant
and mandates.check) and the suite reads beside them, through a real gateway: their
statuses, bodies and located errors, and who may ask what."""

from __future__ import annotations

from typing import Any

import pytest

from agents import load_manifest
from schema.jsontext import dumps, loads
from tests.gateway.server._gateway import (
    TRIAGE,
    Gateway,
    mandate,
    tiny_gateway,
)

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Any:
    with tiny_gateway(tmp_path_factory.mktemp("writes"), eval_workers=0) as gw:
        yield gw


def _http_manifest(agent_id: str, version: str = "1.0.0") -> dict[str, Any]:
    manifest = load_manifest(TRIAGE).to_json()
    manifest.update(
        id=agent_id, version=version, protocol="holon-http", endpoint="http://127.0.0.1:9/invoke"
    )
    manifest: dict[str, Any] = loads(dumps(manifest))  # its Decimals as JSON numbers
    return manifest


def _error(response: Any) -> dict[str, Any]:
    error: dict[str, Any] = response.json()["error"]
    return error


def test_registering_says_created_then_unchanged(gateway: Gateway) -> None:
    manifest = _http_manifest("acme/table-bot")
    created = gateway.call("POST", "/v1/agents", "org:acme", json=manifest)
    assert created.status_code == 201, created.text
    assert created.json()["status"] == "created"
    assert created.json()["agent"]["id"] == "acme/table-bot"
    again = gateway.call("POST", "/v1/agents", "org:acme", json=manifest)
    assert again.status_code == 200 and again.json()["status"] == "unchanged"
    # An org registers its own agents only; the body is one manifest object.
    other = gateway.call("POST", "/v1/agents", "org:other", json=_http_manifest("acme/x"))
    assert other.status_code == 403
    listed = gateway.call("POST", "/v1/agents", "operator", json=[manifest])
    assert listed.status_code == 400
    assert _error(listed)["message"] == "the manifest must be a JSON object"
    bad = gateway.call("POST", "/v1/agents", "operator", json={**manifest, "capabilities": 7})
    assert bad.status_code == 422


def test_the_secret_is_set_and_cleared_by_its_org(gateway: Gateway) -> None:
    path = "/v1/agents/acme/ticket-triage/secret"
    done = gateway.call("PUT", path, "org:acme", json={"secret": "s3cret-value"})
    assert done.status_code == 200 and done.json() == {
        "agent": "acme/ticket-triage",
        "secret_set": True,
    }
    assert gateway.call("PUT", path, "org:other", json={"secret": "s3cret"}).status_code == 403
    for body in ({}, {"secret": 7}, {"secret": None}):
        refused = gateway.call("PUT", path, "org:acme", json=body)
        assert refused.status_code == 400, body
        assert _error(refused)["message"] == (
            'the body must be {"secret": "<the agent\'s bearer secret>"}'
        )
    spaced = gateway.call("PUT", path, "org:acme", json={"secret": "has space"})
    assert spaced.status_code == 400 and "s3cret" not in spaced.text
    extra = gateway.call("PUT", path, "org:acme", json={"secret": "s3cret-value", "also": 1})
    assert extra.status_code == 400 and _error(extra)["details"]["path"] == "$.also"
    cleared = gateway.call("DELETE", path, "org:acme")
    assert cleared.json() == {"agent": "acme/ticket-triage", "secret_set": False, "cleared": True}
    again = gateway.call("DELETE", path, "org:acme")
    assert again.status_code == 200 and again.json()["cleared"] is False
    missing = gateway.call("DELETE", "/v1/agents/acme/nobody/secret", "operator")
    assert missing.status_code == 404


def test_a_grant_is_kept_with_its_token_and_checked(gateway: Gateway) -> None:
    document = mandate(id="table-grant")
    created = gateway.call("POST", "/v1/mandates", "operator", json=document)
    assert created.status_code == 201 and created.json()["status"] == "created"
    same = gateway.call("POST", "/v1/mandates", "operator", json=document)
    assert same.status_code == 200 and same.json()["status"] == "unchanged"
    (revision,) = gateway.store.mandates.revisions("table-grant")
    granting = gateway.store.tokens.list()
    operator_ids = {t.id for t in granting if t.role == "operator"}
    assert revision.granted_by in operator_ids  # the token that granted it, not `local`
    assert gateway.call("POST", "/v1/mandates", "org:acme", json=document).status_code == 403
    not_object = gateway.call("POST", "/v1/mandates", "operator", json="a mandate")
    assert _error(not_object)["message"] == "the mandate must be a JSON object"

    path = "/v1/mandates/table-grant/check"
    body = {"agent": "acme/ticket-triage", "capability": "ticket.classify"}
    decided = gateway.call("POST", path, "operator", json=body)
    assert decided.status_code == 200 and decided.json()["decision"] in ("allow", "deny")
    shape = ' (the body is {"agent": "org/name", "capability": "..."})'
    no_agent = gateway.call("POST", path, "operator", json={"capability": "ticket.classify"})
    assert _error(no_agent)["message"] == "$.agent must be an agent id" + shape
    no_capability = gateway.call("POST", path, "operator", json={"agent": "acme/ticket-triage"})
    assert _error(no_capability)["message"] == "$.capability must be a capability name" + shape
    unknown = gateway.call("POST", "/v1/mandates/nobody/check", "operator", json=body)
    assert unknown.status_code == 404


def test_suite_reads_take_a_bounded_version(gateway: Gateway) -> None:
    for what in ("cases", "files"):
        ok = gateway.call("GET", f"/v1/suites/tiny/{what}", "org:acme")
        assert ok.status_code == 200 and ok.json()["id"] == "tiny"
        pinned = gateway.call("GET", f"/v1/suites/tiny/{what}?version=1", "org:acme")
        assert pinned.json()["version"] == 1
        zero = gateway.call("GET", f"/v1/suites/tiny/{what}?version=0", "org:acme")
        assert zero.status_code == 400
        assert _error(zero)["details"]["parameter"] == "version"
        absent = gateway.call("GET", f"/v1/suites/tiny/{what}?version=9", "org:acme")
        assert absent.status_code == 404
    cases = gateway.call("GET", "/v1/suites/tiny/cases", "caller:finance-bot").json()
    assert set(cases["holdout"]) == {"cases"}  # the holdout as counts only

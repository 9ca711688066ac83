"""`POST /v1/evals/import` over a real gateway: a real eval's report imported, compared and
labelled; its body bounded at 20 MiB for that route only; bad reports refused with their path."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from evals import MAX_REPORT_BYTES
from records import Store
from tests.gateway.server._gateway import Gateway, tiny_gateway

pytestmark = pytest.mark.slow

GENERAL_LIMIT = 8 * 1024 * 1024  # every other route's (create_app's max_body_bytes)


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    with tiny_gateway(tmp_path_factory.mktemp("imports"), holdout_wrong=2) as gw:
        yield gw


@pytest.fixture(scope="module")
def evaluated(gateway: Gateway) -> tuple[str, bytes]:
    """A real eval run by the gateway's workers, and its operator report as the API gives it."""
    eval_id = gateway.evaluate("acme/ticket-triage")["id"]
    report = gateway.call(
        "GET", f"/v1/evals/{eval_id}/report", "operator", params={"audience": "operator"}
    )
    assert report.status_code == 200, report.text
    return eval_id, report.content


def _import(gateway: Gateway, body: bytes, role: str = "operator", **params: Any) -> Any:
    return gateway.call(
        "POST",
        "/v1/evals/import",
        role,
        content=body,
        params=params,
        headers={"Content-Type": "application/json"},
    )


def test_a_report_imports_compares_matched_and_is_labelled(
    gateway: Gateway, evaluated: tuple[str, bytes]
) -> None:
    original, body = evaluated
    answer = _import(gateway, body, source="https://a.example/v1/evals")
    assert answer.status_code == 201, answer.text
    view = answer.json()
    imported = view["id"]
    label = view["imported"]
    assert label["origin"]["eval_id"] == original
    assert label["origin"]["source"] == "https://a.example/v1/evals"
    assert label["imported_by"] is not None  # the operator token's id

    compared = gateway.call(
        "GET",
        f"/v1/evals/{original}/compare/{imported}",
        "operator",
        params={"audience": "operator"},
    ).json()
    assert compared["matched"] is True and compared["candidate"]["imported"] is not None

    listed = gateway.call("GET", "/v1/evals", "operator").json()["items"]
    assert {e["id"]: e["imported"] is not None for e in listed}[imported] is True
    status = gateway.call("GET", f"/v1/evals/{imported}", "operator").json()
    assert status["progress"]["done"] == status["cells"] and status["imported"] is not None
    text = gateway.call(
        "GET", f"/v1/evals/{imported}/report", "operator", params={"format": "html"}
    ).text
    assert "(imported)" in text

    # An org reads it as any report of its agent: the author's, without who imported it.
    author = gateway.call("GET", f"/v1/evals/{imported}/report", "org:acme").json()
    assert author["imported"]["imported_by"] is None
    assert all(c["split"] == "public" for c in author["suites"][0]["cases"])

    for action in ("resume", "cancel"):
        refused = gateway.call("POST", f"/v1/evals/{imported}/{action}", "operator")
        assert refused.status_code == 409, (action, refused.text)
        assert "is imported" in refused.json()["error"]["message"]


def test_only_an_operator_imports(gateway: Gateway, evaluated: tuple[str, bytes]) -> None:
    _, body = evaluated
    for role in ("org:acme", "caller:finance-bot"):
        assert _import(gateway, body, role).status_code == 403


def test_the_route_reads_past_the_general_limit_up_to_its_own(
    gateway: Gateway, evaluated: tuple[str, bytes]
) -> None:
    _, body = evaluated
    # JSON allows whitespace: the same report, past every other route's limit, imports.
    padded = body + b" " * (GENERAL_LIMIT + 1024 - len(body))
    answer = _import(gateway, padded)
    assert answer.status_code == 201, answer.text[:300]
    over = body + b" " * (MAX_REPORT_BYTES + 1 - len(body))
    answer = _import(gateway, over)
    assert answer.status_code == 413
    assert answer.json()["error"]["details"]["limit"] == MAX_REPORT_BYTES
    # Every other route keeps its own limit.
    agents = gateway.call(
        "POST",
        "/v1/agents",
        "operator",
        content=b" " * (GENERAL_LIMIT + 1),
        headers={"Content-Type": "application/json"},
    )
    assert agents.status_code == 413


def test_a_tampered_report_is_refused_with_its_path(
    gateway: Gateway, evaluated: tuple[str, bytes]
) -> None:
    _, body = evaluated
    tampered = body.replace(b'"overfit_delta":"0.15"', b'"overfit_delta":"0.01"', 1)
    assert tampered != body
    answer = _import(gateway, tampered)
    assert answer.status_code == 422, answer.text
    error = answer.json()["error"]
    assert error["code"] == "invalid_report"
    assert error["details"]["path"].startswith("$.suites[0].")
    for bad, where in ((b"{", None), (b'{"report_version": 2}', "$")):
        answer = _import(gateway, bad)
        assert answer.status_code == 422, answer.text
        if where is not None:
            assert answer.json()["error"]["details"]["path"].startswith(where)
    assert _import(gateway, b"").status_code == 400
    assert _import(gateway, body, source="x" * 501).status_code == 400


def test_nothing_is_kept_of_a_refused_report(
    gateway: Gateway, evaluated: tuple[str, bytes]
) -> None:
    store: Store = gateway.store
    before = len(gateway.call("GET", "/v1/evals", "operator").json()["items"])
    _, body = evaluated
    incomplete = body.replace(b'"complete":true', b'"complete":false', 1)
    assert incomplete != body
    assert _import(gateway, incomplete).status_code == 422
    assert len(gateway.call("GET", "/v1/evals", "operator").json()["items"]) == before
    assert store.evals.current_record("acme/ticket-triage") is not None

"""holon-http as the example agents speak it: envelope, identity, error shape.

Run against all three agents, in-process and over a real socket, because the
plumbing is shared (examples/agents/_protocol.py) and each agent must keep it.
"""

from __future__ import annotations

import base64
from typing import Any

import httpx
import pytest

from examples.agents import invoice_reader, report_writer, ticket_triage
from schema.jsontext import loads
from tests._servers import serve
from tests.examples._client import error_of, get_asgi, invoke, output_of, post_asgi
from tests.examples._invoice_pdf import render, sample_spec

REPORT_INPUT = {
    "title": "Weekly KPIs",
    "period": {"start": "2026-03-02", "end": "2026-03-08"},
    "metrics": [{"name": "Orders", "value": 412}],
}
TICKET_INPUT = {"subject": "Charged twice", "body": "Please refund the second charge."}


def _invoice_input() -> dict[str, Any]:
    data = base64.b64encode(render(sample_spec("eur"))).decode()
    return {
        "document": {
            "media_type": "application/pdf",
            "filename": "document.pdf",
            "data_base64": data,
        }
    }


AGENTS = [
    pytest.param(invoice_reader, "invoice.extract", _invoice_input, id="invoice-reader"),
    pytest.param(ticket_triage, "ticket.classify", lambda: TICKET_INPUT, id="ticket-triage"),
    pytest.param(report_writer, "report.render", lambda: REPORT_INPUT, id="report-writer"),
]


@pytest.mark.parametrize(("module", "capability", "make_input"), AGENTS)
def test_answers_and_identity_in_process(module: Any, capability: str, make_input: Any) -> None:
    headers = {
        "Holon-Request-Id": "8f7d8c1e-4e0b-4f53-9a53-2f1f0d6c9a11",
        "Holon-Capability": capability,
        "Holon-Max-Cost-Usd": "0.05",
        "Holon-Deadline-Ms": "20000",
    }
    output_of(post_asgi(module.app, invoke(capability, make_input()), headers=headers), capability)
    identity = get_asgi(module.app, "/.well-known/holon-agent")
    assert identity.status_code == 200
    assert loads(identity.content) == {
        "id": module.IDENTITY.id,
        "version": module.IDENTITY.version,
        "capabilities": [capability],
    }


@pytest.mark.parametrize(("module", "capability", "make_input"), AGENTS)
def test_answers_and_identity_over_a_real_socket(
    module: Any, capability: str, make_input: Any
) -> None:
    with serve(module.create()) as base_url, httpx.Client(base_url=base_url, timeout=30) as client:
        response = client.post("/", json=invoke(capability, make_input()))
        output_of(response, capability)
        identity = client.get("/.well-known/holon-agent").json()
        assert identity["id"] == module.IDENTITY.id
        assert identity["version"] == module.IDENTITY.version
        # a bad request over the wire is a 400 with the error shape, not a dropped connection
        error_of(
            client.post("/", content=b"{not json", headers={"content-type": "application/json"}),
            400,
        )


BAD_REQUESTS = [
    pytest.param(b"{not json", "bad_request", id="not-json"),
    pytest.param(b"[1, 2]", "bad_request", id="not-an-object"),
    pytest.param(b'{"input": {}}', "bad_request", id="no-capability"),
    pytest.param(b'{"capability": 7, "input": {}}', "bad_request", id="capability-not-a-string"),
    pytest.param(b'{"capability": "CAP"}', "bad_request", id="no-input"),
    pytest.param(b'{"capability": "CAP", "input": {}, "extra": 1}', "bad_request", id="extra-key"),
    pytest.param(
        b'{"capability": "summarize.text", "input": {}}',
        "unsupported_capability",
        id="wrong-capability",
    ),
    pytest.param(b'{"capability": "CAP", "input": NaN}', "bad_request", id="nan"),
    pytest.param(
        b'{"capability": "CAP", "input": "a string"}',
        "input_schema_violation",
        id="input-not-object",
    ),
    pytest.param(
        b'{"capability": "CAP", "input": {"unexpected": true}}',
        "input_schema_violation",
        id="schema-violation",
    ),
    pytest.param(b"\xff\xfe\x00garbage", "bad_request", id="not-utf8"),
    pytest.param(b"[" * 5000 + b"]" * 5000, "bad_request", id="deeply-nested"),
]


@pytest.mark.parametrize(("module", "capability", "make_input"), AGENTS)
@pytest.mark.parametrize(("raw", "code"), BAD_REQUESTS)
def test_bad_requests_are_400_with_the_error_shape(
    module: Any, capability: str, make_input: Any, raw: bytes, code: str
) -> None:
    response = post_asgi(module.app, None, raw=raw.replace(b"CAP", capability.encode()))
    error = error_of(response, 400)
    assert error["code"] == code


@pytest.mark.parametrize(("module", "capability", "make_input"), AGENTS)
def test_wrong_capability_names_the_served_ones(
    module: Any, capability: str, make_input: Any
) -> None:
    other = "ticket.classify" if capability != "ticket.classify" else "invoice.extract"
    error = error_of(post_asgi(module.app, invoke(other, make_input())), 400)
    assert error["code"] == "unsupported_capability"
    assert error["details"]["capabilities"] == [capability]


@pytest.mark.parametrize(("module", "capability", "make_input"), AGENTS)
def test_capability_header_must_agree_with_the_body(
    module: Any, capability: str, make_input: Any
) -> None:
    response = post_asgi(
        module.app, invoke(capability, make_input()), headers={"Holon-Capability": "other.thing"}
    )
    assert error_of(response, 400)["code"] == "bad_request"


@pytest.mark.parametrize("deadline", ["soon", "-5", "", "99999999999999999999"])
def test_odd_deadline_headers_are_ignored(deadline: str) -> None:
    response = post_asgi(
        ticket_triage.app,
        invoke("ticket.classify", TICKET_INPUT),
        headers={"Holon-Deadline-Ms": deadline},
    )
    output_of(response, "ticket.classify")


def test_schema_violation_names_the_path() -> None:
    bad = {"subject": "Hi", "body": "Help", "channel": "fax"}
    error = error_of(post_asgi(ticket_triage.app, invoke("ticket.classify", bad)), 400)
    assert error["details"]["path"] == "$.channel"
    assert "fax" in error["message"]


def test_an_oversized_body_is_413_without_reading_it_all() -> None:
    raw = b'{"capability": "ticket.classify", "input": {"subject": "' + b"x" * (17 << 20) + b'"}}'
    error = error_of(post_asgi(ticket_triage.app, None, raw=raw), 413)
    assert error["code"] == "payload_too_large"


@pytest.mark.parametrize(
    ("method", "path", "status"),
    [("GET", "/", 405), ("POST", "/.well-known/holon-agent", 405), ("GET", "/nowhere", 404)],
)
def test_other_routes_answer_json_errors(method: str, path: str, status: int) -> None:
    import asyncio

    async def go() -> httpx.Response:
        transport = httpx.ASGITransport(app=ticket_triage.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://agent.test") as client:
            return await client.request(method, path)

    error_of(asyncio.run(go()), status)


def test_an_agent_bug_is_a_json_500_and_logged(caplog: pytest.LogCaptureFixture) -> None:
    from examples.agents._protocol import AgentIdentity, create_app

    def broken(value: Any) -> Any:
        raise ZeroDivisionError("a bug")

    app = create_app(AgentIdentity("acme/broken", "0.1.0"), {"ticket.classify": broken})
    response = post_asgi(app, invoke("ticket.classify", TICKET_INPUT))
    assert error_of(response, 500)["code"] == "internal"
    assert "ZeroDivisionError" in caplog.text

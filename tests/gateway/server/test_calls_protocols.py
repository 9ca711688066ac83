"""Through a real gateway, an MCP or OpenAI-compatible agent cannot tell an eval call from a
live one: the message that carries the call is the same, byte for byte, but for its ids.

The counterpart of test_calls.py's `holon-http` test, for the other protocols: the eval
runs on the gateway's workers, the live call comes from a caller under a mandate, and
both go through the one executor.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from evals.suites import install_suite
from records import Store
from tests.agents.test_wire import Seen, own_ids, protocol_server
from tests.evals.suites._make import case, make_suite
from tests.gateway.server._gateway import mandate, running_gateway

pytestmark = pytest.mark.slow

CALLS = {"openai-chat": b"/chat/completions", "mcp": b'"method":"tools/call"'}


def _calls(seen: list[Seen], protocol: str) -> list[Seen]:
    marker = CALLS[protocol]
    return [s for s in seen if marker in (s[0].encode() if protocol == "openai-chat" else s[2])]


def _masked(call: Seen) -> Seen:
    path, headers, body = call
    request_id = dict(headers)[b"holon-request-id"].decode()
    return path, own_ids(headers, request_id), body.replace(request_id.encode(), b"<id>")


@pytest.mark.parametrize("protocol", ["openai-chat", "mcp"])
def test_an_eval_call_and_a_live_call_are_the_same_message(
    store: Store, tmp_path: Path, protocol: str
) -> None:
    the_case = case("p0", "Refund please", "billing")
    install_suite(
        store, make_suite(tmp_path, public=[the_case], holdout=[{**the_case, "id": "h0"}])
    )
    with protocol_server(protocol) as (agent, seen):
        store.agents.register(agent.to_json())
        store.agents.set_secret(agent.id, "s3cret-value")
        store.mandates.grant(mandate(max_cost_per_call_usd="0.03", timeout_s=9))
        with running_gateway(store, tmp_path / "home") as gw:
            gw.evaluate(agent.id)
            evaluated = _calls(seen(), protocol)
            live = gw.call(
                "POST",
                f"/v1/agents/{agent.id}/invoke",
                "caller:finance-bot",
                json={"capability": "ticket.classify", "input": the_case["input"]},
            )
            assert live.status_code == 200, live.text
            assert live.json()["output"] == {"label": "billing"}
            called = _calls(seen(), protocol)[len(evaluated) :]
    assert len(evaluated) == 2 and len(called) == 1  # the public case, its holdout twin
    assert _masked(called[0]) == _masked(evaluated[0])
    received = {k.decode(): v.decode() for k, v in called[0][1]}
    assert received["authorization"] == "Bearer s3cret-value"
    assert "holon-max-cost-usd" not in received  # neither the mandate's cap nor the suite's

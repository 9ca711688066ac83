"""The A2A front door with the official a2a-sdk client: signed cards carrying the agent's
certificate, SendMessage as the live call under the caller's mandates (ledger, budget,
rate limit, deny reasons as over /invoke), tasks polled from the store and kept from
other callers, and hostile JSON-RPC answered, never a 5xx."""

from __future__ import annotations

import asyncio
import base64
import time
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest
import rfc8785
from a2a.client import ClientConfig, create_client
from a2a.types import GetTaskRequest, SendMessageRequest, Task, TaskState
from google.protobuf import json_format
from joserfc import jws
from joserfc.errors import BadSignatureError
from joserfc.jwk import KeySet

from records import Store
from tests.gateway.server._agent import Recording, serving_recorder
from tests.gateway.server._doors import (
    CALLER,
    INPUT,
    one_call_an_hour_gateway,
    two_call_gateway,
)
from tests.gateway.server._gateway import (
    Gateway,
    install_tiny,
    mandate,
    register_triage,
    running_gateway,
)

pytestmark = pytest.mark.slow

ROUTED = "/v1/capabilities/ticket.classify"
DIRECT = "/v1/agents/acme/priced"
EXTENSION = "https://holon.dev/a2a/extensions/certificate/v1"


@pytest.fixture
def gw(store: Store, tmp_path: Path) -> Iterator[Gateway]:
    with two_call_gateway(store, tmp_path) as gateway:
        yield gateway


def _message(data: Any, **configuration: Any) -> SendMessageRequest:
    request: dict[str, Any] = {
        "message": {"messageId": "m-1", "role": "ROLE_USER", "parts": [{"data": data}]}
    }
    if configuration:
        request["configuration"] = configuration
    return json_format.ParseDict(request, SendMessageRequest())


async def _send(
    gw: Gateway, door: str, requests: list[SendMessageRequest], role: str = CALLER
) -> tuple[Any, list[Task]]:
    """Each request sent with the SDK's client (the card resolved from the door's URL)."""
    headers = {"Authorization": f"Bearer {gw.token(role)}"}
    async with httpx.AsyncClient(headers=headers, timeout=30) as http:
        client = await create_client(
            gw.url + door, client_config=ClientConfig(httpx_client=http, streaming=False)
        )
        tasks: list[Task] = []
        for request in requests:
            async for response in client.send_message(request):
                tasks.append(response.task)
        return client, tasks


def _data(task: Task) -> dict[str, Any]:
    return dict(json_format.MessageToDict(task.artifacts[0].parts[0].data))


def _error(task: Task) -> dict[str, Any]:
    parts = json_format.MessageToDict(task.status.message)["parts"]
    return dict(parts[1]["data"]["error"])


def _rpc(gw: Gateway, door: str, body: Any, role: str | None = CALLER) -> httpx.Response:
    path = door + "/a2a"
    if role is not None:
        gw.token(role)  # made on first use
    if isinstance(body, bytes):
        headers = {"Content-Type": "application/json"}
        return gw.call("POST", path, role, content=body, headers=headers)
    return gw.call("POST", path, role, json=body)


def test_send_message_is_the_routed_live_call(gw: Gateway) -> None:
    _, tasks = asyncio.run(_send(gw, ROUTED, [_message(INPUT)] * 3))
    first, second, third = tasks
    assert first.status.state == TaskState.TASK_STATE_COMPLETED
    assert _data(first)["label"] == "billing"
    holon = json_format.MessageToDict(first.metadata)["holon"]
    assert holon["agent"] == "acme/priced" and Decimal(holon["cost_usd"]) == Decimal("0.004")
    assert second.status.state == TaskState.TASK_STATE_COMPLETED
    # Two calls at a 0.005 cap fill the 0.01 budget: the third is refused as over /invoke.
    assert third.status.state == TaskState.TASK_STATE_REJECTED
    assert _error(third)["code"] == "budget_exhausted"
    rows = gw.call("GET", "/v1/ledger", CALLER).json()["items"]
    assert sorted((r["decision"], r["status"]) for r in rows) == [
        ("allow", "settled"),
        ("allow", "settled"),
        ("deny", "denied"),
    ]
    # A task answered at once is written just after its answer: GetTask finds it.
    assert _polled(gw, first.id)["artifacts"][0]["parts"][0]["data"]["label"] == "billing"
    assert _polled(gw, third.id)["status"]["state"] == "TASK_STATE_REJECTED"


def _polled(gw: Gateway, task_id: str, role: str = CALLER) -> dict[str, Any]:
    """GetTask until the task is there and no longer working."""
    get = {"jsonrpc": "2.0", "id": 2, "method": "GetTask", "params": {"id": task_id}}
    deadline = time.monotonic() + 30
    while True:
        answer = _rpc(gw, ROUTED, get, role=role).json()
        result = answer.get("result")
        done = result is not None and result["status"]["state"] != "TASK_STATE_WORKING"
        if done or time.monotonic() > deadline:
            assert result is not None, answer
            return dict(result)
        time.sleep(0.05)


def test_a_caller_without_a_mandate_is_denied_as_over_invoke(gw: Gateway) -> None:
    _, (task,) = asyncio.run(_send(gw, ROUTED, [_message(INPUT)], role="caller:stranger"))
    over_http = gw.call(
        "POST", ROUTED + "/invoke", "caller:stranger", json={"input": INPUT}
    ).json()["error"]
    assert task.status.state == TaskState.TASK_STATE_REJECTED
    assert _error(task)["code"] == over_http["code"] == "no_mandate"
    direct = {"capability": "ticket.classify", "input": INPUT}
    _, (task,) = asyncio.run(_send(gw, DIRECT, [_message(direct)], role="caller:stranger"))
    assert _error(task)["code"] == "no_mandate"
    rows = gw.call("GET", "/v1/ledger", "caller:stranger").json()["items"]
    assert [r["decision"] for r in rows] == ["deny", "deny", "deny"]


def test_an_agents_door_takes_capability_and_input(gw: Gateway) -> None:
    direct = {"capability": "ticket.classify", "input": INPUT}
    _, (task,) = asyncio.run(_send(gw, DIRECT, [_message(direct)]))
    assert task.status.state == TaskState.TASK_STATE_COMPLETED, task
    assert _data(task)["label"] == "billing"
    bad = _rpc(gw, DIRECT, _raw_send(INPUT)).json()["error"]
    assert bad["code"] == -32602 and bad["data"]["details"]["path"] == "$.params.message.parts[0]"


def test_a_polled_task_is_its_callers_alone(gw: Gateway) -> None:
    client, (working,) = asyncio.run(_send(gw, ROUTED, [_message(INPUT, returnImmediately=True)]))
    assert working.status.state in (
        TaskState.TASK_STATE_WORKING,
        TaskState.TASK_STATE_COMPLETED,
    )
    get = {"jsonrpc": "2.0", "id": 2, "method": "GetTask", "params": {"id": working.id}}
    polled = _polled(gw, working.id)
    assert polled["status"]["state"] == "TASK_STATE_COMPLETED"
    assert polled["artifacts"][0]["parts"][0]["data"]["label"] == "billing"

    # The SDK's GetTask reads the same task.
    async def sdk_get() -> Task:
        headers = {"Authorization": f"Bearer {gw.token(CALLER)}"}
        async with httpx.AsyncClient(headers=headers, timeout=30) as http:
            sdk = await create_client(
                gw.url + ROUTED, client_config=ClientConfig(httpx_client=http, streaming=False)
            )
            return await sdk.get_task(GetTaskRequest(id=working.id))

    assert asyncio.run(sdk_get()).status.state == TaskState.TASK_STATE_COMPLETED
    # Another caller asking for it gets what a task that does not exist gets.
    theirs = _rpc(gw, ROUTED, get, role="caller:stranger").json()["error"]
    missing = {**get, "params": {"id": "00000000-0000-0000-0000-000000000000"}}
    nothing = _rpc(gw, ROUTED, missing, role="caller:stranger").json()["error"]
    assert theirs["code"] == nothing["code"] == -32001
    assert theirs["message"] == nothing["message"]
    cancel = _rpc(gw, ROUTED, {**get, "method": "CancelTask"}).json()["error"]
    assert cancel["code"] == -32002


# The store's keys are published with alg EdDSA (docs/certificates.md), which joserfc
# warns of since RFC 9864 named the fully specified Ed25519: the same signature.
@pytest.mark.filterwarnings("ignore:EdDSA is deprecated")
def test_cards_are_signed_by_the_gateway(gw: Gateway) -> None:
    keys = KeySet.import_key_set(gw.call("GET", "/.well-known/jwks.json").json())
    for door in (ROUTED, DIRECT):
        card = gw.call("GET", door + "/.well-known/agent-card.json", CALLER).json()
        (interface,) = card["supportedInterfaces"]
        assert interface == {
            "url": gw.url + door + "/a2a",
            "protocolBinding": "JSONRPC",
            "protocolVersion": "1.0",
        }
        (signature,) = card["signatures"]
        unsigned = {k: v for k, v in card.items() if k != "signatures"}
        payload = base64.urlsafe_b64encode(rfc8785.dumps(unsigned)).rstrip(b"=").decode()
        compact = f"{signature['protected']}.{payload}.{signature['signature']}"
        verified = jws.deserialize_compact(compact, keys, algorithms=["EdDSA"])
        assert verified.headers()["alg"] == "EdDSA"
        # A card changed after signing no longer verifies.
        tampered = {**unsigned, "name": "evil"}
        bad = base64.urlsafe_b64encode(rfc8785.dumps(tampered)).rstrip(b"=").decode()
        with pytest.raises(BadSignatureError):
            jws.deserialize_compact(
                f"{signature['protected']}.{bad}.{signature['signature']}",
                keys,
                algorithms=["EdDSA"],
            )
        (extension,) = card["capabilities"]["extensions"]
        assert extension["uri"] == EXTENSION
        (certified,) = extension["params"]["certificates"]
        # No eval yet: no certificate, and the reason why.
        assert certified == {
            "agent": "acme/priced",
            "agent_version": "1.1.0",
            "certificate": None,
            "reason": "not_found",
        }
    assert gw.call("GET", ROUTED + "/.well-known/agent-card.json").status_code == 401
    missing = gw.call("GET", "/v1/agents/acme/none/.well-known/agent-card.json", CALLER)
    assert missing.status_code == 404


def test_the_card_carries_the_agents_certificate(store: Store, tmp_path: Path) -> None:
    install_tiny(store, tmp_path)
    register_triage(store)
    with running_gateway(
        store, tmp_path / "home", {"HOLON_PUBLIC_URL": "https://gw.example/"}
    ) as gw:
        gw.evaluate("acme/ticket-triage")
        certificate = gw.call("GET", "/v1/records/acme/ticket-triage/certificate", CALLER)
        assert certificate.status_code == 200, certificate.text
        card = gw.call(
            "GET", "/v1/agents/acme/ticket-triage/.well-known/agent-card.json", CALLER
        ).json()
    (certified,) = card["capabilities"]["extensions"][0]["params"]["certificates"]
    assert certified["certificate"] == certificate.json()
    # The interface is the gateway's public URL, not the Host a request named.
    assert card["supportedInterfaces"][0]["url"] == (
        "https://gw.example/v1/agents/acme/ticket-triage/a2a"
    )


def _raw_send(data: Any, **extra: Any) -> dict[str, Any]:
    message = {"messageId": "m", "role": "ROLE_USER", "parts": [{"data": data}], **extra}
    return {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": message}}


@pytest.mark.parametrize(
    ("body", "code"),
    [
        (b"{not json", -32700),
        (b"[]", -32600),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "SendMessage"}', -32602),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": 1}}', -32602),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {}}', -32601),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage", "params": {}}', -32602),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "SubscribeToTask", "params": {}}', -32004),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": 5}}', -32602),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "\\u202eksaTteG"}', -32601),
        (
            b'{"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "a\\u0000b"}}',
            -32001,
        ),
        (
            b'{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": '
            b'{"parts": [{"data": {}}], "contextId": "c\\u0000"}}}',
            -32602,
        ),
        (
            b'{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": '
            b'{"parts": [{"data": {}}]}, "configuration": ["returnImmediately"]}}',
            -32602,
        ),
        (
            b'{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": '
            b'{"parts": [{"data": {}}]}, '
            b'"configuration": {"acceptedOutputModes": ["text/plain"]}}}',
            -32005,
        ),
    ],
)
def test_hostile_requests_are_json_rpc_errors(gw: Gateway, body: bytes, code: int) -> None:
    answer = _rpc(gw, ROUTED, body)
    assert answer.status_code == 200, answer.text
    error = answer.json()["error"]
    assert error["code"] == code, error
    assert "\u202e" not in answer.text
    assert len(answer.content) < 4096


@pytest.mark.parametrize(
    ("message", "code"),
    [
        ({"parts": [{"text": "Refund please"}]}, -32005),
        ({"parts": [{"url": "http://x.example/a"}]}, -32005),
        ({"parts": []}, -32602),
        ({"parts": [{"data": INPUT}, {"data": INPUT}]}, -32602),
        ({"parts": "data"}, -32602),
        ({"parts": [{"data": INPUT}], "taskId": "t-1"}, -32004),
    ],
)
def test_a_message_holon_does_not_take_is_refused(
    gw: Gateway, message: dict[str, Any], code: int
) -> None:
    body = _raw_send(INPUT)
    body["params"]["message"] = {"messageId": "m", "role": "ROLE_USER", **message}
    error = _rpc(gw, ROUTED, body).json()["error"]
    assert error["code"] == code, error
    assert set(error["data"]) == {"code", "message", "details"}


def test_wrong_types_and_huge_inputs_are_the_callers_errors(gw: Gateway) -> None:
    # An input of the wrong type is the live call's invalid_input: a rejected task.
    answer = _rpc(gw, ROUTED, _raw_send({"subject": 5, "body": ["x"]})).json()["result"]
    assert answer["task"]["status"]["state"] == "TASK_STATE_REJECTED"
    assert answer["task"]["metadata"]["holon"]["error"]["code"] == "invalid_input"
    # Past 8 MiB the body is the gateway's 413, before any JSON-RPC.
    huge = _raw_send({"subject": "x", "body": "y" * (9 << 20)})
    assert _rpc(gw, ROUTED, huge).status_code == 413
    assert _rpc(gw, ROUTED, _raw_send(INPUT), role=None).status_code == 401
    assert _rpc(gw, ROUTED, _raw_send(INPUT), role="org:acme").status_code == 403


def test_an_agent_cannot_tell_the_doors_apart(store: Store, tmp_path: Path) -> None:
    """The same call through /invoke, MCP and A2A reaches the agent as the same request:
    one live-call path, not three (only the request id and the trace differ)."""
    install_tiny(store, tmp_path)
    recording = Recording()
    with serving_recorder(store, "acme/rec", recording):
        store.mandates.grant(mandate())
        with running_gateway(store, tmp_path / "home", eval_workers=0) as gw:
            invoked = gw.call("POST", ROUTED + "/invoke", CALLER, json={"input": INPUT}).json()
            call = {"name": "ticket.classify", "arguments": INPUT}
            rpc = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call}
            headers = {"Accept": "application/json, text/event-stream"}
            over_mcp = gw.call("POST", "/mcp", CALLER, json=rpc, headers=headers).json()
            over_a2a = _rpc(gw, ROUTED, _raw_send(INPUT)).json()["result"]["task"]
    ids = [
        invoked["request_id"],
        over_mcp["result"]["_meta"]["holon"]["request_id"],
        over_a2a["metadata"]["holon"]["request_id"],
    ]
    assert len(recording.calls) == 3 and len(set(ids)) == 3

    def seen(index: int) -> tuple[list[tuple[bytes, bytes]], bytes]:
        raw_headers, body = recording.calls[index]
        request_id = ids[index].encode()
        kept = [
            (name, value.replace(request_id, b"<id>"))
            for name, value in raw_headers
            if name.lower() != b"traceparent"
        ]
        return kept, body.replace(request_id, b"<id>")

    assert seen(0) == seen(1) == seen(2)


def test_any_gateway_on_the_store_answers_get_task(store: Store, tmp_path: Path) -> None:
    """Two gateways on one store (as the processes of one deployment): a task one took
    at once is polled from the other."""
    with two_call_gateway(store, tmp_path) as first:
        with running_gateway(store, tmp_path / "home2", eval_workers=0) as second:
            second.tokens[CALLER] = first.token(CALLER)
            body = _raw_send(INPUT)
            body["params"]["configuration"] = {"returnImmediately": True}
            task = _rpc(first, ROUTED, body).json()["result"]["task"]
            polled = _polled(second, task["id"])
    assert polled["status"]["state"] == "TASK_STATE_COMPLETED"
    assert polled["id"] == task["id"]


def test_rate_limit_bites_over_a2a(store: Store, tmp_path: Path) -> None:
    with one_call_an_hour_gateway(store, tmp_path) as gw:
        _, (ok, limited) = asyncio.run(_send(gw, ROUTED, [_message(INPUT)] * 2))
    assert ok.status.state == TaskState.TASK_STATE_COMPLETED
    assert limited.status.state == TaskState.TASK_STATE_REJECTED
    error = _error(limited)
    assert error["code"] == "rate_limited" and error["details"]["retry_after_s"] >= 1


def test_a_caller_s_detached_calls_are_bounded(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A `returnImmediately` call holds no request of the caller's: past the bound of such
    calls running for one caller in a process, the next is rejected as rate_limited (no
    ledger row, no agent call) until one finishes; another caller is not held up."""
    from gateway.server import _a2a

    monkeypatch.setattr(_a2a, "MAX_DETACHED_PER_CALLER", 2)
    install_tiny(store, tmp_path)
    recording = Recording(behaviour="slow")  # 3 s an answer
    with serving_recorder(store, "acme/slow", recording):
        store.mandates.grant(mandate())
        store.mandates.grant(mandate(id="other-tickets", holder="other-bot"))
        with running_gateway(store, tmp_path / "home", eval_workers=0) as gw:
            body = _raw_send(INPUT, messageId="m")
            body["params"]["configuration"] = {"returnImmediately": True}
            states = []
            for _ in range(3):
                task = _rpc(gw, ROUTED, body).json()["result"]["task"]
                states.append((task["id"], task["status"]["state"]))
            assert [s for _, s in states] == ["TASK_STATE_WORKING"] * 2 + ["TASK_STATE_REJECTED"]
            refused = _rpc(gw, ROUTED, body).json()["result"]["task"]
            assert refused["metadata"]["holon"]["error"]["code"] == "rate_limited"
            other = _rpc(gw, ROUTED, body, role="caller:other-bot").json()["result"]["task"]
            assert other["status"]["state"] == "TASK_STATE_WORKING"
            assert _polled(gw, states[0][0])["status"]["state"] == "TASK_STATE_COMPLETED"
            _polled(gw, states[1][0])
            again = _rpc(gw, ROUTED, body).json()["result"]["task"]
            assert again["status"]["state"] == "TASK_STATE_WORKING"
            _polled(gw, again["id"])
            _polled(gw, other["id"], role="caller:other-bot")
            rows = gw.call("GET", "/v1/ledger", "operator").json()["items"]
    # The two refused sends wrote nothing and called no agent.
    assert len(rows) == len(recording.calls) == 4

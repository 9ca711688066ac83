"""Streamed chat completions (`stream: true`) with the official `openai` SDK, in-process.

A stream is answered only once the call is allowed and reserved (a refusal is
the SDK's status error, as unstreamed); the role chunk comes first, keep-alive
comments while the agent works, and the output only once it kept the contract;
a broken answer ends in an error event (the SDK's `APIError`), never `stop`;
each call is one ledger row, settled even when the caller leaves mid-stream.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from a2a.client import ClientConfig, create_client
from a2a.types import SendMessageRequest
from google.protobuf import json_format
from starlette.applications import Starlette

from gateway.server import _streams
from records import Store
from tests._servers import serve
from tests.agents.openai_server import Recorder
from tests.agents.openai_stream_server import stream_app
from tests.agents.test_openai_chat import chat_manifest
from tests.gateway.server._adder import CAPABILITY, adder_mandate, install_adder_suite
from tests.gateway.server._gateway import install_tiny, mandate, running_gateway
from tests.gateway.server._in_process import (
    BASE_URL,
    gateway_app,
    in_process_app,
    lifespan,
    raw_stream,
    sync_client,
    token,
)
from tests.gateway.server._stream_agent import AGENT, BROKEN, SLOW, stream_agent_manifest

ASK = [{"role": "user", "content": json.dumps({"a": 1, "b": 2})}]
CHAT = "/v1/chat/completions"


@pytest.fixture
def app(sqlite_store: Store, tmp_path: Path) -> Starlette:
    return in_process_app(sqlite_store, tmp_path)


@pytest.fixture
def client(app: Starlette) -> Iterator[httpx.Client]:
    with sync_client(app) as http:
        yield http


def _openai(http: httpx.Client, key: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=BASE_URL + "/v1", api_key=key, http_client=http, max_retries=0)


def _ask(a: int, b: int = 2) -> list[dict[str, Any]]:
    return [{"role": "user", "content": json.dumps({"a": a, "b": b})}]


def _rows(http: httpx.Client, key: str) -> list[dict[str, Any]]:
    answer = http.get("/v1/ledger", headers={"Authorization": f"Bearer {key}"})
    return list(answer.json()["items"])


def test_a_streamed_completion_with_the_sync_client(
    client: httpx.Client, sqlite_store: Store
) -> None:
    key = token(sqlite_store)
    sdk = _openai(client, key)
    chunks = list(
        sdk.chat.completions.create(
            model=CAPABILITY, messages=ASK, stream=True, stream_options={"include_usage": True}
        )
    )
    first, *middle, stop, usage = chunks
    assert first.choices[0].delta.role == "assistant" and first.choices[0].delta.content == ""
    assert first.model == AGENT and first.object == "chat.completion.chunk"
    assert json.loads("".join(c.choices[0].delta.content or "" for c in middle)) == {"sum": 3}
    assert all(c.choices[0].finish_reason is None and c.usage is None for c in middle)
    assert stop.choices[0].finish_reason == "stop" and stop.choices[0].delta.content is None
    holon = (stop.model_extra or {})["holon"]
    assert holon["agent"] == AGENT and holon["mandate"] == "finance-adding"
    assert usage.choices == [] and usage.usage is not None
    assert (usage.usage.prompt_tokens, usage.usage.completion_tokens) == (7, 3)
    assert len({c.id for c in chunks}) == 1 and first.id == f"chatcmpl-{holon['request_id']}"
    # Without include_usage: no usage chunk; and the same call unstreamed.
    plain = list(sdk.chat.completions.create(model=AGENT, messages=_ask(2), stream=True))
    assert plain[-1].choices[0].finish_reason == "stop" and plain[-1].usage is None
    whole = sdk.chat.completions.create(model=AGENT, messages=_ask(2))
    assert whole.choices[0].message.content == "".join(
        c.choices[0].delta.content or "" for c in plain
    )
    rows = _rows(client, key)
    assert [(r["decision"], r["status"], r["outcome"]) for r in rows] == [
        ("allow", "settled", "ok")
    ] * 3


def test_the_wire_is_openais_server_sent_events(client: httpx.Client, sqlite_store: Store) -> None:
    headers = {"Authorization": f"Bearer {token(sqlite_store)}"}
    body = {"model": CAPABILITY, "messages": ASK, "stream": True}
    answer = client.post("/v1/chat/completions", json=body, headers=headers)
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("text/event-stream")
    assert answer.headers["cache-control"] == "no-cache"
    events = answer.text.split("\n\n")
    assert events[-2:] == ["data: [DONE]", ""]
    chunks = [json.loads(event.removeprefix("data: ")) for event in events[:-2]]
    assert all(event.startswith("data: {") for event in events[:-2])
    assert [c["choices"][0]["delta"] for c in chunks] == [
        {"role": "assistant", "content": "", "refusal": None},
        {"content": '{"sum":3}'},
        {},
    ]
    assert set(chunks[0]) == {
        "id",
        "object",
        "created",
        "model",
        "system_fingerprint",
        "choices",
    }
    assert chunks[-1]["choices"][0] == {
        "index": 0,
        "delta": {},
        "logprobs": None,
        "finish_reason": "stop",
    }


def test_a_streamed_answer_breaking_the_output_schema_never_ends_as_stop(
    client: httpx.Client, sqlite_store: Store
) -> None:
    key = token(sqlite_store)
    seen: list[Any] = []
    with pytest.raises(openai.APIError) as broken:
        for chunk in _openai(client, key).chat.completions.create(
            model=CAPABILITY, messages=_ask(BROKEN), stream=True
        ):
            seen.append(chunk)
    assert not isinstance(broken.value, openai.APIStatusError)  # raised mid-stream
    body = broken.value.body
    assert isinstance(body, dict) and body["code"] == "invalid_output"
    assert body["type"] == "server_error"
    assert [c.choices[0].delta.role for c in seen] == ["assistant"]  # the role chunk only
    assert all(c.choices[0].finish_reason is None for c in seen)
    [row] = _rows(client, key)
    assert (row["outcome"], row["cost_usd"]) == ("invalid_output", "0")


def test_a_caller_without_a_mandate_is_refused_before_any_stream(
    client: httpx.Client, sqlite_store: Store
) -> None:
    key = token(sqlite_store, "caller:stranger")
    with pytest.raises(openai.PermissionDeniedError) as refused:
        _openai(client, key).chat.completions.create(model=CAPABILITY, messages=ASK, stream=True)
    assert isinstance(refused.value.body, dict) and refused.value.body["code"] == "no_mandate"
    bad = _openai(client, token(sqlite_store))
    with pytest.raises(openai.BadRequestError) as invalid:
        bad.chat.completions.create(
            model=CAPABILITY, messages=[{"role": "user", "content": "{}"}], stream=True
        )
    assert isinstance(invalid.value.body, dict) and invalid.value.body["code"] == "invalid_input"
    for options in ({"include_usage": "yes"}, {"other": True}):
        with pytest.raises(openai.BadRequestError) as refused_options:
            bad.chat.completions.create(
                model=CAPABILITY, messages=ASK, stream=True, stream_options=options
            )
        assert isinstance(refused_options.value.body, dict)
        assert refused_options.value.body["param"] == "stream_options"
    with pytest.raises(openai.BadRequestError):  # stream_options without a stream
        bad.chat.completions.create(
            model=CAPABILITY, messages=ASK, stream_options={"include_usage": True}
        )
    assert [r["decision"] for r in _rows(client, key)] == ["deny"]


@pytest.mark.anyio
async def test_a_streamed_completion_with_the_async_client(
    app: Starlette, sqlite_store: Store
) -> None:
    key = token(sqlite_store)
    async with lifespan(app) as http:
        sdk = openai.AsyncOpenAI(
            base_url=BASE_URL + "/v1", api_key=key, http_client=http, max_retries=0
        )
        stream = await sdk.chat.completions.create(model=CAPABILITY, messages=ASK, stream=True)
        text = "".join([c.choices[0].delta.content or "" async for c in stream])
        assert json.loads(text) == {"sum": 3}
        whole = await sdk.chat.completions.create(model=CAPABILITY, messages=ASK)
        assert whole.choices[0].message.content == text
        with pytest.raises(openai.APIError) as broken:
            async for _chunk in await sdk.chat.completions.create(
                model=CAPABILITY, messages=_ask(BROKEN), stream=True
            ):
                pass
        assert isinstance(broken.value.body, dict)
        assert broken.value.body["code"] == "invalid_output"
        rows = (await http.get("/v1/ledger", headers={"Authorization": f"Bearer {key}"})).json()
    assert [r["outcome"] for r in rows["items"]] == ["invalid_output", "ok", "ok"]


@pytest.mark.anyio
async def test_keep_alive_comments_while_the_agent_works(
    app: Starlette, sqlite_store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_streams, "KEEPALIVE_S", 0.05)
    key = token(sqlite_store)
    async with lifespan(app):
        body = {"model": CAPABILITY, "messages": _ask(SLOW, 4), "stream": True}
        received = await raw_stream(app, key, CHAT, body)
    parts = [part for _at, part in received]
    assert parts[0].startswith(b'data: {"id":') and b'"role":"assistant"' in parts[0]
    # The role chunk goes before the agent is called; the answer after its 0.4 s.
    assert received[-1][0] - received[0][0] >= 0.35
    beats = [part for part in parts if part == _streams.KEEPALIVE]
    assert len(beats) >= 3
    assert parts[-1].endswith(b"data: [DONE]\n\n") and b'"finish_reason":"stop"' in parts[-1]


@pytest.mark.anyio
async def test_a_caller_leaving_mid_stream_leaves_the_call_settled(
    app: Starlette, sqlite_store: Store
) -> None:
    key = token(sqlite_store)
    async with lifespan(app) as http:
        body = {"model": CAPABILITY, "messages": _ask(SLOW, 3), "stream": True}
        received = await raw_stream(app, key, CHAT, body, leave_after=1)
        assert len(received) == 1  # the role chunk, then it went away
        for _ in range(100):  # the call goes on without it
            rows = (
                await http.get("/v1/ledger", headers={"Authorization": f"Bearer {key}"})
            ).json()["items"]
            if rows and rows[0]["status"] == "settled":
                break
            await asyncio.sleep(0.05)
    assert [(r["status"], r["outcome"], r["cost_usd"]) for r in rows] == [
        ("settled", "ok", "0.001")
    ]


@pytest.mark.slow
def test_a_stream_through_a_real_server(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Over a socket (SQLite and PostgreSQL): the role chunk arrives while the agent works,
    the answer once it has, and the call is one ledger row; the A2A door's stream too, its
    keep-alives skipped by the a2a-sdk's client."""
    monkeypatch.setattr(_streams, "KEEPALIVE_S", 0.05)
    install_adder_suite(store, tmp_path)
    store.agents.register(stream_agent_manifest())
    store.mandates.grant(adder_mandate())
    with running_gateway(store, tmp_path / "home", eval_workers=0) as gw:
        sdk = openai.OpenAI(
            base_url=gw.url + "/v1", api_key=gw.token("caller:finance-bot"), max_retries=0
        )
        sdk.chat.completions.create(model=AGENT, messages=ASK)  # the SDK's first call is slow
        began = time.monotonic()
        arrived: list[tuple[float, Any]] = []
        for chunk in sdk.chat.completions.create(
            model=CAPABILITY, messages=_ask(SLOW, 10), stream=True
        ):
            arrived.append((time.monotonic() - began, chunk))
        (first_at, first), *_rest, (_stop_at, stop) = arrived
        assert first.choices[0].delta.role == "assistant"
        assert arrived[1][0] - first_at >= 0.9  # the role chunk came before the agent's 1 s
        assert stop.choices[0].finish_reason == "stop"
        with pytest.raises(openai.APIError):
            list(sdk.chat.completions.create(model=AGENT, messages=_ask(BROKEN), stream=True))
        kinds = asyncio.run(_a2a_kinds(gw.url, gw.token("caller:finance-bot")))
        assert kinds == ["task", "artifact_update", "status_update"]
        rows = gw.call("GET", "/v1/ledger", "caller:finance-bot").json()["items"]
    assert [r["outcome"] for r in rows] == ["ok", "invalid_output", "ok", "ok"]


async def _a2a_kinds(url: str, key: str) -> list[str]:
    """The kinds of events of one slow SendStreamingMessage, with the a2a-sdk's client."""
    request = {
        "message": {
            "messageId": "m-1",
            "role": "ROLE_USER",
            "parts": [{"data": {"a": SLOW, "b": 3}}],
        }
    }
    async with httpx.AsyncClient(headers={"Authorization": f"Bearer {key}"}) as http:
        client = await create_client(
            f"{url}/v1/capabilities/{CAPABILITY}", client_config=ClientConfig(httpx_client=http)
        )
        message = json_format.ParseDict(request, SendMessageRequest())
        return [str(e.WhichOneof("payload")) async for e in client.send_message(message)]


def test_a_streaming_agent_breaking_the_schema_in_its_last_delta_never_ends_as_stop(
    sqlite_store: Store, tmp_path: Path
) -> None:
    """An openai-chat agent that streams (tests/agents/openai_stream_server.py): its answer
    is assembled and held to the contract whole, so a last delta that breaks the output
    schema is the caller's error event, as any broken answer is."""
    install_tiny(sqlite_store, tmp_path)
    sqlite_store.mandates.grant(mandate())
    key = token(sqlite_store)
    with serve(stream_app(Recorder())) as agent_url:
        for mode in ("honest", "schema-last"):
            manifest = chat_manifest(f"{agent_url}/{mode}/v1", stream=True)
            sqlite_store.agents.register({**manifest, "id": f"acme/chat-{mode}"})
        with sync_client(gateway_app(sqlite_store, tmp_path)) as http:
            sdk = _openai(http, key)
            ask = [{"role": "user", "content": json.dumps({"subject": "Refund please"})}]
            honest = list(
                sdk.chat.completions.create(model="acme/chat-honest", messages=ask, stream=True)
            )
            text = "".join(c.choices[0].delta.content or "" for c in honest)
            assert json.loads(text) == {"label": "billing"}
            assert honest[-1].choices[0].finish_reason == "stop"
            seen: list[Any] = []
            with pytest.raises(openai.APIError) as broken:
                for chunk in sdk.chat.completions.create(
                    model="acme/chat-schema-last", messages=ask, stream=True
                ):
                    seen.append(chunk)
            assert isinstance(broken.value.body, dict)
            assert broken.value.body["code"] == "invalid_output"
            assert all(c.choices[0].finish_reason is None for c in seen)
            assert all(not c.choices[0].delta.content for c in seen)  # no piece of it
            rows = _rows(http, key)
    assert sorted(r["outcome"] for r in rows) == ["invalid_output", "ok"]

"""The OpenAI front door (/v1/models, /v1/chat/completions) with the official `openai` SDK,
sync and async, through a real gateway and a real adder agent: a completion is the live
call under the caller's mandates (one ledger row each, budget, rate limit, contract), its
errors are the SDK's exception classes, and a caller learns nothing /invoke would not
tell it."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import openai
import pytest
from hypothesis import given
from hypothesis import strategies as st

from records import Store
from tests._hypothesis import derandomized
from tests.gateway.server._adder import (
    AGENT,
    CAPABILITY,
    MONTHLY,
    Adder,
    adder_gateway,
    adder_mandate,
    install_adder_suite,
    serving_adder,
)
from tests.gateway.server._doors import CALLER, INPUT, two_call_gateway
from tests.gateway.server._gateway import Gateway, running_gateway

pytestmark = pytest.mark.slow

STRANGER = "caller:stranger"


@pytest.fixture
def adder() -> Adder:
    return Adder()


@pytest.fixture
def gw(store: Store, tmp_path: Path, adder: Adder) -> Iterator[Gateway]:
    """math.add by acme/adder; finance-bot's mandate allows it, with room for many calls."""
    with adder_gateway(store, tmp_path, adder, MONTHLY, eval_workers=0) as gateway:
        yield gateway


def _client(gw: Gateway, role: str = CALLER) -> openai.OpenAI:
    # No retries: each call the SDK makes is a live call of its own (a ledger row).
    return openai.OpenAI(base_url=gw.url + "/v1", api_key=gw.token(role), max_retries=0)


def _ask(value: Any) -> list[dict[str, Any]]:
    return [{"role": "user", "content": json.dumps(value)}]


def _rows(gw: Gateway, role: str = CALLER) -> list[dict[str, Any]]:
    return list(gw.call("GET", "/v1/ledger", role).json()["items"])


def test_models_list_and_a_completion_with_the_sync_client(gw: Gateway) -> None:
    client = _client(gw)
    models = {model.id: model for model in client.models.list()}
    assert list(models) == [CAPABILITY, AGENT]
    assert models[CAPABILITY].object == "model" and models[CAPABILITY].owned_by == "holon"
    assert models[CAPABILITY].model_extra == {
        "holon": {"kind": "capability", "suite": "adder@1", "agents": 1}
    }
    assert models[AGENT].owned_by == "acme"
    extra = models[AGENT].model_extra or {}
    assert extra["holon"]["capability"] == CAPABILITY and "eval_score" in extra["holon"]

    routed = client.chat.completions.create(model=CAPABILITY, messages=_ask({"a": 1, "b": 2}))
    assert json.loads(routed.choices[0].message.content or "") == {"sum": 3}
    assert routed.choices[0].finish_reason == "stop"
    assert routed.model == AGENT and routed.object == "chat.completion"
    assert routed.usage is None  # the adder reports no tokens
    holon = (routed.model_extra or {})["holon"]
    assert holon["mandate"] == "finance-adding" and holon["routing"]["candidates"] == 1
    direct = client.chat.completions.create(model=AGENT, messages=_ask({"a": 5, "b": 2.5}))
    assert json.loads(direct.choices[0].message.content or "") == {"sum": 7.5}
    assert "routing" not in (direct.model_extra or {})["holon"]
    rows = _rows(gw)
    assert len(rows) == 2  # one ledger row per call
    assert {r["request_id"] for r in rows} == {
        holon["request_id"],
        (direct.model_extra or {})["holon"]["request_id"],
    }


def test_the_async_client_and_an_agent_named_with_its_capability(gw: Gateway) -> None:
    async def run() -> tuple[Any, Any, list[Any]]:
        client = openai.AsyncOpenAI(
            base_url=gw.url + "/v1", api_key=gw.token(CALLER), max_retries=0
        )
        async with client:
            listed = [model.id async for model in client.models.list()]
            one, two = await asyncio.gather(
                client.chat.completions.create(model=CAPABILITY, messages=_ask({"a": 1, "b": 1})),
                client.chat.completions.create(
                    model=f"{AGENT}:{CAPABILITY}", messages=_ask({"a": 2, "b": 2})
                ),
            )
        return one, two, listed

    one, two, listed = asyncio.run(run())
    assert listed == [CAPABILITY, AGENT]
    assert json.loads(one.choices[0].message.content) == {"sum": 2}
    assert json.loads(two.choices[0].message.content) == {"sum": 4}
    assert len(_rows(gw)) == 2


def test_a_caller_without_a_mandate_sees_nothing_and_is_refused(gw: Gateway) -> None:
    client = _client(gw, STRANGER)
    assert list(client.models.list()) == []
    with pytest.raises(openai.PermissionDeniedError) as refused:
        client.chat.completions.create(model=CAPABILITY, messages=_ask({"a": 1, "b": 2}))
    error = refused.value.body
    assert isinstance(error, dict) and error["code"] == "no_mandate"
    assert error["type"] == "permission_error" and error["param"] is None
    assert refused.value.response.headers["x-should-retry"] == "false"
    over_http = gw.call(
        "POST", f"/v1/capabilities/{CAPABILITY}/invoke", STRANGER, json={"input": {"a": 1, "b": 2}}
    ).json()["error"]
    assert over_http["code"] == error["code"]
    assert [r["decision"] for r in _rows(gw, STRANGER)] == ["deny", "deny"]


def test_tokens_and_roles_are_refused_in_openais_shape(gw: Gateway) -> None:
    bad = openai.OpenAI(base_url=gw.url + "/v1", api_key="not-a-token", max_retries=0)
    with pytest.raises(openai.AuthenticationError) as unknown:
        bad.models.list()
    assert isinstance(unknown.value.body, dict) and unknown.value.body["code"] == "unauthorized"
    with pytest.raises(openai.PermissionDeniedError) as role:
        _client(gw, "operator").chat.completions.create(model=CAPABILITY, messages=_ask({}))
    assert isinstance(role.value.body, dict) and role.value.body["code"] == "forbidden"


def test_the_budget_is_a_402_the_sdk_raises_as_its_status_error(
    store: Store, tmp_path: Path
) -> None:
    with two_call_gateway(store, tmp_path) as gw:
        client = _client(gw)
        for _ in range(2):
            done = client.chat.completions.create(model="ticket.classify", messages=_ask(INPUT))
            assert json.loads(done.choices[0].message.content or "")["label"] == "billing"
            assert Decimal((done.model_extra or {})["holon"]["cost_usd"]) == Decimal("0.004")
        with pytest.raises(openai.APIStatusError) as spent:
            client.chat.completions.create(model="ticket.classify", messages=_ask(INPUT))
        assert spent.value.status_code == 402
        assert type(spent.value) is openai.APIStatusError  # no subclass of its own
        body = spent.value.body
        assert isinstance(body, dict) and body["code"] == "budget_exhausted"
        assert body["type"] == "insufficient_quota" and "mandates" in body["details"]
        assert spent.value.response.headers["x-should-retry"] == "false"
        assert len(_rows(gw)) == 3


def test_a_rate_limit_is_the_sdks_rate_limit_error(store: Store, tmp_path: Path) -> None:
    hourly = {"rate_limit": {"calls": 1, "per": "hour"}}
    with adder_gateway(store, tmp_path, Adder(), hourly, eval_workers=0) as gw:
        client = _client(gw)
        client.chat.completions.create(model=CAPABILITY, messages=_ask({"a": 1, "b": 2}))
        with pytest.raises(openai.RateLimitError) as limited:
            client.chat.completions.create(model=CAPABILITY, messages=_ask({"a": 1, "b": 2}))
        assert int(limited.value.response.headers["retry-after"]) >= 1
        body = limited.value.body
        assert isinstance(body, dict) and body["code"] == "rate_limited"
        assert len(_rows(gw)) == 2


def test_an_input_outside_the_schema_names_the_message(gw: Gateway, adder: Adder) -> None:
    client = _client(gw)
    messages = [{"role": "system", "content": "be brief"}, *_ask({"a": "one", "b": 2})]
    with pytest.raises(openai.BadRequestError) as bad:
        client.chat.completions.create(model=CAPABILITY, messages=messages)  # type: ignore[arg-type]
    body = bad.value.body
    assert isinstance(body, dict) and body["code"] == "invalid_input"
    assert body["param"] == "messages[1].content"
    assert body["details"]["path"] == "$.input.a"  # as over /invoke
    with pytest.raises(openai.BadRequestError) as prose:
        client.chat.completions.create(
            model=CAPABILITY, messages=[{"role": "user", "content": "add 1 and 2"}]
        )
    body = prose.value.body
    assert isinstance(body, dict) and body["code"] == "usage"
    assert body["param"] == "messages[0].content" and "JSON" in body["message"]
    assert adder.requests == []
    # The contract's refusal is a ledger row (as over /invoke); prose never reached it.
    assert [r["decision"] for r in _rows(gw)] == ["deny"]


def test_an_unknown_model_is_not_found(gw: Gateway) -> None:
    client = _client(gw)
    for model in ("no.such.capability", "acme/no-such-agent"):
        with pytest.raises(openai.NotFoundError) as missing:
            client.chat.completions.create(model=model, messages=_ask({"a": 1, "b": 2}))
        assert isinstance(missing.value.body, dict) and missing.value.body["code"] == "not_found"


def test_an_agent_breaking_the_output_schema_is_a_502(gw: Gateway, adder: Adder) -> None:
    adder.answer = lambda _input: {"sum": "three"}
    with pytest.raises(openai.InternalServerError) as broken:
        _client(gw).chat.completions.create(model=CAPABILITY, messages=_ask({"a": 1, "b": 2}))
    assert broken.value.status_code == 502
    body = broken.value.body
    assert isinstance(body, dict) and body["code"] == "invalid_output"
    assert body["type"] == "server_error"
    assert broken.value.response.headers["x-should-retry"] == "false"
    assert [(r["decision"], r["outcome"]) for r in _rows(gw)] == [("allow", "invalid_output")]


REFUSED: list[tuple[str, dict[str, Any]]] = [
    ("n", {"n": 2}),
    ("tools", {"tools": [{"type": "function", "function": {"name": "f"}}]}),
    ("tool_choice", {"tool_choice": "none"}),
    ("logprobs", {"logprobs": True}),
    ("top_logprobs", {"top_logprobs": 2}),
    ("functions", {"functions": [{"name": "f"}]}),
    ("function_call", {"function_call": "none"}),
    ("stop", {"stop": ["}"]}),
    ("logit_bias", {"logit_bias": {"50256": -100}}),
    ("response_format", {"response_format": {"type": "json_schema", "json_schema": {"name": "x"}}}),
    ("parallel_tool_calls", {"parallel_tool_calls": False}),
    ("stream_options", {"stream_options": {"include_usage": True}}),  # without a stream
]


def test_each_parameter_the_door_cannot_honour_is_refused_by_name(
    gw: Gateway, adder: Adder
) -> None:
    client = _client(gw)
    for name, extra in REFUSED:
        with pytest.raises(openai.BadRequestError) as refused:
            client.chat.completions.create(
                model=CAPABILITY,
                messages=_ask({"a": 1, "b": 2}),
                **extra,
            )
        body = refused.value.body
        assert isinstance(body, dict), name
        assert (body["code"], body["param"]) == ("unsupported_parameter", name), body
        assert body["message"].startswith(f"{name}: ")
    status, body = _post(gw, {"model": CAPABILITY, "messages": _ask({"a": 1}), "stream": "yes"})
    assert (status, body["error"]["param"]) == (400, "stream")
    # Accepted (and not passed on): the sampling hints, a label, the defaults.
    done = client.chat.completions.create(
        model=CAPABILITY,
        messages=_ask({"a": 1, "b": 2}),
        temperature=0.2,
        top_p=1,
        user="u-1",
        seed=7,
        max_tokens=50,
        max_completion_tokens=50,
        n=1,
        stream=False,
        logprobs=False,
        response_format={"type": "json_object"},
    )
    assert json.loads(done.choices[0].message.content or "") == {"sum": 3}
    # null is "not given", as at OpenAI (LiteLLM sends stop: null).
    status, body = _post(
        gw,
        {"model": CAPABILITY, "messages": _ask({"a": 2, "b": 2}), "stop": None, "tools": None},
    )
    assert status == 200, body
    assert adder.requests == [
        {"capability": CAPABILITY, "input": {"a": 1, "b": 2}},
        {"capability": CAPABILITY, "input": {"a": 2, "b": 2}},
    ]
    assert len(_rows(gw)) == 2  # no refusal reached the ledger


def _post(gw: Gateway, body: Any, role: str = CALLER, **kw: Any) -> Any:
    response = gw.call("POST", "/v1/chat/completions", role, json=body, **kw)
    return response.status_code, response.json()


def test_messages_the_door_takes_and_refuses(gw: Gateway) -> None:
    parts = [{"type": "text", "text": '{"a": 4, '}, {"type": "text", "text": '"b": 5}'}]
    status, body = _post(
        gw, {"model": CAPABILITY, "messages": [{"role": "user", "content": parts}]}
    )
    assert status == 200 and json.loads(body["choices"][0]["message"]["content"]) == {"sum": 9}
    image = {"type": "image_url", "image_url": {"url": "http://x/y.png"}}
    cases: list[tuple[Any, str, str]] = [
        ([{"role": "user", "content": [image]}], "messages[0].content[0]", "image_url"),
        ([{"role": "assistant", "content": "{}"}], "messages[0].role", "the user's"),
        ([], "messages", "non-empty"),
        ([{"role": "user", "content": None}], "messages[0].content", "JSON text"),
        ([{"role": "user"}, "text"], "messages[1]", "role"),
        ([{"role": "robot", "content": "{}"}], "messages[0]", "role"),
        ([{"role": "user", "content": "[" * 70 + "]" * 70}], "messages[0].content", "deeper"),
        ([{"role": "user", "content": '{"a": 1e99999}'}], "messages[0].content", "$.a"),
    ]
    for messages, param, said in cases:
        status, body = _post(gw, {"model": CAPABILITY, "messages": messages})
        assert status == 400, (messages, body)
        assert body["error"]["param"] == param and said in body["error"]["message"], body
    status, body = _post(gw, {"messages": _ask({"a": 1, "b": 2})})
    assert (status, body["error"]["param"]) == (400, "model")
    for model in (5, "", "acme/adder:", ":math.add", "adder:math.add"):
        status, body = _post(gw, {"model": model, "messages": _ask({})})
        assert (status, body["error"]["param"]) == (400, "model"), model
    # A body nested past the bound, and one over 8 MiB: refused before anything is read.
    deep: Any = "x"
    for _ in range(80):
        deep = [deep]
    status, body = _post(gw, {"model": CAPABILITY, "messages": deep})
    assert status == 400 and body["error"]["code"] == "usage"
    huge = b'{"model": "math.add", "messages": "' + b"x" * (9 * 1024 * 1024) + b'"}'
    response = gw.call("POST", "/v1/chat/completions", CALLER, content=huge)
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "payload_too_large"
    status, body = _post(gw, [1, 2])
    assert status == 400 and body["error"]["type"] == "invalid_request_error"
    assert len(_rows(gw)) == 1  # only the completion that went through


def test_probing_other_orgs_learns_nothing_invoke_would_not_say(
    store: Store, tmp_path: Path
) -> None:
    """finance-bot may call acme/adder alone: another org's agent for the same capability,
    a capability of another org's and an unknown one look, through /v1/models and the
    door's errors, exactly as they do over /invoke."""
    install_adder_suite(store, tmp_path)
    store.mandates.grant(adder_mandate(agents=[AGENT]))
    with (
        serving_adder(store, Adder()),
        serving_adder(store, Adder(), agent_id="other/adder"),
        two_call_gateway(store, tmp_path / "tiny") as gw,  # other's ticket.classify, too
    ):
        listed = [model.id for model in _client(gw).models.list()]
        # finance-tickets (ticket.classify) is the tiny gateway's; the adder's mandate
        # allows acme/adder alone: other/adder is not listed.
        assert listed == [CAPABILITY, "ticket.classify", AGENT, "acme/priced"]
        stranger = [model.id for model in _client(gw, STRANGER).models.list()]
        assert stranger == []
        for model, path in (
            ("other/adder", "/v1/agents/other/adder/invoke"),
            ("other/adder:math.add", "/v1/agents/other/adder/invoke"),
            ("ticket.classify", "/v1/capabilities/ticket.classify/invoke"),
            ("no.such", "/v1/capabilities/no.such/invoke"),
            ("other/nobody", "/v1/agents/other/nobody/invoke"),
        ):
            door = gw.call(
                "POST",
                "/v1/chat/completions",
                STRANGER,
                json={"model": model, "messages": _ask({"a": 1, "b": 2})},
            )
            capability = CAPABILITY if "adder" in model else model
            invoke = gw.call(
                "POST",
                path,
                STRANGER,
                json={"capability": capability, "input": {"a": 1, "b": 2}},
            )
            assert door.status_code == invoke.status_code, model
            said, told = door.json()["error"], invoke.json()["error"]
            assert said["code"] == told["code"], model
            assert said["details"] == told["details"] or said["details"].keys() == (
                told["details"].keys()
            ), model


SCALARS = (  # JSON: no NaN or infinity (the client refuses to send them)
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
)
ANY_JSON = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner),
    max_leaves=12,
)


def test_any_json_gets_a_completion_or_an_openai_error_never_a_5xx(
    store: Store, tmp_path: Path
) -> None:
    message = st.fixed_dictionaries(
        {"role": st.sampled_from(["user", "system", "assistant", "robot"]) | ANY_JSON},
        optional={
            "content": ANY_JSON
            | st.just(json.dumps(INPUT))
            | st.lists(st.fixed_dictionaries({"type": st.just("text"), "text": st.text()}))
        },
    )
    body = (
        st.fixed_dictionaries(
            {},
            optional={
                "model": st.sampled_from(["ticket.classify", "acme/priced", "acme/priced:x"])
                | ANY_JSON,
                "messages": st.lists(message, max_size=3) | ANY_JSON,
                "stream": ANY_JSON,
                "n": ANY_JSON,
                "temperature": ANY_JSON,
            },
        )
        | ANY_JSON
    )

    with two_call_gateway(store, tmp_path) as gw:

        @derandomized(120)
        @given(sent=body)
        def check(sent: Any) -> None:
            answer = gw.call("POST", "/v1/chat/completions", CALLER, json=sent)
            assert answer.status_code < 500, (sent, answer.text)
            if answer.headers["content-type"].startswith("text/event-stream"):
                last = answer.text.split("\n\n")[-2]  # a stream: [DONE], or an error event
                assert last == "data: [DONE]" or '"error":' in last, answer.text
                return
            found = answer.json()
            if answer.status_code == 200:
                assert found["object"] == "chat.completion"
                return
            error = found["error"]
            assert set(error) == {"message", "type", "code", "param", "details"}, found
            assert error["param"] is None or isinstance(error["param"], str)

        check()


def test_an_agent_claiming_several_capabilities_is_named_with_one(
    store: Store, tmp_path: Path
) -> None:
    install_adder_suite(store, tmp_path)
    store.mandates.grant(adder_mandate())
    multi = "acme/multi"
    with (
        serving_adder(store, Adder(), agent_id=multi, capabilities=[CAPABILITY, "math.mul"]),
        running_gateway(store, tmp_path / "home", eval_workers=0) as gw,
    ):
        client = _client(gw)
        assert [model.id for model in client.models.list()] == [
            CAPABILITY,
            f"{multi}:{CAPABILITY}",
        ]
        with pytest.raises(openai.BadRequestError) as ambiguous:
            client.chat.completions.create(model=multi, messages=_ask({"a": 1, "b": 2}))
        body = ambiguous.value.body
        assert isinstance(body, dict) and body["code"] == "ambiguous_model"
        assert body["details"]["models"] == [f"{multi}:{CAPABILITY}", f"{multi}:math.mul"]
        done = client.chat.completions.create(
            model=f"{multi}:{CAPABILITY}", messages=_ask({"a": 1, "b": 2})
        )
        assert json.loads(done.choices[0].message.content or "") == {"sum": 3}
        assert done.model == multi
        with pytest.raises(openai.UnprocessableEntityError) as unclaimed:
            client.chat.completions.create(
                model=f"{multi}:math.div", messages=_ask({"a": 1, "b": 2})
            )
        assert isinstance(unclaimed.value.body, dict)
        assert unclaimed.value.body["code"] == "capability_not_claimed"
        assert len(_rows(gw)) == 1

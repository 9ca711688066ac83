"""The openai-chat adapter against a loopback OpenAI-compatible server (openai_server.py)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pytest

from agents import CallLimits, Executor, Manifest, manifest_from_dict
from agents._template import render_template
from schema import load_schema
from schema.errors import AgentProtocolError, ManifestError
from tests._servers import serve
from tests.agents.openai_server import ALIAS, MODEL, Recorder, openai_app, serve_recorded

TICKET = {"subject": "Refund please", "body": "I was charged twice. {{input}}"}
LIMITS = CallLimits(timeout_s=10)


@pytest.fixture(scope="module")
def _server() -> Iterator[tuple[str, Recorder]]:
    with serve_recorded(openai_app) as served:
        yield served


def chat_manifest(endpoint: str, **chat: Any) -> dict[str, Any]:
    section: dict[str, Any] = {
        "model": MODEL,
        "system": "You label support tickets. Answer with JSON only.",
        "template": "Subject: {{input.subject}}\nBody: {{input.body}}",
        **chat,
    }
    pricing = section.pop(
        "pricing", {"per_1m_input_tokens_usd": "2.5", "per_1m_output_tokens_usd": "10"}
    )
    manifest = {
        "schema_version": 1,
        "id": "acme/chat-triage",
        "version": "1.0.0",
        "protocol": "openai-chat",
        "endpoint": endpoint,
        "capabilities": ["ticket.classify"],
        "openai_chat": section,
    }
    if pricing is not None:
        manifest["pricing"] = pricing
    return manifest


def chat_agent(url: str, mode: str, **chat: Any) -> Manifest:
    return manifest_from_dict(chat_manifest(f"{url}/{mode}/v1", **chat))


pytestmark = pytest.mark.anyio


async def test_an_honest_completion(executor: Executor, server: tuple[str, Recorder]) -> None:
    url, recorder = server
    agent = chat_agent(url, "honest")
    outcome = await executor.execute(
        agent, "ticket.classify", TICKET, LIMITS, secret="sk-test", request_id="rid-chat"
    )
    assert outcome.ok, outcome
    assert outcome.output == {"label": "billing"}
    assert outcome.usage is not None
    assert (outcome.usage.input_tokens, outcome.usage.output_tokens) == (1000, 200)
    # 1000 / 1e6 * 2.5 + 200 / 1e6 * 10, exactly.
    assert (outcome.cost_usd, outcome.cost_source) == (Decimal("0.0045"), "priced")
    [seen] = recorder.requests
    assert seen["path"] == "/honest/v1/chat/completions"
    headers = {k.decode(): v.decode() for k, v in seen["headers"]}
    assert headers["authorization"] == "Bearer sk-test"
    assert headers["holon-request-id"] == "rid-chat"
    schema = {
        k: v
        for k, v in load_schema("capabilities/ticket.classify.output").items()
        if k not in ("$schema", "$id", "examples")
    }
    assert json.loads(seen["body"]) == {
        "model": MODEL,
        "messages": [
            {"role": "system", "content": "You label support tickets. Answer with JSON only."},
            # Each value as JSON, in one pass: the caller's "{{input}}" stays text.
            {
                "role": "user",
                "content": 'Subject: "Refund please"\nBody: "I was charged twice. {{input}}"',
            },
        ],
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "ticket_classify", "schema": schema, "strict": False},
        },
        "stream": False,
    }


async def test_the_cost_cap_bites_on_real_tokens(
    executor: Executor, server: tuple[str, Recorder]
) -> None:
    url, _ = server
    agent = chat_agent(url, "honest")
    over = await executor.execute(
        agent, "ticket.classify", TICKET, CallLimits(max_cost_usd=Decimal("0.0044"))
    )
    assert over.code == "cost_exceeded" and over.output is None
    assert over.cost_usd == Decimal("0.0045")
    exact = await executor.execute(
        agent, "ticket.classify", TICKET, CallLimits(max_cost_usd=Decimal("0.0045"))
    )
    assert exact.ok


async def test_model_identity_exact_and_alias(
    executor: Executor, server: tuple[str, Recorder]
) -> None:
    url, _ = server
    wrong = await executor.execute(
        chat_agent(url, "wrong-model"), "ticket.classify", TICKET, LIMITS
    )
    assert wrong.code == "invalid_response"
    assert wrong.error is not None and "answered by model 'gpt-4o-mini'" in wrong.error
    exact = await executor.execute(chat_agent(url, "alias"), "ticket.classify", TICKET, LIMITS)
    assert exact.code == "invalid_response" and ALIAS in (exact.error or "")
    aliased = chat_agent(url, "alias", model_identity="alias", model_aliases=[ALIAS])
    assert (await executor.execute(aliased, "ticket.classify", TICKET, LIMITS)).ok
    # An alias set does not let any model through.
    other = chat_agent(url, "wrong-model", model_identity="alias", model_aliases=[ALIAS])
    assert (await executor.execute(other, "ticket.classify", TICKET, LIMITS)).code == (
        "invalid_response"
    )


async def test_missing_usage_cannot_be_priced(
    executor: Executor, server: tuple[str, Recorder]
) -> None:
    url, _ = server
    priced = await executor.execute(chat_agent(url, "no-usage"), "ticket.classify", TICKET, LIMITS)
    assert priced.code == "invalid_response"
    assert "no usage" in (priced.error or "")
    unpriced = chat_agent(url, "no-usage", pricing=None)
    outcome = await executor.execute(unpriced, "ticket.classify", TICKET, LIMITS)
    assert outcome.ok and outcome.usage is None and outcome.cost_source == "none"


@pytest.mark.parametrize(
    ("mode", "code", "detail"),
    [
        ("not-json", "invalid_response", "message content: body is not JSON"),
        ("length", "invalid_response", "finish_reason 'length'"),
        ("refusal", "agent_error", "the model refused: I can't help with that."),
        ("huge", "invalid_response", "body larger than 1048576 bytes"),
        ("deep", "invalid_response", "message content: JSON nested deeper than 64 levels"),
        ("big-number", "invalid_response", "message content: body at $.label"),
        ("bad-usage", "invalid_response", "usage.prompt_tokens must be a non-negative integer"),
        ("no-choices", "invalid_response", "no choices[0].message"),
    ],
)
async def test_unacceptable_completions(
    executor: Executor, server: tuple[str, Recorder], mode: str, code: str, detail: str
) -> None:
    url, _ = server
    limits = CallLimits(timeout_s=10, max_response_bytes=1 << 20)
    outcome = await executor.execute(chat_agent(url, mode), "ticket.classify", TICKET, limits)
    assert outcome.code == code, outcome
    assert detail in (outcome.error or ""), outcome.error
    assert outcome.output is None


async def test_identity_is_the_served_model(
    executor: Executor, server: tuple[str, Recorder]
) -> None:
    url, recorder = server
    agent = chat_agent(url, "honest")
    identity = await executor.identify(agent, secret="sk-test")
    assert identity.compare(agent).mismatch is None
    assert recorder.requests[-1]["path"] == "/honest/v1/models"
    assert (b"authorization", b"Bearer sk-test") in recorder.requests[-1]["headers"]
    other = chat_agent(url, "wrong-model")
    check = (await executor.identify(other)).compare(other)
    assert check.mismatch is not None and "gpt-4o-mini" in check.mismatch


async def test_a_server_without_a_models_list_is_a_protocol_error(executor: Executor) -> None:
    with serve(openai_app(Recorder())) as url:
        agent = manifest_from_dict(chat_manifest(f"{url}/v1"))  # no mode: 404 everywhere
        with pytest.raises(AgentProtocolError, match="HTTP 404"):
            await executor.identify(agent, timeout_s=5)


def test_the_template_substitutes_json_values_only() -> None:
    value = {"a": {"b": [1, Decimal("2.50")]}, "s": 'x"}} {{input}}\n'}
    assert render_template("{{input.a.b}} {{ input.s }} {{input.no.such}}", value) == (
        '[1,2.50] "x\\"}} {{input}}\\n" null'
    )
    assert render_template("{{input}}", "{{input}}") == '"{{input}}"'
    # A path names keys of JSON objects, never attributes of Python objects.
    assert render_template("{{input.__class__}}", {"a": 1}) == "null"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"template": "{{input[0]}}"}, "unknown placeholder"),
        ({"template": "{{input.a|safe}}"}, "unknown placeholder"),
        ({"template": "{{ 7*7 }}"}, "unknown placeholder"),
        ({"template": "{{input}} {{secret}}"}, "unknown placeholder '{{secret}}'"),
        ({"model_aliases": ["x"]}, "only read with model_identity: alias"),
        ({"model_identity": "fuzzy"}, "model_identity"),
    ],
)
def test_bad_chat_sections_are_refused_with_their_path(
    change: dict[str, Any], message: str
) -> None:
    with pytest.raises(ManifestError, match="openai_chat") as info:
        manifest_from_dict(chat_manifest("http://h.example/v1", **change))
    assert message in str(info.value)


def test_protocol_and_section_must_agree() -> None:
    manifest = chat_manifest("http://h.example/v1")
    del manifest["openai_chat"]
    with pytest.raises(ManifestError, match="openai_chat"):
        manifest_from_dict(manifest)
    manifest = chat_manifest("http://h.example/v1")
    manifest["protocol"] = "holon-http"
    with pytest.raises(ManifestError, match="read only with protocol 'openai-chat'"):
        manifest_from_dict(manifest)
    both = chat_manifest("http://h.example/v1")
    both["pricing"] = {"per_1k_input_tokens_usd": "1", "per_1m_input_tokens_usd": "1"}
    with pytest.raises(ManifestError, match="per 1k or per 1m, not both"):
        manifest_from_dict(both)


def test_the_manifest_round_trips() -> None:
    manifest = chat_manifest(
        "http://h.example/v1",
        model_identity="alias",
        model_aliases=[ALIAS],
        strict=True,
        max_tokens=256,
        temperature=0,
    )
    parsed = manifest_from_dict(manifest)
    assert manifest_from_dict(parsed.to_json()) == parsed
    assert parsed.to_json()["openai_chat"]["model_aliases"] == [ALIAS]


def test_the_response_format_is_the_given_suites_output_schema() -> None:
    """The active suite's output schema (what the answer is graded on) wins over the shipped
    one; its document keys are left out, as the shipped schema's are."""
    from agents._openai import chat_request

    agent = chat_agent("http://a.example/v1", "honest", strict=True)
    suite_schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "x",
        "type": "object",
        "required": ["label", "why"],
        "properties": {"label": {"type": "string"}, "why": {"type": "string"}},
        "additionalProperties": False,
    }
    asked = json.loads(chat_request(agent, "ticket.classify", TICKET, suite_schema))
    assert asked["response_format"] == {
        "type": "json_schema",
        "json_schema": {
            "name": "ticket_classify",
            "schema": {k: v for k, v in suite_schema.items() if not k.startswith("$")},
            "strict": True,
        },
    }
    shipped = json.loads(chat_request(agent, "ticket.classify", TICKET))["response_format"]
    assert shipped["json_schema"]["schema"]["required"] == ["label", "priority", "product"]
    unknown = json.loads(chat_request(agent, "ticket.sort", TICKET))["response_format"]
    assert unknown == {"type": "json_object"}

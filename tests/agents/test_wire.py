"""The one request builder: exact headers; an agent cannot tell a live call from an eval call."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from decimal import Decimal

import pytest

from agents import AgentLimits, CallLimits, Executor, Manifest, build_request, manifest_from_dict
from schema.jsontext import dumps
from tests._servers import Tap, serve
from tests.agents.conftest import Faults, make_agent
from tests.agents.mcp_agents import mcp_agent
from tests.agents.openai_server import openai_app, serve_recorded
from tests.agents.test_mcp import mcp_manifest
from tests.agents.test_openai_chat import chat_manifest

TRACEPARENT = re.compile(r"00-[0-9a-f]{32}-[0-9a-f]{16}-0[01]")
INPUT = {"invoice": "INV-7", "amount": Decimal("1234.50"), "lines": [1, 2, 3], "note": "é✓"}


def test_build_request_headers_exactly() -> None:
    agent = make_agent(
        "https://agents.acme.example/invoice",
        limits=AgentLimits(max_cost_usd=Decimal("0.05"), timeout_s=Decimal(20)),
    )
    prepared = build_request(
        agent,
        "invoice.extract",
        INPUT,
        request_id="rid-1",
        secret="tok",
        traceparent="00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
    )
    assert prepared.method == "POST"
    assert prepared.url == "https://agents.acme.example/invoice"
    assert prepared.headers == {
        "Content-Type": "application/json",
        "User-Agent": "holon/0.1",
        "Holon-Request-Id": "rid-1",
        "Holon-Capability": "invoice.extract",
        "traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
        "Holon-Max-Cost-Usd": "0.05",
        "Holon-Deadline-Ms": "20000",
        "Authorization": "Bearer tok",
    }
    assert json.loads(prepared.body, parse_float=Decimal) == {
        "capability": "invoice.extract",
        "input": INPUT,
    }
    assert b"1234.50" in prepared.body  # Decimal-exact, as written


def test_undeclared_limits_and_no_secret_are_omitted() -> None:
    agent = make_agent("http://a.example/", limits=AgentLimits())
    headers = build_request(agent, "echo", {}, request_id="r", secret=None).headers
    assert set(headers) == {
        "Content-Type",
        "User-Agent",
        "Holon-Request-Id",
        "Holon-Capability",
        "traceparent",
    }
    # Without a trace context given, a fresh one: every call carries one.
    assert TRACEPARENT.fullmatch(headers["traceparent"]) and headers["traceparent"].endswith("-00")


def test_limits_headers_are_plain_numbers() -> None:
    agent = make_agent(
        "http://a.example/",
        limits=AgentLimits(max_cost_usd=Decimal("1E+1"), timeout_s=Decimal("2.5")),
    )
    headers = build_request(agent, "echo", {}, request_id="r", secret=None).headers
    assert headers["Holon-Max-Cost-Usd"] == "10"
    assert headers["Holon-Deadline-Ms"] == "2500"


@pytest.mark.parametrize(
    ("capability", "request_id", "secret", "traceparent"),
    [
        ("echo\r\nX-Injected: 1", "r", None, None),
        ("echo", "r\n", None, None),
        ("", "r", None, None),
        ("echo", "r", "tok\r\nX: y", None),
        ("echo", "r", None, "00-a\r\nX: y"),
    ],
)
def test_header_injection_is_a_caller_bug(
    capability: str, request_id: str, secret: str | None, traceparent: str | None
) -> None:
    agent = make_agent("http://a.example/")
    with pytest.raises(ValueError) as info:
        build_request(
            agent,
            capability,
            {},
            request_id=request_id,
            secret=secret,
            traceparent=traceparent,
        )
    if secret:
        assert secret not in str(info.value)  # the error never echoes a secret


def test_input_that_is_not_json_is_a_caller_bug() -> None:
    with pytest.raises((TypeError, ValueError)):
        build_request(make_agent("http://a.example/"), "echo", {1, 2}, request_id="r", secret=None)


# A live call: the mandate's cap and deadline, no retries.
LIVE = CallLimits(max_cost_usd=Decimal("0.02"), timeout_s=7)
# An eval call: the suite's cap, another deadline, infrastructure retries, other bounds.
EVALUATION = CallLimits(
    max_cost_usd=Decimal("0.50"),
    timeout_s=45,
    unreachable_retries=2,
    max_response_bytes=1 << 20,
    max_json_depth=32,
)


@pytest.mark.anyio
async def test_live_and_eval_calls_are_indistinguishable_on_the_wire(
    executor: Executor, faults: Faults
) -> None:
    agent = faults.agent("ok")
    first = await executor.execute(agent, "echo", INPUT, LIVE, secret="s3cret")
    second = await executor.execute(agent, "echo", INPUT, EVALUATION, secret="s3cret")
    assert first.ok and second.ok and first.request_id != second.request_id
    (_, live_headers, live_body), (_, eval_headers, eval_body) = faults.recorder.requests

    assert live_body == eval_body

    def per_call(headers: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
        # The request id and the trace context are each call's own.
        return [
            (k, v) for k, v in headers if k.lower() not in (b"holon-request-id", b"traceparent")
        ]

    assert per_call(live_headers) == per_call(eval_headers)
    assert [k for k, _ in live_headers] == [k for k, _ in eval_headers]  # same names, same order
    received = {k.decode().lower(): v.decode() for k, v in live_headers}
    evaluated = {k.decode().lower(): v.decode() for k, v in eval_headers}
    # Exactly these reached the agent: nothing added behind our back (no Accept-Encoding,
    # no client User-Agent, no cookies), and the agent's own limits, never the caps.
    assert set(received) == {
        "host",
        "content-length",
        "content-type",
        "user-agent",
        "holon-request-id",
        "holon-capability",
        "traceparent",
        "holon-max-cost-usd",
        "holon-deadline-ms",
        "authorization",
    }
    # One W3C traceparent each, of the same shape, from fresh traces (no context here).
    assert TRACEPARENT.fullmatch(received["traceparent"])
    assert TRACEPARENT.fullmatch(evaluated["traceparent"])
    assert received["traceparent"][:35] != evaluated["traceparent"][:35]
    assert received["traceparent"][-2:] == evaluated["traceparent"][-2:] == "00"
    assert received["holon-max-cost-usd"] == "0.05"
    assert received["holon-deadline-ms"] == "20000"
    assert received["holon-request-id"] == first.request_id
    assert received["authorization"] == "Bearer s3cret"
    assert received["user-agent"] == "holon/0.1"


@pytest.mark.anyio
async def test_the_secret_is_never_logged(
    executor: Executor, faults: Faults, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("DEBUG")
    for behaviour in ("ok", "error-500"):
        await executor.execute(
            faults.agent(behaviour), "echo", {"pii": "Jane Doe"}, CallLimits(), secret="s3cret"
        )
    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert "agent call acme/faulty@1.0.0 echo -> ok" in logged
    assert "-> agent_error (HTTP 500)" in logged
    assert "s3cret" not in logged and "Jane Doe" not in logged and "boom" not in logged


def test_an_agent_without_declared_limits_gets_the_default_deadline() -> None:
    agent = make_agent("http://a.example/", limits=AgentLimits())
    assert CallLimits().deadline_s(agent) == 30.0
    declared = make_agent("http://a.example/", limits=AgentLimits(timeout_s=Decimal(12)))
    assert CallLimits().deadline_s(declared) == 12.0
    assert CallLimits(timeout_s=3).deadline_s(declared) == 3.0


@pytest.mark.parametrize(
    ("endpoint", "expected"),
    [
        ("https://h.example/agent", "https://h.example/agent/.well-known/holon-agent"),
        ("https://h.example/agent/", "https://h.example/agent/.well-known/holon-agent"),
        ("https://h.example", "https://h.example/.well-known/holon-agent"),
        ("https://h.example:8443/a?k=1", "https://h.example:8443/a/.well-known/holon-agent?k=1"),
    ],
)
def test_well_known_paths_hang_off_the_endpoint(endpoint: str, expected: str) -> None:
    from agents._wire import endpoint_url

    assert endpoint_url(make_agent(endpoint), "/.well-known/holon-agent") == expected


def test_the_traceparent_comes_from_the_current_context() -> None:
    from opentelemetry import context, trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

    from agents._trace import current_traceparent

    fresh = {current_traceparent() for _ in range(100)}
    assert len(fresh) == 100 and all(TRACEPARENT.fullmatch(v) and v.endswith("-00") for v in fresh)

    # A caller's trace, nothing recorded (tracing off): its trace id, a parent id of our own.
    caller = SpanContext(0xABC, 0xDEF, is_remote=True, trace_flags=TraceFlags(1))
    token = context.attach(trace.set_span_in_context(NonRecordingSpan(caller)))
    try:
        continued = current_traceparent()
    finally:
        context.detach(token)
    assert continued.startswith(f"00-{0xABC:032x}-") and continued.endswith("-00")
    assert f"{0xDEF:016x}" not in continued

    # A recording span (tracing on): exactly its ids, sampled.
    tracer = TracerProvider().get_tracer("test")
    with tracer.start_as_current_span("call") as span:
        ids = span.get_span_context()
        assert current_traceparent() == f"00-{ids.trace_id:032x}-{ids.span_id:016x}-01"


def _masked(text: str) -> str:
    text = re.sub(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "<id>", text)
    return TRACEPARENT.sub("<traceparent>", text)


@pytest.mark.anyio
async def test_the_request_bytes_are_pinned(executor: Executor) -> None:
    """What goes on the wire, byte for byte: lower-case names in this order, Host first,
    Content-Length last, nothing added by the client (the bytes httpx's transport sent)."""
    from tests.agents.faults import raw_server

    with raw_server(["ok"]) as (url, log):
        agent = make_agent(f"{url}/a/b?q=1&r=%20x")
        assert (await executor.execute(agent, "echo", {"n": 1}, CallLimits(), secret="s3")).ok
        with pytest.raises(Exception, match="identity"):
            await executor.identify(agent, timeout_s=5)
    host = url.removeprefix("http://")
    assert [_masked(head.decode("latin-1")) for head in log.heads] == [
        "POST /a/b?q=1&r=%20x HTTP/1.1\r\n"
        f"host: {host}\r\n"
        "content-type: application/json\r\n"
        "user-agent: holon/0.1\r\n"
        "holon-request-id: <id>\r\n"
        "holon-capability: echo\r\n"
        "traceparent: <traceparent>\r\n"
        "holon-max-cost-usd: 0.05\r\n"
        "holon-deadline-ms: 20000\r\n"
        "authorization: Bearer s3\r\n"
        "content-length: 37\r\n\r\n",
        "GET /a/b/.well-known/holon-agent?q=1&r=%20x HTTP/1.1\r\n"
        f"host: {host}\r\n"
        "user-agent: holon/0.1\r\n"
        "accept: application/json\r\n\r\n",
    ]


@pytest.mark.anyio
async def test_an_in_process_app_gets_the_same_request(executor: Executor) -> None:
    """The scope and messages of an `asgi:` call: the same headers as on the wire."""
    from tests.agents import asgi_apps

    asgi_apps.SEEN.clear()
    agent = make_agent("asgi:tests.agents.asgi_apps:recording_app", protocol="asgi")
    outcome = await executor.execute(agent, "echo", {"n": 1}, CallLimits(), secret="s3")
    assert outcome.ok and outcome.output == 1
    [(scope, messages)] = asgi_apps.SEEN
    sent = dict(scope["headers"])
    request_id, traceparent = sent[b"holon-request-id"], sent[b"traceparent"]
    assert TRACEPARENT.fullmatch(traceparent.decode())
    body = b'{"capability":"echo","input":{"n":1}}'
    assert scope == {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "headers": [
            (b"host", b"localhost"),
            (b"content-type", b"application/json"),
            (b"user-agent", b"holon/0.1"),
            (b"holon-request-id", request_id),
            (b"holon-capability", b"echo"),
            (b"traceparent", traceparent),
            (b"holon-max-cost-usd", b"0.05"),
            (b"holon-deadline-ms", b"20000"),
            (b"authorization", b"Bearer s3"),
            (b"content-length", str(len(body)).encode()),
        ],
        "scheme": "http",
        "path": "/",
        "raw_path": b"/",
        "query_string": b"",
        "server": ("localhost", None),
        "client": ("127.0.0.1", 123),
        "root_path": "",
    }
    assert messages == [
        {"type": "http.request", "body": body, "more_body": True},
        {"type": "http.request", "body": b"", "more_body": False},
    ]


@contextmanager
def protocol_server(protocol: str) -> Iterator[tuple[Manifest, Callable[[], list[Seen]]]]:
    """A real server of `protocol` and what reached it: (path, headers in order, body)."""
    if protocol == "openai-chat":
        with serve_recorded(openai_app) as (url, recorder):
            agent = manifest_from_dict(chat_manifest(f"{url}/honest/v1"))
            yield agent, lambda: [(r["path"], r["headers"], r["body"]) for r in recorder.requests]
        return
    tap = Tap(mcp_agent().streamable_http_app())
    with serve(tap) as url:
        agent = manifest_from_dict(mcp_manifest(f"{url}/mcp"))
        yield agent, lambda: [(s["path"], s["raw_headers"], s["body"]) for s in tap.seen]


Seen = tuple[str, list[tuple[bytes, bytes]], bytes]


@pytest.mark.anyio
@pytest.mark.parametrize("protocol", ["openai-chat", "mcp"])
async def test_live_and_eval_calls_are_indistinguishable_in_every_protocol(protocol: str) -> None:
    """The wire identity of the other protocols: every message of a call, byte for byte,
    is the same for a live call and an eval call, but for each call's own ids."""
    ticket = {"subject": "Refund please", "body": "Charged twice. é✓", "n": Decimal("1234.50")}
    calls: list[list[Seen]] = []
    with protocol_server(protocol) as (agent, seen):
        for limits in (LIVE, EVALUATION):
            # A gateway and an eval run are separate processes: a fresh executor each.
            async with Executor() as executor:
                before = len(seen())
                outcome = await executor.execute(
                    agent, "ticket.classify", ticket, limits, secret="s3cret"
                )
                assert outcome.ok, outcome
            calls.append(
                [
                    (path, own_ids(headers, outcome.request_id), _own_id(body, outcome.request_id))
                    for path, headers, body in seen()[before:]
                ]
            )
    assert len(calls[0]) == (1 if protocol == "openai-chat" else 3)
    assert calls[0] == calls[1]
    names = [name for name, _ in calls[0][-1][1]]
    assert b"authorization" in names and b"holon-capability" in names
    assert b"holon-max-cost-usd" not in names  # no declared limits: neither cap is announced


def _own_id(text: bytes, request_id: str) -> bytes:
    return text.replace(request_id.encode(), b"<id>")


def own_ids(headers: list[tuple[bytes, bytes]], request_id: str) -> list[tuple[bytes, bytes]]:
    # The request id, the trace context and the server's session id are each call's own.
    own = (b"traceparent", b"mcp-session-id")
    return [(k, b"<own>" if k in own else _own_id(v, request_id)) for k, v in headers]


def test_an_answers_metadata_is_kept_bounded() -> None:
    from agents._wire import METADATA_LIMIT, read_metadata

    assert read_metadata({"output": 1}) is None
    assert read_metadata({"output": 1, "metadata": None}) is None
    assert read_metadata({"output": 1, "metadata": "any JSON"}) == "any JSON"
    small = {"model": "m-1", "trace": "https://t.example/1"}
    assert read_metadata({"output": 1, "metadata": small}) == small
    big = {"note": "é" * METADATA_LIMIT}  # 2 bytes a character in UTF-8
    kept = read_metadata({"output": 1, "metadata": big})
    assert isinstance(kept, dict)
    cut = kept["$truncated"]
    assert cut["bytes"] == len(dumps(big).encode()) and len(cut["head"]) == 512
    assert cut["sha256"] == hashlib.sha256(dumps(big).encode()).hexdigest()

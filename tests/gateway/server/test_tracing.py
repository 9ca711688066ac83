"""OpenTelemetry tracing: the spans of a live call and of an eval cell, their links, a
caller's trace continued, hostile trace headers ignored, and OTLP over HTTP configured
by the OTEL_* variables to a real receiver on 127.0.0.1."""

from __future__ import annotations

import http.server
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from evals.suites import install_suite
from gateway._tracing import parse_traceparent, tracing_from_env
from records import Store
from schema.errors import UsageError
from tests.evals.suites._make import case, make_suite
from tests.gateway.server._agent import Recording, serving_recorder
from tests.gateway.server._gateway import Gateway, mandate, running_gateway

AGENT = "acme/traced"
BODY = {"capability": "ticket.classify", "input": {"subject": "Refund", "body": "x"}}
CALLER_TRACE = "0af7651916cd43dd8448eb211c80319c"
CALLER_PARENT = "b7ad6b7169203331"


def _invoke(gw: Gateway, **headers: str) -> Any:
    answer = gw.call(
        "POST", f"/v1/agents/{AGENT}/invoke", "caller:finance-bot", json=BODY, headers=headers
    )
    assert answer.status_code == 200, answer.text
    return answer


def _sent(recording: Recording) -> str:
    """The traceparent of the agent's last call."""
    headers, _ = recording.calls[-1]
    (value,) = [v.decode() for k, v in headers if k == b"traceparent"]
    return value


def _by_name(spans: list[ReadableSpan]) -> dict[str, ReadableSpan]:
    return {span.name: span for span in spans}


@contextmanager
def _traced_gateway(store: Store, tmp_path: Path) -> Iterator[tuple[Gateway, Any, Recording]]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    recording = Recording()
    with serving_recorder(store, AGENT, recording):
        store.mandates.grant(mandate())
        with running_gateway(store, tmp_path / "home", tracer_provider=provider) as gw:
            yield gw, exporter, recording
    provider.shutdown()


@pytest.mark.slow
def test_the_spans_of_a_live_call(store: Store, tmp_path: Path) -> None:
    with _traced_gateway(store, tmp_path) as (gw, exporter, recording):
        caller = f"00-{CALLER_TRACE}-{CALLER_PARENT}-01"
        _invoke(gw, traceparent=caller, tracestate="vendor=opaque")
        spans = _by_name(exporter.get_finished_spans())
        assert set(spans) == {"live.call", "decide", "reserve", "call", "agent.attempt", "settle"}
        root = spans["live.call"]
        # The caller's trace goes on: same trace id, its span as the parent.
        assert f"{root.context.trace_id:032x}" == CALLER_TRACE
        assert root.parent is not None and f"{root.parent.span_id:016x}" == CALLER_PARENT
        assert root.attributes is not None and root.attributes["holon.caller"] == "finance-bot"
        for name in ("decide", "reserve", "call", "settle"):
            child = spans[name]
            assert child.context.trace_id == root.context.trace_id
            assert child.parent is not None and child.parent.span_id == root.context.span_id
        assert spans["reserve"].attributes["holon.mandate"] == "finance-tickets"  # type: ignore[index]
        assert spans["call"].attributes["holon.outcome"] == "ok"  # type: ignore[index]
        # The agent's traceparent is its attempt's span, the call's child: the agent's
        # spans hang under it.
        attempt = spans["agent.attempt"]
        assert (
            attempt.parent is not None and attempt.parent.span_id == spans["call"].context.span_id
        )
        assert _sent(recording) == f"00-{CALLER_TRACE}-{attempt.context.span_id:016x}-01"

        exporter.clear()
        _invoke(gw)  # no caller trace: a root of its own
        root = _by_name(exporter.get_finished_spans())["live.call"]
        assert root.parent is None and f"{root.context.trace_id:032x}" != CALLER_TRACE
        assert _sent(recording).split("-")[1] == f"{root.context.trace_id:032x}"


@pytest.mark.slow
@pytest.mark.parametrize(
    "hostile",
    [
        "x" * 8000,  # huge
        f"00-{CALLER_TRACE}-{CALLER_PARENT}-01" + "-" + "a" * 4000,  # a v00 with more
        f"00-{CALLER_TRACE.upper()}-{CALLER_PARENT}-01",  # uppercase
        f"00-{'0' * 32}-{CALLER_PARENT}-01",  # invalid trace id
        f"ff-{CALLER_TRACE}-{CALLER_PARENT}-01",  # the forbidden version
        f"00-{CALLER_TRACE}-{CALLER_PARENT}-0g",  # not hex
    ],
)
def test_a_hostile_traceparent_is_ignored(store: Store, tmp_path: Path, hostile: str) -> None:
    with _traced_gateway(store, tmp_path) as (gw, exporter, recording):
        answer = gw.call(
            "POST",
            f"/v1/agents/{AGENT}/invoke",
            "caller:finance-bot",
            json=BODY,
            headers={"traceparent": hostile, "tracestate": "k=" + "v" * 8000},
        )
        assert answer.status_code == 200, answer.text
        root = _by_name(exporter.get_finished_spans())["live.call"]
        assert root.parent is None  # no caller trace: nothing of it was taken
        sent = _sent(recording)
        assert sent != hostile and CALLER_TRACE not in sent
        assert parse_traceparent(sent) is not None


@pytest.mark.slow
def test_eval_cells_are_spans_of_their_own_traces(store: Store, tmp_path: Path) -> None:
    public = [case(f"p{i}", f"Refund {i}", "billing") for i in range(2)]
    holdout = [case(f"h{i}", f"Refund please {i}", "billing") for i in range(2)]
    install_suite(store, make_suite(tmp_path, public=public, holdout=holdout))
    with _traced_gateway(store, tmp_path) as (gw, exporter, recording):
        done = gw.evaluate(AGENT)
        cells = [s for s in exporter.get_finished_spans() if s.name == "eval.cell"]
        assert len(cells) == 4
        assert all(s.parent is None for s in cells)  # each a root: cells share no trace
        assert len({s.context.trace_id for s in cells}) == 4
        assert {s.attributes["holon.eval_id"] for s in cells} == {done["id"]}  # type: ignore[index]
        sent = {
            v.decode() for headers, _ in recording.calls for k, v in headers if k == b"traceparent"
        }
        # Each attempt is a span of its cell's, and its ids are what the agent got.
        attempts = [s for s in exporter.get_finished_spans() if s.name == "agent.attempt"]
        assert len(attempts) == 4
        by_cell = {s.context.span_id for s in cells}
        assert {s.parent.span_id for s in attempts if s.parent is not None} == by_cell
        assert sent == {
            f"00-{s.context.trace_id:032x}-{s.context.span_id:016x}-01" for s in attempts
        }


def test_tracing_is_off_unless_an_exporter_is_named() -> None:
    assert tracing_from_env({}).tracer is None
    assert tracing_from_env({"OTEL_TRACES_EXPORTER": "none"}).tracer is None
    disabled = {"OTEL_TRACES_EXPORTER": "otlp", "OTEL_SDK_DISABLED": "true"}
    assert tracing_from_env(disabled).tracer is None
    with pytest.raises(UsageError, match="OTEL_TRACES_EXPORTER"):
        tracing_from_env({"OTEL_TRACES_EXPORTER": "zipkin"})
    with pytest.raises(UsageError, match="http/protobuf"):
        tracing_from_env({"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"})


@pytest.mark.parametrize(
    ("value", "valid"),
    [
        (f"00-{CALLER_TRACE}-{CALLER_PARENT}-01", True),
        (f"00-{CALLER_TRACE}-{CALLER_PARENT}-00", True),
        (f"01-{CALLER_TRACE}-{CALLER_PARENT}-01-future", True),  # a later version's fields
        (f"00-{CALLER_TRACE}-{CALLER_PARENT}-01-", False),
        (f"00-{CALLER_TRACE}-{'0' * 16}-01", False),
        (f"00-{CALLER_TRACE}-{CALLER_PARENT}-0", False),
        (f"00_{CALLER_TRACE}-{CALLER_PARENT}-01", False),
        (f"01-{CALLER_TRACE}-{CALLER_PARENT}-01x", False),
        ("01-" + CALLER_TRACE + "-" + CALLER_PARENT + "-01-" + "a" * 600, False),
        ("", False),
    ],
)
def test_parse_traceparent(value: str, valid: bool) -> None:
    parsed = parse_traceparent(value)
    assert (parsed is not None) is valid
    if parsed is not None:
        assert f"{parsed.trace_id:032x}" == CALLER_TRACE and parsed.is_remote


class _Receiver(http.server.BaseHTTPRequestHandler):
    bodies: list[tuple[str, bytes]] = []

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        self.bodies.append((self.path, self.rfile.read(length)))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.mark.slow
def test_otlp_over_http_from_the_otel_variables(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    _Receiver.bodies = []
    receiver = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Receiver)
    thread = threading.Thread(target=receiver.serve_forever, daemon=True)
    thread.start()
    try:
        port = receiver.server_address[1]
        for name, value in {
            "OTEL_TRACES_EXPORTER": "otlp",
            "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{port}",
            "OTEL_SERVICE_NAME": "holon-under-test",
            "OTEL_BSP_SCHEDULE_DELAY": "50",
        }.items():
            monkeypatch.setenv(name, value)
        assert os.environ["OTEL_TRACES_EXPORTER"] == "otlp"
        recording = Recording()
        with serving_recorder(store, AGENT, recording):
            store.mandates.grant(mandate())
            with running_gateway(store, tmp_path / "home", eval_workers=0) as gw:
                _invoke(gw)
            # Stopping the gateway flushed its spans to the receiver.
    finally:
        receiver.shutdown()
        receiver.server_close()
    assert _Receiver.bodies and {path for path, _ in _Receiver.bodies} == {"/v1/traces"}
    names: set[str] = set()
    services: set[str] = set()
    for _, body in _Receiver.bodies:
        request = ExportTraceServiceRequest.FromString(body)
        for resource_spans in request.resource_spans:
            for attribute in resource_spans.resource.attributes:
                if attribute.key == "service.name":
                    services.add(attribute.value.string_value)
            for scope in resource_spans.scope_spans:
                names |= {span.name for span in scope.spans}
    assert services == {"holon-under-test"}
    assert names >= {"live.call", "decide", "reserve", "call", "settle"}


def test_serve_refuses_a_tracing_setup_it_cannot_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.gateway._cli import CLI

    cli = CLI(tmp_path)
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "zipkin")
    res = cli("gateway", "serve", "--port", "0")
    assert res.code == 2 and "OTEL_TRACES_EXPORTER: 'zipkin'" in res.stderr
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "otlp")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
    res = cli("gateway", "serve", "--port", "0")
    assert res.code == 2 and "http/protobuf" in res.stderr

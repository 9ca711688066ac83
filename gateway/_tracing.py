"""OpenTelemetry tracing of the gateway (docs/gateway.md, "Tracing"): off by default.

`tracing_from_env` is the factory the server calls at start (never at
import: importing holon never imports the SDK or starts an exporter). It
reads the standard variables: `OTEL_TRACES_EXPORTER` (`none`, the default
here; `otlp`; `console`; a comma list), `OTEL_SDK_DISABLED`,
`OTEL_EXPORTER_OTLP_PROTOCOL` (only `http/protobuf` is shipped), and hands
the rest to the SDK, which reads them itself: `OTEL_SERVICE_NAME` (default
here `holon-gateway`), `OTEL_RESOURCE_ATTRIBUTES`,
`OTEL_EXPORTER_OTLP_ENDPOINT` / `..._TRACES_ENDPOINT` / `..._HEADERS` /
`..._TIMEOUT`, `OTEL_TRACES_SAMPLER` and its argument (default here
`always_on`, not the SDK's parent-based one), `OTEL_BSP_*`.

When tracing is off there is no tracer at all (`Tracing.tracer is None`):
the live path then makes no span objects, only what the wire needs
(`caller_context` and, when a caller sent a valid traceparent, attaching it
while the agent is called, so its trace goes on: agents._trace).

A caller's `traceparent` is read strictly (W3C Trace Context level 1) from
at most `MAX_TRACEPARENT` characters; anything else is ignored, never
forwarded. Its `tracestate` is never read: it is the caller's vendors'
data, and the OpenTelemetry parser logs a malformed one (an attacker's text
in our logs).
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags, Tracer

from schema.errors import UsageError

log = logging.getLogger(__name__)

__all__ = [
    "MAX_TRACEPARENT",
    "Tracing",
    "caller_context",
    "exporters_from_env",
    "parse_traceparent",
    "span",
    "tracing_from_env",
    "tracing_with",
]

MAX_TRACEPARENT = 512  # a later version may append fields; anything longer is ignored
_HEX = frozenset("0123456789abcdef")
_EXPORTERS = ("none", "otlp", "console")
_NULL: AbstractContextManager[None] = contextlib.nullcontext()


@dataclass
class Tracing:
    """The gateway's tracer (None: tracing off) and how to stop it (flush its spans)."""

    tracer: Tracer | None = None
    _provider: Any = None  # the SDK TracerProvider this factory made, if any

    def shutdown(self) -> None:
        if self._provider is not None:
            self._provider.shutdown()
            self._provider = None


def exporters_from_env(environ: Mapping[str, str]) -> list[str]:
    """The exporters the `OTEL_*` variables name (empty: tracing off); a UsageError for
    a name or protocol holon does not ship. Imports nothing: `holon gateway serve`
    checks this before it listens."""
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return []
    names = [
        n.strip().lower()
        for n in environ.get("OTEL_TRACES_EXPORTER", "none").split(",")
        if n.strip()
    ]
    unknown = [n for n in names if n not in _EXPORTERS]
    if unknown:
        raise UsageError(
            f"OTEL_TRACES_EXPORTER: {unknown[0]!r} is not one of {', '.join(_EXPORTERS)}"
        )
    names = [n for n in names if n != "none"]
    protocol = environ.get(
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", environ.get("OTEL_EXPORTER_OTLP_PROTOCOL", "")
    ).strip()
    if "otlp" in names and protocol not in ("", "http/protobuf"):
        raise UsageError(
            f"OTEL_EXPORTER_OTLP_PROTOCOL={protocol}: holon exports traces over http/protobuf only",
            hint="set OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf and the collector's HTTP port",
        )
    needed = ["opentelemetry.sdk"] + (
        ["opentelemetry.exporter.otlp.proto.http"] if "otlp" in names else []
    )
    if names and any(importlib.util.find_spec(module) is None for module in needed):
        raise UsageError(
            f"OTEL_TRACES_EXPORTER={','.join(names)} needs the OpenTelemetry SDK and exporter",
            hint="pip install 'holon[tracing]'",
        )
    return names


def tracing_from_env(environ: Mapping[str, str]) -> Tracing:
    """The tracing the `OTEL_*` variables ask for; off unless an exporter is named."""
    names = exporters_from_env(environ)
    if not names:
        return Tracing()
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter
    from opentelemetry.sdk.trace.sampling import ALWAYS_ON

    attributes = {} if environ.get("OTEL_SERVICE_NAME") else {"service.name": "holon-gateway"}
    # Not the SDK's parent-based default: a caller's "not sampled" flag would
    # then reach the agent on live calls only, and eval cells have no caller.
    # OTEL_TRACES_SAMPLER, when set, is the operator's choice (the SDK reads it).
    sampler = None if environ.get("OTEL_TRACES_SAMPLER") else ALWAYS_ON
    provider = TracerProvider(resource=Resource.create(attributes), sampler=sampler)
    for name in names:
        if name == "otlp":
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

            provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
        else:
            provider.add_span_processor(BatchSpanProcessor(ConsoleSpanExporter()))
    log.info("tracing on: exporting spans to %s", ", ".join(names))
    return Tracing(provider.get_tracer("holon.gateway"), provider)


def tracing_with(provider: trace.TracerProvider) -> Tracing:
    """Tracing through a provider made elsewhere (tests: an in-memory exporter); not
    shut down here."""
    return Tracing(provider.get_tracer("holon.gateway"))


def parse_traceparent(value: str) -> SpanContext | None:
    """A caller's W3C traceparent, or None when it is not a valid one.

    ``vv-<32 hex trace id>-<16 hex parent id>-<2 hex flags>``, lowercase; the
    ids not all zeros, the version not ``ff``; version ``00`` exactly 55
    characters, a later one may append ``-…`` fields (ignored).
    """
    if not 55 <= len(value) <= MAX_TRACEPARENT:
        return None
    version, trace_id, parent_id, flags = value[0:2], value[3:35], value[36:52], value[53:55]
    if value[2] != "-" or value[35] != "-" or value[52] != "-":
        return None
    if not _HEX.issuperset(version + trace_id + parent_id + flags) or version == "ff":
        return None
    if len(value) > 55 and (version == "00" or value[55] != "-"):
        return None
    trace_int, parent_int = int(trace_id, 16), int(parent_id, 16)
    if not trace_int or not parent_int:
        return None
    return SpanContext(
        trace_int, parent_int, is_remote=True, trace_flags=TraceFlags(int(flags, 16) & 0x01)
    )


def caller_context(values: list[str]) -> Context | None:
    """The context of a caller's trace, from the request's `traceparent` header values
    (none, or more than one, or an invalid one: no caller trace)."""
    if len(values) != 1:
        return None
    parent = parse_traceparent(values[0])
    if parent is None:
        return None
    return trace.set_span_in_context(NonRecordingSpan(parent), Context())


@contextlib.contextmanager
def _attached(context: Context) -> Iterator[None]:
    token = otel_context.attach(context)
    try:
        yield
    finally:
        otel_context.detach(token)


def span(
    tracer: Tracer | None,
    name: str,
    *,
    context: Context | None = None,
    attributes: Mapping[str, str] | None = None,
) -> AbstractContextManager[Any]:
    """A span named `name`, current inside the block (a child of the current one, or of
    `context`). Tracing off: nothing, except that a caller's `context` is made current
    so the agent's traceparent continues it."""
    if tracer is None:
        return _NULL if context is None else _attached(context)
    return tracer.start_as_current_span(name, context=context, attributes=attributes)

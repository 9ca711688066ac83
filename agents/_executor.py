"""The executor: (agent, capability, input, limits) -> Outcome, one code path for every call.

Live calls, eval calls and `holon test` all come through `Executor.execute`;
what differs between them (authorisation, billing, caps) is decided outside
and arrives as `CallLimits`, which never reach the wire.

Contract: nothing an agent does makes `execute` raise. Refused connections,
garbage, hangs, floods and lies all become an `Outcome`. What does raise is
our own side: a policy refusal (`schema.errors.Refused` for an `asgi:` agent
when in-process agents are not allowed, or from the `address_guard`), a
caller bug (input that is not JSON, a bad capability string), an input whose
request would be over `MAX_REQUEST_BYTES` (`schema.errors.PayloadTooLarge`)
or a bug here.

Caps apply to what holon passes on as well as to what it reads: an output
that, written as holon writes JSON, is over `CallLimits.output_limit` is
`invalid_response` (numbers read in exponent form may be written in plain
digits, a few characters longer). Work that grows with the size of a value
runs in a worker thread when the value is large (a body over 64 KiB, a
value of more than 2048 nodes), so a large answer or input never holds up
the event loop the other calls share.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from dataclasses import dataclass
from decimal import Decimal
from types import TracebackType
from typing import Any, TypeVar

from opentelemetry.trace import Tracer

from agents._a2a import (
    CARD_PATH,
    A2AReply,
    A2ATarget,
    CardError,
    card_identity,
    get_task_request,
    interpret_reply,
    target_from_card,
)
from agents._addresses import Address, AddressGuard
from agents._aiohttp import AbstractResolver
from agents._call import Call
from agents._chat_stream import CostCut, chat_stream_reader
from agents._cost import exceeds_cap, preflight_exceeds, price
from agents._exchange import Answer, BodyReader, CallFailure, Progress, exchange
from agents._identity import (
    IDENTITY_MAX_BYTES,
    IDENTITY_PATH,
    Identity,
    IdentityError,
    parse_identity,
)
from agents._limits import CallLimits
from agents._manifest import Manifest
from agents._mcp_calls import McpCalls
from agents._openai import MODELS_PATH, ChatFailure, models_identity, read_chat
from agents._outcome import Attempt, CostSource, Outcome, OutcomeCode, Usage, printable
from agents._reader import BodyError, parse_json
from agents._sizes import in_thread_if, is_large, measured_size
from agents._trace import (
    TRACEPARENT,
    attempt_context,
    current_traceparent,
    span_id_of,
    utc_now,
)
from agents._trace import request_id as new_request_id
from agents._transports import AsgiLoadError, Transport, Transports
from agents._wire import (
    AnswerError,
    PreparedRequest,
    build_request,
    endpoint_url,
    probe_headers,
    read_answer,
    read_metadata,
)
from schema.canonical import canonical_digest
from schema.errors import AgentProtocolError, AgentUnreachable, HolonError, Refused
from schema.jsontext import JSONValue, size_bound

__all__ = ["Executor", "execute"]

logger = logging.getLogger(__name__)

CARD_TTL_S = 300.0
_CARD_DEPTH = 32
_POLL_FIRST_S = 0.05
_POLL_MAX_S = 1.0
INLINE_BODY_BYTES = 64 * 1024  # larger answers are parsed in a worker thread

_T = TypeVar("_T")


@dataclass(frozen=True)
class _Result:
    code: OutcomeCode
    output: JSONValue = None
    usage: Usage | None = None
    cost: Decimal = Decimal(0)
    cost_source: CostSource = "none"
    http_status: int | None = None
    detail: str | None = None
    output_bytes: int | None = None
    metadata: JSONValue = None


async def _built(
    call: Call, *, target: A2ATarget | None = None, schema: dict[str, Any] | None = None
) -> PreparedRequest:
    """`build_request`, off the event loop when the input is large (its JSON is written
    then)."""
    return await in_thread_if(
        is_large(call.input),
        build_request,
        call.agent,
        call.capability,
        call.input,
        request_id=call.request_id,
        secret=call.secret,
        a2a_target=target,
        traceparent=call.traceparent,
        output_schema=schema,
    )


def _ms(since: float) -> float:
    return round((time.perf_counter() - since) * 1000, 3)


def _read_http(
    agent: Manifest, body: bytes, depth: int
) -> tuple[JSONValue, Usage | None, JSONValue]:
    """(output, usage, metadata) of a 2xx body; only a `holon-http` answer has metadata."""
    document = parse_json(body, depth)
    if agent.protocol == "openai-chat":
        return (*read_chat(agent, document, depth), None)
    output, usage = read_answer(document)
    return output, usage, read_metadata(document)


def _read_a2a(body: bytes, depth: int) -> A2AReply:
    return interpret_reply(parse_json(body, depth))


class Executor:
    """Calls agents through shared transports; one per process (or per event loop).

    - `allow_asgi`: whether `asgi:` (in-process) agents may be called. The HTTP
      API passes False: calling one then raises `schema.errors.Refused` before
      anything runs (policy, not agent behaviour).
    - `address_guard`: judges every outbound HTTP connection (calls, card
      fetches, probes) by (host, port, the addresses it would go to) before
      it is dialled; its `Refused` propagates. The addresses come from the
      one lookup the connection then uses (`agents._addresses`), so what it
      judged is where the connection goes. For the gateway's policy on
      private addresses.
    - `resolver`: the aiohttp resolver that looks names up (default: the
      system's getaddrinfo in a thread); for tests and embedding.
    - `max_connections`: size of the shared connection pool.
    - `verify_tls`: verify agents' certificates (always, outside tests).

    The HTTP transport is created lazily inside the running loop (and `asgi:`
    apps are imported and started on first use, once per endpoint); the
    executor then belongs to that loop. Use `async with Executor() as
    executor:` or call `aclose()`. A2A agent cards and MCP sessions
    (agents._mcp_calls) are cached per endpoint for 5 minutes, and dropped
    after any failed call.
    """

    def __init__(
        self,
        *,
        allow_asgi: bool = True,
        address_guard: AddressGuard | None = None,
        resolver: AbstractResolver | None = None,
        max_connections: int = 256,
        verify_tls: bool = True,
    ) -> None:
        self._allow_asgi = allow_asgi
        self._transports = Transports(
            max_connections=max_connections,
            verify=verify_tls,
            guard=address_guard,
            resolver=resolver,
        )
        self._cards: dict[str, tuple[float, A2ATarget]] = {}
        self._mcp = McpCalls(self._transport)

    async def __aenter__(self) -> Executor:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close pooled connections and stop in-process apps (their lifespan shutdown runs)."""
        self._cards.clear()
        self._mcp.clear()
        await self._transports.aclose()

    async def resolve(self, host: str, port: int) -> list[Address]:
        """Every address `host` resolves to through the executor's own resolver (an IP
        literal is itself), unjudged: for a policy's check ahead of any call. Raises
        OSError when the name does not resolve."""
        return await self._transports.lookup(host, port)

    # -- calls ----------------------------------------------------------------------------

    async def execute(
        self,
        agent: Manifest,
        capability: str,
        input: JSONValue,
        limits: CallLimits,
        *,
        secret: str | None = None,
        request_id: str | None = None,
        output_schema: dict[str, Any] | None = None,
        tracer: Tracer | None = None,
    ) -> Outcome:
        """Call `agent` once (plus `limits.unreachable_retries` retries) and classify the result.

        Every attempt sends the same request id (`request_id`, or a fresh
        uuid4), so an agent can recognise a retry; each has a span id of its own
        (`tracer`: a span `agent.attempt` per attempt, a child of the current one;
        none: `agents._trace.attempt_traceparent`). `output_schema`: the output
        schema of the capability's active suite, what the answer is graded on
        (an `openai-chat` agent is asked for it as its `response_format`; None:
        the shipped schema, if any).
        Never raises on agent behaviour; see the module docstring.
        """
        self._check_policy(agent)
        request_id = request_id or new_request_id()
        started = time.perf_counter()
        cap = limits.max_cost_usd
        if preflight_exceeds(agent, cap):
            assert agent.pricing is not None and cap is not None
            outcome = Outcome(
                code="cost_exceeded",
                request_id=request_id,
                latency_ms=_ms(started),
                error=printable(
                    f"the per-call price {agent.pricing.per_call_usd} alone exceeds the cap "
                    f"{cap}; the agent was not called"
                ),
            )
            self._log(agent, capability, outcome)
            return outcome
        # Built once, before anything is sent (a caller bug raises here): every
        # attempt sends the very same body (its traceparent names the attempt).
        # a2a rebuilds it per attempt, for the URL and version the agent card
        # names; mcp sends it in a session.
        prepared: PreparedRequest | None = None
        # One trace per call, from the caller's OpenTelemetry context
        # (agents._trace); each attempt its own parent id, its A2A polls the same.
        traceparent = current_traceparent()
        call = Call(agent, capability, input, limits, secret, request_id, traceparent)
        if agent.protocol not in ("a2a", "mcp"):
            prepared = await _built(call, schema=output_schema)
        attempts: list[Attempt] = []
        while True:
            number = len(attempts) + 1
            started_at = utc_now()
            attempt_started = time.perf_counter()
            with attempt_context(tracer, traceparent, number, request_id) as (sent, span):
                sending = prepared
                if prepared is not None and sent != traceparent:
                    sending = dataclasses.replace(
                        prepared, headers={**prepared.headers, TRACEPARENT: sent}
                    )
                result = await self._attempt(dataclasses.replace(call, traceparent=sent), sending)
                if span is not None:
                    span.set_attribute("holon.outcome", result.code)
            attempts.append(
                Attempt(
                    number,
                    result.code,
                    _ms(attempt_started),
                    result.http_status,
                    result.detail,
                    started_at=started_at,
                    span_id=span_id_of(sent),
                )
            )
            if result.code != "unreachable" or number > limits.unreachable_retries:
                break
            await asyncio.sleep(limits.backoff_s(number))
        outcome = Outcome(
            code=result.code,
            request_id=request_id,
            output=result.output if result.code == "ok" else None,
            usage=result.usage,
            cost_usd=result.cost,
            cost_source=result.cost_source,
            latency_ms=_ms(started),
            http_status=result.http_status,
            attempts=tuple(attempts),
            error=result.detail,
            output_bytes=result.output_bytes if result.code == "ok" else None,
            metadata=result.metadata if result.code == "ok" else None,
        )
        self._log(agent, capability, outcome)
        return outcome

    async def _attempt(self, call: Call, prepared: PreparedRequest | None) -> _Result:
        agent, limits = call.agent, call.limits
        deadline = limits.deadline_s(agent)
        progress = Progress()
        usage: Usage | None = None
        metadata: JSONValue = None
        scope = asyncio.timeout(deadline)
        try:
            async with scope:
                if agent.protocol == "mcp":
                    output, size = await self._mcp.call(call, progress)
                elif prepared is None:
                    output, size = await self._call_a2a(call, progress)
                else:
                    output, usage, size, metadata = await self._call_http(
                        agent, prepared, limits, progress
                    )
        except TimeoutError:
            if not scope.expired():
                raise
            after = f" (after HTTP {progress.http_status})" if progress.http_status else ""
            return _Result(
                "timeout",
                http_status=progress.http_status,
                detail=f"no complete answer within {deadline:g} s{after}",
            )
        except CallFailure as failure:
            return _Result(failure.code, http_status=failure.http_status, detail=failure.detail)
        cost, source = price(agent, usage)
        if exceeds_cap(cost, limits.max_cost_usd):
            return _Result(
                "cost_exceeded",
                usage=usage,
                cost=cost,
                cost_source=source,
                http_status=progress.http_status,
                detail=printable(f"cost {cost} ({source}) exceeds the cap {limits.max_cost_usd}"),
            )
        return _Result(
            "ok", output, usage, cost, source, progress.http_status, None, size, metadata
        )

    async def _call_http(
        self, agent: Manifest, prepared: PreparedRequest, limits: CallLimits, progress: Progress
    ) -> tuple[JSONValue, Usage | None, int, JSONValue]:
        try:
            answer = await self._send(
                agent, prepared, limits, progress, read_body=chat_stream_reader(agent, limits)
            )
        except CostCut as cut:  # priced by the attempt: over the cap, so cost_exceeded
            return None, cut.usage, 0, None
        body, depth = answer.body, limits.max_json_depth
        try:
            output, usage, metadata = await in_thread_if(
                len(body) > INLINE_BODY_BYTES, _read_http, agent, body, depth
            )
        except (BodyError, AnswerError) as exc:
            raise CallFailure("invalid_response", str(exc), answer.status) from None
        except ChatFailure as exc:
            raise CallFailure(exc.code, str(exc), answer.status) from None
        size = size_bound(body)
        if size > limits.output_limit:
            size = await measured_size(output, limits.output_limit, answer.status)
        return output, usage, size, metadata

    async def _send(
        self,
        agent: Manifest,
        prepared: PreparedRequest,
        limits: CallLimits,
        progress: Progress,
        *,
        read_body: BodyReader | None = None,
    ) -> Answer:
        """One call's request sent and its 2xx body read, within the call's limits
        (`read_body`: how, for an agent whose answer streams; else read whole)."""
        transport, in_process = await self._transport(agent, prepared.url, limits.deadline_s(agent))
        return await exchange(
            transport,
            prepared,
            max_bytes=limits.max_response_bytes,
            connect_timeout_s=min(limits.connect_timeout_s, limits.deadline_s(agent)),
            in_process=in_process,  # only an asgi: agent's is: never an a2a one's
            progress=progress,
            read_body=read_body,
        )

    async def _transport(
        self, agent: Manifest, url: str, startup_timeout_s: float
    ) -> tuple[Transport, bool]:
        if agent.protocol == "asgi":
            try:
                transport = await self._transports.asgi(
                    agent.endpoint, startup_timeout_s=startup_timeout_s
                )
            except AsgiLoadError as exc:
                raise CallFailure("unreachable", f"cannot load {agent.endpoint}: {exc}") from None
            return transport, True
        return self._transports.http(), False

    # -- a2a ------------------------------------------------------------------------------

    async def _call_a2a(self, call: Call, progress: Progress) -> tuple[JSONValue, int]:
        agent, limits = call.agent, call.limits
        try:
            target = await self._a2a_target(agent, call.secret, limits)
            prepared = await _built(call, target=target)
            reply, body = await self._a2a_send(agent, prepared, limits, progress)
            wait = _POLL_FIRST_S
            while reply.kind == "pending":
                # Only a non-blocking server answers before the task settles: poll it.
                await asyncio.sleep(wait)
                wait = min(wait * 2, _POLL_MAX_S)
                poll = PreparedRequest(
                    "POST",
                    prepared.url,
                    prepared.headers,
                    get_task_request(target, reply.task_id, request_id=call.request_id),
                )
                reply, body = await self._a2a_send(agent, poll, limits, progress)
            if reply.kind == "output":
                size = size_bound(body)
                if size > limits.output_limit:
                    status = progress.http_status or 200
                    size = await measured_size(reply.output, limits.output_limit, status)
                return reply.output, size
        except BaseException:
            self._cards.pop(agent.endpoint, None)  # whatever went wrong, re-read the card next time
            raise
        self._cards.pop(agent.endpoint, None)
        code: OutcomeCode = "agent_error" if reply.kind == "error" else "invalid_response"
        raise CallFailure(code, reply.detail, progress.http_status)

    async def _a2a_send(
        self, agent: Manifest, prepared: PreparedRequest, limits: CallLimits, progress: Progress
    ) -> tuple[A2AReply, bytes]:
        answer = await self._send(agent, prepared, limits, progress)
        body, depth = answer.body, limits.max_json_depth
        try:
            reply = await in_thread_if(len(body) > INLINE_BODY_BYTES, _read_a2a, body, depth)
        except BodyError as exc:
            raise CallFailure("invalid_response", str(exc), answer.status) from None
        return reply, answer.body

    async def _a2a_target(
        self, agent: Manifest, secret: str | None, limits: CallLimits
    ) -> A2ATarget:
        cached = self._cards.get(agent.endpoint)
        if cached is not None and cached[0] > time.monotonic():
            return cached[1]
        card = await self._fetch_card(agent, secret, limits.connect_timeout_s)
        try:
            target = target_from_card(card, agent.endpoint)
        except CardError as exc:
            raise CallFailure("invalid_response", f"agent card: {exc}") from None
        self._cards[agent.endpoint] = (time.monotonic() + CARD_TTL_S, target)
        return target

    async def _fetch_card(
        self, agent: Manifest, secret: str | None, connect_timeout_s: float
    ) -> JSONValue:
        url = endpoint_url(agent, CARD_PATH)
        transport, _ = await self._transport(agent, url, connect_timeout_s)
        prepared = PreparedRequest("GET", url, probe_headers(secret), b"")
        try:
            answer = await exchange(
                transport,
                prepared,
                max_bytes=IDENTITY_MAX_BYTES,
                connect_timeout_s=connect_timeout_s,
            )
            return parse_json(answer.body, _CARD_DEPTH)
        except CallFailure as failure:
            raise CallFailure(
                failure.code, f"agent card: {failure.detail}", failure.http_status
            ) from None
        except BodyError as exc:
            raise CallFailure("invalid_response", f"agent card: {exc}", answer.status) from None

    # -- identity -------------------------------------------------------------------------

    async def identify(
        self, agent: Manifest, *, secret: str | None = None, timeout_s: float = 10.0
    ) -> Identity:
        """Ask the agent who it is (docs/agents.md, "Identity"). Callers compare the version.

        Raises `schema.errors.AgentUnreachable` when nothing (or a 5xx) answers
        within `timeout_s`, `schema.errors.AgentProtocolError` when what
        answers is not a valid identity document (or agent card).
        """
        self._check_policy(agent)
        details = {"agent": agent.id, "endpoint": agent.endpoint}
        scope = asyncio.timeout(timeout_s)
        try:
            async with scope:
                if agent.protocol == "a2a":
                    return self._card_identity(
                        agent, await self._fetch_card(agent, secret, timeout_s)
                    )
                if agent.protocol == "mcp":
                    return await self._mcp.identify(agent, secret, timeout_s)
                path = MODELS_PATH if agent.protocol == "openai-chat" else IDENTITY_PATH
                url = endpoint_url(agent, path)
                transport, in_process = await self._transport(agent, url, timeout_s)
                prepared = PreparedRequest("GET", url, probe_headers(secret), b"")
                answer = await exchange(
                    transport,
                    prepared,
                    max_bytes=IDENTITY_MAX_BYTES,
                    connect_timeout_s=timeout_s,
                    in_process=in_process,
                )
                document = parse_json(answer.body, _CARD_DEPTH)
                if agent.protocol == "openai-chat":
                    return models_identity(agent, document)
                return parse_identity(document)
        except TimeoutError:
            if not scope.expired():
                raise
            raise AgentUnreachable(
                f"{agent.id}: the identity probe got no answer within {timeout_s:g} s",
                details=details,
            ) from None
        except CallFailure as failure:
            status = failure.http_status
            cls: type[HolonError] = AgentProtocolError
            if failure.code == "unreachable" or (status is not None and status >= 500):
                cls = AgentUnreachable
            raise cls(
                f"{agent.id}: identity probe failed: {failure.detail}",
                details={**details, "http_status": status},
            ) from None
        except (BodyError, IdentityError, CardError) as exc:
            raise AgentProtocolError(
                f"{agent.id}: bad identity document: {printable(str(exc))}", details=details
            ) from None

    def _card_identity(self, agent: Manifest, card: JSONValue) -> Identity:
        name, version, skills = card_identity(card)
        try:  # the probe also refreshes where calls go
            target = target_from_card(card, agent.endpoint)
            self._cards[agent.endpoint] = (time.monotonic() + CARD_TTL_S, target)
        except CardError:
            self._cards.pop(agent.endpoint, None)
        try:
            card_digest: str | None = canonical_digest(card)
        except ValueError:  # a number beyond a double: the card cannot be certified
            card_digest = None
        return Identity(id=name, version=version, capabilities=skills, card_digest=card_digest)

    # -- policy and logging ---------------------------------------------------------------

    def _check_policy(self, agent: Manifest) -> None:
        if agent.protocol == "asgi" and not self._allow_asgi:
            raise Refused(
                f"{agent.id} is an in-process (asgi:) agent, which this gateway does not call",
                details={"agent": agent.id},
                hint="in-process agents are called from the CLI working on the store",
            )

    @staticmethod
    def _log(agent: Manifest, capability: str, outcome: Outcome) -> None:
        # Never the secret, the input or the body: ids, classification and numbers only.
        level = logging.DEBUG if outcome.ok else logging.INFO
        if logger.isEnabledFor(level):
            logger.log(
                level,
                "agent call %s@%s %s -> %s (HTTP %s) %.1f ms, %d attempt(s), cost %s %s [%s]",
                agent.id,
                agent.version,
                printable(capability, 100),
                outcome.code,
                outcome.http_status,
                outcome.latency_ms,
                outcome.attempt_count,
                outcome.cost_usd,
                outcome.cost_source,
                outcome.request_id,
            )


async def execute(
    agent: Manifest,
    capability: str,
    input: JSONValue,
    limits: CallLimits,
    *,
    secret: str | None = None,
    request_id: str | None = None,
    allow_asgi: bool = True,
    output_schema: dict[str, Any] | None = None,
    tracer: Tracer | None = None,
) -> Outcome:
    """One call through a temporary `Executor` (convenient; a long-lived one pools connections)."""
    async with Executor(allow_asgi=allow_asgi) as executor:
        return await executor.execute(
            agent,
            capability,
            input,
            limits,
            secret=secret,
            request_id=request_id,
            output_schema=output_schema,
            tracer=tracer,
        )

"""MCP calls and identity probes through the executor's transport (see `agents._mcp`).

A session is opened per endpoint and kept for `SESSION_TTL_S` (as an A2A
card is), so a call is one `tools/call` round trip; it is dropped after any
failed call, and a cached session the server no longer knows (HTTP 404, as
the transport says a server answers for an expired session) is opened again
once, within the same attempt and deadline. An identity probe always opens
a fresh session, so what it reports is what the server says now.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

from agents._call import Call
from agents._exchange import Answer, CallFailure, Progress, exchange
from agents._identity import IDENTITY_MAX_BYTES, Identity
from agents._manifest import Manifest
from agents._mcp import (
    MAX_TOOL_PAGES,
    RESPONSE_HEADERS,
    SESSION_HEADER,
    McpFailure,
    McpSession,
    card_digest,
    card_of,
    initialize_request,
    initialized_notification,
    interpret_call,
    message_headers,
    read_response,
    session_from,
    tool_for,
    tools_call_request,
    tools_list_request,
    tools_page,
)
from agents._sizes import measured_size
from agents._transports import Transport
from agents._wire import (
    PreparedRequest,
    agent_headers,
    bounded_request,
    endpoint_url,
    probe_headers,
)
from schema.jsontext import JSONValue, size_bound

__all__ = ["SESSION_TTL_S", "McpCalls"]

SESSION_TTL_S = 300.0
_PROBE_DEPTH = 64

TransportFor = Callable[[Manifest, str, float], Awaitable[tuple[Transport, bool]]]


class _Channel:
    """One endpoint's messages: the same headers on each, bounded, under one deadline."""

    def __init__(
        self,
        transport: Transport,
        url: str,
        base: dict[str, str],
        *,
        max_bytes: int,
        depth: int,
        connect_timeout_s: float,
        progress: Progress | None,
    ) -> None:
        self.transport, self.url, self.base = transport, url, base
        self.max_bytes, self.depth = max_bytes, depth
        self.connect_timeout_s, self.progress = connect_timeout_s, progress

    async def post(self, body: bytes, session: McpSession | None) -> Answer:
        prepared = PreparedRequest("POST", self.url, message_headers(self.base, session), body)
        return await exchange(
            self.transport,
            prepared,
            max_bytes=self.max_bytes,
            connect_timeout_s=self.connect_timeout_s,
            progress=self.progress,
            keep_headers=RESPONSE_HEADERS,
        )

    async def request(self, body: bytes, rpc_id: str, session: McpSession | None) -> dict[str, Any]:
        answer = await self.post(body, session)
        try:
            return read_response(
                answer.body, answer.headers.get(b"content-type"), rpc_id, self.depth
            )
        except McpFailure as failure:
            raise CallFailure(failure.code, str(failure), answer.status) from None

    async def open(self, rpc_id: str) -> McpSession:
        answer = await self.post(initialize_request(rpc_id), None)
        try:
            result = read_response(
                answer.body, answer.headers.get(b"content-type"), rpc_id, self.depth
            )
            session = session_from(result, answer.headers.get(SESSION_HEADER))
        except McpFailure as failure:
            raise CallFailure(failure.code, f"MCP initialize: {failure}", answer.status) from None
        await self.post(initialized_notification(), session)
        return session


class McpCalls:
    def __init__(self, transport_for: TransportFor) -> None:
        self._transport_for = transport_for
        self._sessions: dict[str, tuple[float, McpSession]] = {}

    def clear(self) -> None:
        self._sessions.clear()

    async def call(self, call: Call, progress: Progress) -> tuple[JSONValue, int]:
        """The output of one `tools/call` and its size bound (CallFailure when over the cap)."""
        agent, limits, request_id = call.agent, call.limits, call.request_id
        tool = tool_for(agent, call.capability)
        body = bounded_request(tools_call_request(request_id, tool, call.input))
        base = agent_headers(
            agent,
            call.capability,
            request_id=request_id,
            secret=call.secret,
            traceparent=call.traceparent,
        )
        url = endpoint_url(agent)
        deadline = limits.deadline_s(agent)
        transport, _ = await self._transport_for(agent, url, deadline)
        channel = _Channel(
            transport,
            url,
            base,
            max_bytes=limits.max_response_bytes,
            depth=limits.max_json_depth,
            connect_timeout_s=min(limits.connect_timeout_s, deadline),
            progress=progress,
        )
        try:
            cached = self._sessions.get(agent.endpoint)
            session = cached[1] if cached is not None and cached[0] > time.monotonic() else None
            if session is None:
                session = await self._open(channel, agent, request_id)
                fresh = True
            else:
                fresh = False
            try:
                answer = await channel.post(body, session)
            except CallFailure as failure:
                if fresh or failure.http_status != 404:
                    raise
                session = await self._open(channel, agent, request_id)
                answer = await channel.post(body, session)
            try:
                result = read_response(
                    answer.body, answer.headers.get(b"content-type"), request_id, channel.depth
                )
                output = interpret_call(result, channel.depth)
            except McpFailure as failure:
                raise CallFailure(failure.code, str(failure), answer.status) from None
            size = size_bound(answer.body)
            if size > limits.output_limit:
                size = await measured_size(output, limits.output_limit, answer.status)
            return output, size
        except BaseException:
            self._sessions.pop(agent.endpoint, None)  # whatever went wrong, a new session next
            raise

    async def _open(self, channel: _Channel, agent: Manifest, request_id: str) -> McpSession:
        session = await channel.open(f"{request_id}-initialize")
        self._sessions[agent.endpoint] = (time.monotonic() + SESSION_TTL_S, session)
        return session

    async def identify(self, agent: Manifest, secret: str | None, timeout_s: float) -> Identity:
        """Who answers: serverInfo, and the tool list as the capabilities and the card digest.

        Raises CallFailure (the executor turns it into the probe's errors)."""
        url = endpoint_url(agent)
        transport, _ = await self._transport_for(agent, url, timeout_s)
        headers = {**probe_headers(secret), "Content-Type": "application/json"}
        channel = _Channel(
            transport,
            url,
            headers,
            max_bytes=IDENTITY_MAX_BYTES,
            depth=_PROBE_DEPTH,
            connect_timeout_s=timeout_s,
            progress=None,
        )
        session = await channel.open("holon-probe-initialize")
        tools: list[dict[str, Any]] = []
        cursor: str | None = None
        for page in range(MAX_TOOL_PAGES):
            rpc_id = f"holon-probe-tools-{page}"
            result = await channel.request(tools_list_request(rpc_id, cursor), rpc_id, session)
            try:
                found, cursor = tools_page(result)
            except McpFailure as failure:
                raise CallFailure(failure.code, str(failure)) from None
            tools.extend(found)
            if cursor is None:
                break
        else:
            raise CallFailure(
                "invalid_response", f"MCP tools/list has more than {MAX_TOOL_PAGES} pages"
            )
        self._sessions[agent.endpoint] = (time.monotonic() + SESSION_TTL_S, session)
        names = {str(tool["name"]) for tool in tools}
        advertised = tuple(
            capability for capability in agent.capabilities if tool_for(agent, capability) in names
        )
        return Identity(
            id=session.name,
            version=session.server_version,
            capabilities=advertised,
            card_digest=card_digest(card_of(session, tools)),
        )

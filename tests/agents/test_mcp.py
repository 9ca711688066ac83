"""The mcp adapter against real servers built with the official `mcp` SDK (FastMCP) on loopback."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest
from mcp.server.fastmcp import FastMCP

from agents import CallLimits, Executor, Manifest, manifest_from_dict
from schema.errors import AgentUnreachable, ManifestError
from tests._servers import Tap, serve
from tests.agents.conftest import closed_port
from tests.agents.mcp_agents import SERVER_NAME, SERVER_VERSION, change_tools, mcp_agent

pytestmark = pytest.mark.anyio

TICKET = {"subject": "Refund please", "body": "Charged twice."}
LIMITS = CallLimits(timeout_s=10)


@contextmanager
def mcp_server(server: FastMCP | None = None, **options: Any) -> Iterator[tuple[str, Tap]]:
    tap = Tap((server or mcp_agent(**options)).streamable_http_app())
    with serve(tap) as url:
        yield url + "/mcp", tap


def mcp_manifest(endpoint: str, tool: str = "classify", **extra: Any) -> dict[str, Any]:
    return {
        "schema_version": 1,
        "id": "acme/mcp-triage",
        "version": SERVER_VERSION,
        "protocol": "mcp",
        "endpoint": endpoint,
        "capabilities": ["ticket.classify"],
        "mcp": {"tools": {"ticket.classify": tool}},
        **extra,
    }


def mcp_manifest_agent(endpoint: str, tool: str = "classify") -> Manifest:
    return manifest_from_dict(mcp_manifest(endpoint, tool))


def _rpc_methods(tap: Tap) -> list[str]:
    return [seen["json"]["method"] for seen in tap.seen if seen["json"] is not None]


@pytest.mark.parametrize(
    "options", [{}, {"json_response": True}, {"stateless": True}], ids=["sse", "json", "stateless"]
)
async def test_a_tool_call_with_structured_content(
    executor: Executor, options: dict[str, Any]
) -> None:
    with mcp_server(**options) as (url, tap):
        agent = mcp_manifest_agent(url)
        first = await executor.execute(
            agent, "ticket.classify", TICKET, LIMITS, secret="tok", request_id="rid-mcp-1"
        )
        second = await executor.execute(
            agent, "ticket.classify", {"subject": "Cannot log in"}, LIMITS
        )
    assert first.ok, first
    assert first.output == {"label": "billing"} and second.output == {"label": "account"}
    # One session: initialize and initialized once, then one tools/call per call.
    assert _rpc_methods(tap) == [
        "initialize",
        "notifications/initialized",
        "tools/call",
        "tools/call",
    ]
    call = tap.seen[2]
    assert call["json"] == {
        "jsonrpc": "2.0",
        "id": "rid-mcp-1",
        "method": "tools/call",
        "params": {"name": "classify", "arguments": TICKET},
    }
    headers = call["headers"]
    assert headers["authorization"] == "Bearer tok"
    assert headers["accept"] == "application/json, text/event-stream"
    assert headers["mcp-protocol-version"] == "2025-06-18"
    assert headers["holon-capability"] == "ticket.classify"
    assert ("mcp-session-id" in headers) == (not options.get("stateless"))


async def test_one_json_text_block_is_the_output(executor: Executor) -> None:
    with mcp_server() as (url, _):
        outcome = await executor.execute(
            mcp_manifest_agent(url, "classify_text"), "ticket.classify", TICKET, LIMITS
        )
    assert outcome.ok and outcome.output == {"label": "billing"}


@pytest.mark.parametrize(
    ("tool", "code", "detail"),
    [
        (
            "broken",
            "agent_error",
            "MCP tool error: Error executing tool broken: the labeller is down",
        ),
        ("classify_prose", "invalid_response", "MCP tool result text: body is not JSON"),
        ("no_such_tool", "agent_error", "no_such_tool"),
    ],
)
async def test_tool_errors_and_unusable_results(
    executor: Executor, tool: str, code: str, detail: str
) -> None:
    with mcp_server() as (url, tap):
        agent = mcp_manifest_agent(url, tool)
        outcome = await executor.execute(agent, "ticket.classify", TICKET, LIMITS)
        # A failed call drops the session: the next call opens a new one.
        again = await executor.execute(agent, "ticket.classify", TICKET, LIMITS)
    assert outcome.code == code, outcome
    assert detail in (outcome.error or ""), outcome.error
    assert again.code == code
    assert _rpc_methods(tap).count("initialize") == 2


async def test_a_schema_mismatch_is_passed_on_for_grading(executor: Executor) -> None:
    # The executor takes what the tool answered; the suite's output-schema check grades it.
    with mcp_server() as (url, _):
        outcome = await executor.execute(
            mcp_manifest_agent(url, "mislabel"), "ticket.classify", TICKET, LIMITS
        )
    assert outcome.ok and outcome.output == {"category": "billing", "label": 7}


async def test_a_json_rpc_error(executor: Executor) -> None:
    with mcp_server() as (url, _):
        agent = mcp_manifest_agent(url)
        # Arguments the tool's input schema refuses: the SDK answers an error result.
        outcome = await executor.execute(agent, "ticket.classify", {"body": 5}, LIMITS)
    assert outcome.code == "agent_error", outcome


async def test_an_ended_session_is_reopened_once(executor: Executor) -> None:
    with mcp_server() as (url, tap):
        agent = mcp_manifest_agent(url)
        assert (await executor.execute(agent, "ticket.classify", TICKET, LIMITS)).ok
        session = tap.seen[-1]["headers"]["mcp-session-id"]
        # The server ends the session (as on a restart or an idle timeout): 404 for it.
        ended = httpx.delete(
            url, headers={"mcp-session-id": session, "mcp-protocol-version": "2025-06-18"}
        )
        assert ended.status_code == 200
        outcome = await executor.execute(agent, "ticket.classify", TICKET, LIMITS)
    assert outcome.ok, outcome
    assert _rpc_methods(tap)[3:] == [
        "tools/call",
        "initialize",
        "notifications/initialized",
        "tools/call",
    ]


async def test_identity_is_server_info_and_the_tool_list(executor: Executor) -> None:
    server = mcp_agent()
    with mcp_server(server) as (url, tap):
        agent = mcp_manifest_agent(url)
        identity = await executor.identify(agent, secret="tok")
        assert (identity.id, identity.version) == (SERVER_NAME, SERVER_VERSION)
        assert identity.capabilities == ("ticket.classify",)
        assert identity.compare(agent).mismatch is None and identity.card_digest is not None
        same = await executor.identify(agent)
        change_tools(server)
        changed = await executor.identify(agent)
        missing = mcp_manifest_agent(url, "gone")
        denied = await executor.identify(missing)
    assert same.card_digest == identity.card_digest
    assert changed.card_digest != identity.card_digest  # another input schema for `classify`
    assert denied.compare(missing).not_advertised == ("ticket.classify",)
    assert "tools/list" in _rpc_methods(tap)


async def test_the_tools_of_a_changed_server_are_called_as_they_are(executor: Executor) -> None:
    server = mcp_agent()
    with mcp_server(server) as (url, _):
        agent = mcp_manifest_agent(url)
        assert (await executor.execute(agent, "ticket.classify", TICKET, LIMITS)).ok
        change_tools(server)
        outcome = await executor.execute(agent, "ticket.classify", TICKET, LIMITS)
    # The input no longer fits the tool: the server refuses it, an agent_error.
    assert outcome.code == "agent_error", outcome


async def test_nothing_listening_is_unreachable(executor: Executor) -> None:
    agent = mcp_manifest_agent(f"http://127.0.0.1:{closed_port()}/mcp")
    outcome = await executor.execute(agent, "ticket.classify", TICKET, LIMITS)
    assert outcome.code == "unreachable"
    with pytest.raises(AgentUnreachable):
        await executor.identify(agent, timeout_s=5)


def test_the_manifest_maps_every_claimed_capability() -> None:
    with pytest.raises(ManifestError, match="names no MCP tool"):
        manifest_from_dict(
            mcp_manifest("http://h.example/mcp", capabilities=["ticket.classify", "a.b"])
        )
    extra = mcp_manifest("http://h.example/mcp")
    extra["mcp"]["tools"]["other.cap"] = "x"
    with pytest.raises(ManifestError, match="not a claimed capability"):
        manifest_from_dict(extra)
    bare = mcp_manifest("http://h.example/mcp")
    del bare["mcp"]
    with pytest.raises(ManifestError, match="mcp"):
        manifest_from_dict(bare)
    parsed = manifest_from_dict(mcp_manifest("http://h.example/mcp"))
    assert manifest_from_dict(parsed.to_json()) == parsed

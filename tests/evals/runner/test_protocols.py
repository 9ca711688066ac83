"""`holon eval` of an MCP agent and an OpenAI-compatible agent, end to end, on the tiny suite.

The eval runner calls through the same executor as live calls, so both
protocols are graded like any agent: the probe, the cells, the costs, the
record and its certificate. An MCP server that changes its tools after
the eval answers the next probe with another digest of its tool list,
which revokes the certificate and stales the record, as a changed A2A
card does (one mechanism: `records.IdentityRegistry.observe`).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from mcp.server.fastmcp import FastMCP

from agents import Executor, manifest_from_dict
from evals import make_plan, probe, start, work
from evals.suites import install_suite
from records import EvalCell, EvalInfo, Store
from schema.errors import Refused
from tests._servers import Tap, serve
from tests.agents.mcp_agents import change_tools, mcp_agent
from tests.agents.openai_server import MODEL, Recorder, openai_app, serve_recorded
from tests.agents.test_mcp import mcp_manifest
from tests.agents.test_openai_chat import chat_manifest
from tests.evals.suites._make import SUITE_YAML, case, make_suite

PUBLIC = [case(f"p{i}", f"Cannot log in {i}", "account") for i in range(3)]
HOLDOUT = [case(f"h{i}", f"Refund please {i}", "billing") for i in range(3)]


def _eval(
    store: Store, tmp_path: Path, manifest: dict[str, Any], suite_yaml: str = SUITE_YAML
) -> tuple[EvalInfo, list[EvalCell]]:
    install_suite(
        store, make_suite(tmp_path, suite_yaml=suite_yaml, public=PUBLIC, holdout=HOLDOUT)
    )
    store.agents.register(manifest)
    home = tmp_path / "home"
    plan = make_plan(store, manifest["id"], home=home, concurrency=3)
    probe(store, plan)  # what `holon eval` does before its first case
    info = work(store, plan, start(store, plan), home=home)
    assert info.status == "done" and info.result is not None
    return info, store.evals.cells(info.id)


@pytest.fixture
def mcp_server() -> Iterator[tuple[str, FastMCP, Tap]]:
    server = mcp_agent()
    tap = Tap(server.streamable_http_app())
    with serve(tap) as url:
        yield url + "/mcp", server, tap


def _reprobe(store: Store, manifest: dict[str, Any]) -> None:
    """A gateway probe: ask the agent who it is, keep what it said."""
    agent = manifest_from_dict(manifest)

    async def identify() -> Any:
        async with Executor() as executor:
            return await executor.identify(agent)

    check = asyncio.run(identify()).compare(agent)
    store.identities.observe(agent.id, agent.version, **check.observation())


def test_an_mcp_agent_is_evaluated_and_certified_until_its_tools_change(
    store: Store, tmp_path: Path, mcp_server: tuple[str, FastMCP, Tap]
) -> None:
    url, server, tap = mcp_server
    manifest = mcp_manifest(url)
    info, cells = _eval(store, tmp_path, manifest)
    assert len(cells) == 6 and all(c.outcome_code == "ok" and c.passed for c in cells)
    record = store.evals.current_record_with_staleness(manifest["id"], manifest["version"])
    assert record is not None and record.eval_score == 1 and record.stale is False
    envelope = store.certificates.current(manifest["id"], manifest["version"])
    assert envelope
    calls = [seen for seen in tap.seen if seen["json"] and seen["json"]["method"] == "tools/call"]
    assert len(calls) == 6

    # The same server, the same tools: nothing changes.
    _reprobe(store, manifest)
    assert store.certificates.current(manifest["id"], manifest["version"]) == envelope

    change_tools(server)
    _reprobe(store, manifest)
    with pytest.raises(Refused, match="another agent card"):
        store.certificates.current(manifest["id"], manifest["version"])
    stale = store.evals.current_record_with_staleness(manifest["id"], manifest["version"])
    assert stale is not None and stale.stale is True


def test_an_mcp_answer_that_breaks_the_output_schema_fails_its_cells(
    store: Store, tmp_path: Path, mcp_server: tuple[str, FastMCP, Tap]
) -> None:
    url, _, _ = mcp_server
    info, cells = _eval(store, tmp_path, mcp_manifest(url, "mislabel"))
    assert {c.outcome_code for c in cells} == {"ok"}
    assert not any(c.passed for c in cells)
    for cell in cells:
        assert cell.checks is not None
        failed = [c for c in cell.checks if not c.get("passed")]
        assert any("schema" in json.dumps(c) for c in failed), cell.checks


@pytest.fixture
def chat_server() -> Iterator[tuple[str, Recorder]]:
    with serve_recorded(openai_app) as served:
        yield served


def test_an_openai_chat_agent_is_evaluated_with_its_secret_and_real_token_costs(
    store: Store, tmp_path: Path, chat_server: tuple[str, Recorder]
) -> None:
    url, recorder = chat_server
    manifest = chat_manifest(f"{url}/honest/v1")
    store.agents.register(manifest)
    store.agents.set_secret(manifest["id"], "sk-eval")  # `holon agents secret set`
    info, cells = _eval(store, tmp_path, manifest)
    assert all(c.outcome_code == "ok" and c.passed for c in cells)
    # 1000 prompt tokens at $2.5/M and 200 completion tokens at $10/M: $0.0045 a case.
    assert {Decimal(c.cost_usd or "0") for c in cells} == {Decimal("0.0045")}
    assert info.result is not None
    assert Decimal(info.result["summary"]["cost_usd"]) == 6 * Decimal("0.0045")
    posts = [r for r in recorder.requests if r["path"].endswith("/chat/completions")]
    assert len(posts) == 6
    assert all((b"authorization", b"Bearer sk-eval") in r["headers"] for r in posts)
    assert all(json.loads(r["body"])["model"] == MODEL for r in posts)


def test_the_suite_cap_bites_on_the_reported_tokens(
    store: Store, tmp_path: Path, chat_server: tuple[str, Recorder]
) -> None:
    url, _ = chat_server
    capped = SUITE_YAML.replace('max_cost_usd: "0.01"', 'max_cost_usd: "0.004"')
    info, cells = _eval(store, tmp_path, chat_manifest(f"{url}/honest/v1"), capped)
    assert {(c.outcome_code, c.passed) for c in cells} == {("cost_exceeded", False)}
    assert {Decimal(c.cost_usd or "0") for c in cells} == {Decimal("0.0045")}


def test_an_openai_chat_agent_answering_as_another_model_is_refused_by_the_probe(
    store: Store, tmp_path: Path, chat_server: tuple[str, Recorder]
) -> None:
    from schema.errors import IdentityMismatch

    url, _ = chat_server
    with pytest.raises(IdentityMismatch):
        _eval(store, tmp_path, chat_manifest(f"{url}/wrong-model/v1"))


def test_an_openai_chat_agent_is_asked_for_its_suites_output_schema_live_and_in_evals(
    store: Store, tmp_path: Path, chat_server: tuple[str, Recorder]
) -> None:
    """A capability from an installed suite, not a shipped one: the response_format is the
    suite's output schema (what the cells grade and the live contract checks), not
    json_object, and a live call sends the eval's very request."""
    from gateway.live import LiveCalls, Lookups
    from tests.evals.suites._make import OUTPUT_SCHEMA

    url, recorder = chat_server
    suite_yaml = SUITE_YAML.replace("capability: ticket.classify", "capability: ticket.sort")
    manifest = {**chat_manifest(f"{url}/honest/v1"), "capabilities": ["ticket.sort"]}
    _eval(store, tmp_path, manifest, suite_yaml)
    store.mandates.grant(
        {
            "schema_version": 1,
            "id": "sorting",
            "holder": "bot",
            "capabilities": ["ticket.sort"],
            "max_cost_per_call_usd": "0.01",
        }
    )

    async def live() -> dict[str, Any]:
        async with Executor() as executor:
            calls = LiveCalls(store, executor, lookups=Lookups(store, ttl_s=0))
            return await calls.invoke("bot", manifest["id"], "ticket.sort", PUBLIC[0]["input"])

    answer = asyncio.run(live())
    assert answer["output"] == {"label": "account"}
    posts = [r for r in recorder.requests if r["path"].endswith("/chat/completions")]
    assert len(posts) == 7
    asked = {json.dumps(json.loads(r["body"])["response_format"]) for r in posts}
    assert [json.loads(text) for text in asked] == [
        {
            "type": "json_schema",
            "json_schema": {"name": "ticket_sort", "schema": OUTPUT_SCHEMA, "strict": False},
        }
    ]
    # The live call's body is byte for byte the eval cell's for the same input.
    assert posts[-1]["body"] in [r["body"] for r in posts[:-1]]

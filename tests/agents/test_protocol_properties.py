"""Any JSON an MCP or OpenAI-compatible server sends is classified: only the adapters' own
failures are raised, never a KeyError, TypeError or anything else."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from agents import manifest_from_dict
from agents._mcp import McpFailure, interpret_call, read_response, session_from, tools_page
from agents._openai import ChatFailure, read_chat
from tests.agents.test_openai_chat import chat_manifest

KEYS = [
    "jsonrpc",
    "id",
    "result",
    "error",
    "code",
    "message",
    "isError",
    "structuredContent",
    "content",
    "type",
    "text",
    "tools",
    "name",
    "nextCursor",
    "protocolVersion",
    "serverInfo",
    "version",
    "model",
    "choices",
    "refusal",
    "usage",
    "prompt_tokens",
    "completion_tokens",
    "finish_reason",
]
any_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8) | st.just("2.0"),
    lambda kids: (
        st.lists(kids, max_size=3) | st.dictionaries(st.sampled_from(KEYS), kids, max_size=5)
    ),
    max_leaves=20,
)
AGENT = manifest_from_dict(chat_manifest("http://h.example/v1"))


@settings(max_examples=300, deadline=None)
@given(document=any_json)
def test_any_completion_is_an_output_or_a_chat_failure(document: Any) -> None:
    try:
        read_chat(AGENT, document, 64)
    except ChatFailure as failure:
        assert failure.code in ("invalid_response", "agent_error")


@settings(max_examples=300, deadline=None)
@given(document=any_json, sse=st.booleans())
def test_any_mcp_message_is_classified(document: Any, sse: bool) -> None:
    text = json.dumps(document)
    body = f"event: message\ndata: {text}\n\n".encode() if sse else text.encode()
    kind = "text/event-stream" if sse else "application/json"
    for step in (
        lambda: read_response(body, kind, "rid", 64),
        lambda: interpret_call(document, 64) if isinstance(document, dict) else None,
        lambda: session_from(document, None) if isinstance(document, dict) else None,
        lambda: tools_page(document) if isinstance(document, dict) else None,
    ):
        try:
            step()
        except McpFailure as failure:
            assert failure.code in ("invalid_response", "agent_error")

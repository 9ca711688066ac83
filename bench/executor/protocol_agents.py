"""The agents of `protocols.py`, each served by uvicorn in its own process.

- `openai:app`: a zero-latency OpenAI-compatible server, a bare ASGI callable
  answering every POST with one fixed chat completion (zero_agent.fixed_answer);
- `mcp:app`: an MCP server built with the official SDK (FastMCP, stateful
  Streamable HTTP, answers as an event stream), one tool `classify`
  returning structured content: what an MCP agent in the field runs.
"""

from __future__ import annotations

import json
from typing import TypedDict

from mcp.server.fastmcp import FastMCP
from zero_agent import fixed_answer  # run with --app-dir bench/executor, as uvicorn is

MODEL = "bench-model"
COMPLETION = json.dumps(
    {
        "id": "chatcmpl-bench",
        "object": "chat.completion",
        "created": 1764547200,
        "model": MODEL,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": '{"label":"billing"}'},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 120, "completion_tokens": 8, "total_tokens": 128},
    }
).encode()
openai = fixed_answer(COMPLETION)


class Label(TypedDict):
    label: str


_server = FastMCP("bench-mcp", log_level="WARNING")
_server._mcp_server.version = "1.0.0"


@_server.tool()
def classify(subject: str, body: str = "") -> Label:
    return {"label": "billing" if "refund" in subject.lower() else "account"}


mcp = _server.streamable_http_app()

"""The agents of `protocols.py`, each served by uvicorn in its own process.

- `openai:app`: a zero-latency OpenAI-compatible server, a bare ASGI callable
  answering every POST with one fixed chat completion (zero_agent.fixed_answer);
- `mcp:app`: an MCP server built with the official SDK (FastMCP, stateful
  Streamable HTTP, answers as an event stream), one tool `classify`
  returning structured content: what an MCP agent in the field runs.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TypedDict

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from mcp.server.fastmcp import FastMCP
from zero_agent import fixed_answer  # run with --app-dir bench/executor, as uvicorn is

from bench._asgi import chat_completion

MODEL = "bench-model"
COMPLETION = chat_completion(MODEL, '{"label":"billing"}')
openai = fixed_answer(COMPLETION)


class Label(TypedDict):
    label: str


_server = FastMCP("bench-mcp", log_level="WARNING")
_server._mcp_server.version = "1.0.0"


@_server.tool()
def classify(subject: str, body: str = "") -> Label:
    return {"label": "billing" if "refund" in subject.lower() else "account"}


mcp = _server.streamable_http_app()

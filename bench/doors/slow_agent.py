"""The zero-latency agent's answer after a delay (HOLON_BENCH_AGENT_DELAY_MS, 200 ms): an
agent whose time to first byte is its thinking time, as a model's whole answer is."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "executor"))

from zero_agent import BODY, fixed_answer

DELAY_S = int(os.environ.get("HOLON_BENCH_AGENT_DELAY_MS", "200")) / 1000
_answer = fixed_answer(BODY)


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] == "http":
        await asyncio.sleep(DELAY_S)
    await _answer(scope, receive, send)

"""The example ticket-triage agent behind a kill switch, for the SIGKILL campaign.

In-process (`asgi:tests.faults._agent:app`), so the process that calls it is
the one that dies: when ``HOLON_FAULT_KILL_AT_CALL=N`` is in the environment,
the process SIGKILLs itself on its Nth invocation, mid-eval, with that cell
claimed and others in flight or answered but not yet committed. Without the
variable (the test process, the resuming workers) it is the plain example
agent, so every run grades the same answers.
"""

from __future__ import annotations

import os
import signal
from typing import Any

from examples.agents.ticket_triage import app as triage

KILL_AT_CALL = "HOLON_FAULT_KILL_AT_CALL"

_calls = 0


async def app(scope: Any, receive: Any, send: Any) -> None:
    global _calls
    if scope["type"] == "http" and scope["method"] == "POST":
        _calls += 1
        kill_at = os.environ.get(KILL_AT_CALL)
        if kill_at is not None and _calls >= int(kill_at):
            os.kill(os.getpid(), signal.SIGKILL)
    await triage(scope, receive, send)

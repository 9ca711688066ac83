"""The example ticket agent served over loopback, counting the calls that reach it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from examples.agents import ticket_triage
from tests._servers import serve


class Counting:
    """The ticket agent, counting the POSTs (calls and probes) that reach it."""

    def __init__(self) -> None:
        self.calls = 0

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["method"] == "POST":
            self.calls += 1
        await ticket_triage.app(scope, receive, send)


@contextmanager
def counting_agent() -> Iterator[tuple[Counting, str]]:
    """The counting agent and its endpoint URL (with the trailing slash)."""
    app = Counting()
    with serve(app) as url:
        yield app, url + "/"

"""A real eval of the in-process triage agent (asgi:) over the tiny suite, run to its end
here: its record, certificate and holdout budget spent, for the console's pages to show."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from gateway.service import EvalOptions, StoreService
from records import Store
from tests.gateway.console._inproc import Console, console
from tests.gateway.server._gateway import install_tiny, register_triage


def full_eval(store: Store, home: Path, agent: str, concurrency: int = 4) -> str:
    """The id of a full eval of `agent` (every suite of its capabilities), run to its end."""
    service = StoreService(store, home)
    plan = service.evals.plan(agent, EvalOptions(concurrency=concurrency, retries=0))
    view = service.evals.run(plan, None)
    assert view["status"] == "done", view
    return str(view["id"])


def run_triage(store: Store, home: Path, agent: str = "acme/ticket-triage") -> dict[str, Any]:
    """The agent's record once a full eval of it is done."""
    full_eval(store, home, agent)
    return StoreService(store, home).evals.record(agent)


@contextmanager
def triage_console(store: Store, root: Path) -> Iterator[Console]:
    """The console in-process over the tiny suite and acme's triage agent."""
    install_tiny(store, root)
    register_triage(store)
    with console(store, root / "home") as built:
        yield built

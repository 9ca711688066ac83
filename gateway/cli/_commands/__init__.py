"""Command groups; each module adds its parsers to the `holon` parser."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from gateway.cli._commands import (
    agents,
    calls,
    checks,
    config,
    db,
    evals,
    fixtures,
    practice,
    serve,
    suites,
    tokens,
)

Register = Callable[["argparse._SubParsersAction[argparse.ArgumentParser]"], None]

COMMANDS: list[Register] = [
    agents.register,
    calls.register,
    checks.register,
    config.register,
    db.register,
    evals.register,
    fixtures.register,
    practice.register,
    serve.register,
    suites.register,
    tokens.register,
]

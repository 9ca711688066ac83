"""Command groups; each module adds its parsers to the `holon` parser."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from gateway.cli._commands import (
    agents,
    calls,
    certificates,
    checks,
    config,
    db,
    evals,
    fixtures,
    keys,
    practice,
    serve,
    suites,
    tokens,
)

Register = Callable[["argparse._SubParsersAction[argparse.ArgumentParser]"], None]

COMMANDS: list[Register] = [
    agents.register,
    calls.register,
    certificates.register,
    checks.register,
    config.register,
    db.register,
    evals.register,
    fixtures.register,
    keys.register,
    practice.register,
    serve.register,
    suites.register,
    tokens.register,
]

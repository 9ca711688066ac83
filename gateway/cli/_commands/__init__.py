"""Command groups; each module adds its parsers to the `holon` parser."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from gateway.cli._commands import (
    agents,
    catalog,
    certificates,
    checks,
    config,
    db,
    doctor,
    evals,
    fixtures,
    invoke,
    keys,
    ledger,
    mandates,
    practice,
    schemas,
    serve,
    suites,
    tokens,
)

Register = Callable[["argparse._SubParsersAction[argparse.ArgumentParser]"], None]

COMMANDS: list[Register] = [
    agents.register,
    mandates.register,  # before invoke and ledger, as the reference lists them
    invoke.register,
    ledger.register,
    catalog.register,
    certificates.register,
    checks.register,
    config.register,
    db.register,
    doctor.register,
    evals.register,
    fixtures.register,
    keys.register,
    practice.register,
    schemas.register,
    serve.register,
    suites.register,
    tokens.register,
]

"""Command groups; each module adds its parsers to the `holon` parser.

A command imports and registers only its own module: `holon test` never
imports the operation table the store's commands are built from, nor their
modules' imports. `holon --help`, and a word no module registers, build them
all (argparse then lists every command).
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable

Register = Callable[["argparse._SubParsersAction[argparse.ArgumentParser]"], None]

# Each module's top-level command words, in the order `holon --help` lists them
# (tests/gateway/test_cli_startup.py checks that each module registers exactly these).
COMMANDS: dict[str, tuple[str, ...]] = {
    "agents": ("agents",),
    "mandates": ("mandates",),  # before invoke and ledger, as the reference lists them
    "invoke": ("invoke",),
    "ledger": ("ledger", "canaries"),
    "catalog": ("catalog",),
    "certificates": ("certificates",),
    "checks": ("path", "checks"),
    "config": ("config",),
    "db": ("db",),
    "doctor": ("doctor",),
    "evals": ("eval", "evals", "worker", "records"),
    "fixtures": ("fixtures",),
    "keys": ("keys",),
    "practice": ("test",),
    "schemas": ("schema",),
    "serve": ("gateway",),
    "suites": ("suites",),
    "tokens": ("tokens",),
}
_HOMES = {word: module for module, words in COMMANDS.items() for word in words}


def registrars(word: str | None = None) -> list[Register]:
    """The `register` of the module that has command `word`; every module's when `word`
    is None or no module's."""
    home = _HOMES.get(word) if word is not None else None
    modules = (home,) if home is not None else tuple(COMMANDS)
    return [importlib.import_module(f"{__name__}.{m}").register for m in modules]

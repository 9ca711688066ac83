"""A package's public names loaded on first use (PEP 562), for every package's face.

A face that imports every name it exports loads everything below it into every
process that imports one of them (`holon --help` included); with this, a name's
home module is imported when the name is first read, and kept in the package.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterable, Mapping
from typing import Any

__all__ = ["lazy_names"]


def lazy_names(
    package: str, homes: Mapping[str, str], exported: Iterable[str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The `__getattr__` and `__dir__` of `package`: each name of `homes` read from its
    home module once, then kept in the package; any other name an AttributeError."""
    namespace = sys.modules[package].__dict__
    names = frozenset(exported)

    def get(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(home), name)
        namespace[name] = value  # later reads skip this function
        return value

    def listed() -> list[str]:
        return sorted(set(namespace) | names)

    return get, listed

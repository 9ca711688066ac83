"""The base of the store's registries: `store.agents`, `store.evals`, `store.tokens` …

Each registry is one kind of thing the store keeps. It holds the store, not a
session or an engine, so that each of its reads and writes is a unit of work
of the store's own (`Store.read`, `Store.write`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from records._store import Store

__all__ = ["Registry"]


class Registry:
    def __init__(self, store: Store) -> None:
        self._store = store

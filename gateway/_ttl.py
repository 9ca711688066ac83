"""A cache whose entries live `ttl_s` and are reloaded ahead of expiry, off the request path.

A hit in the second half of an entry's life queues one background reload (on
one shared refresher thread: starting a thread would block the event loop
until it runs) and still answers from the entry, so under steady traffic a
key is read once every half TTL, never by the requests that arrive just as
it expires. An entry's expiry counts from when its load started, so nothing
older than `ttl_s` is ever served. `ttl_s` 0 caches nothing.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from gateway._loops import Loop

__all__ = ["MISS", "REFRESHES", "TtlCache"]

# Reloads of entries about to expire (idle when there is no traffic).
_REFRESHER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="holon-refresh")
# Its health, in every app of this process that caches (gateway._loops).
REFRESHES = Loop("lookup-refresh")

MISS: Any = object()


class TtlCache:
    def __init__(
        self, ttl_s: float, max_entries: int = 10_000, *, item: Callable[[Hashable], str] = repr
    ) -> None:
        """`item` names a key in the log when its reload fails (keys that are secrets
        must not be written there)."""
        self.ttl_s = ttl_s
        self.max_entries = max_entries
        self._item = item
        self._entries: dict[Hashable, tuple[float, Any]] = {}
        self._refreshing: set[Hashable] = set()

    def peek(self, key: Hashable, load: Callable[[], Any]) -> Any:
        """The fresh value of `key` (queuing a reload when it is half-way to expiry), or MISS."""
        now = time.monotonic()
        hit = self._entries.get(key)
        if hit is None or hit[0] <= now:
            return MISS
        if hit[0] - now < self.ttl_s / 2 and key not in self._refreshing:
            self._refreshing.add(key)
            _REFRESHER.submit(self._refresh, key, load)
        return hit[1]

    def put(self, key: Hashable, started: float, value: Any) -> None:
        """Keep `value`, loaded from `started` (time.monotonic()), until `started + ttl_s`."""
        if self.ttl_s > 0:
            if len(self._entries) >= self.max_entries:
                self._entries.clear()
            self._entries[key] = (started + self.ttl_s, value)

    def get(self, key: Hashable, load: Callable[[], Any]) -> Any:
        """The fresh value of `key`, loading it now on a miss."""
        value = self.peek(key, load)
        if value is MISS:
            started = time.monotonic()
            value = load()
            self.put(key, started, value)
        return value

    def clear(self) -> None:
        self._entries.clear()

    def _refresh(self, key: Hashable, load: Callable[[], Any]) -> None:
        started = time.monotonic()
        try:
            self.put(key, started, load())
        except Exception as exc:  # the entry expires as usual; the next miss reads again
            REFRESHES.failed(f"the cached {self._item(key)}", exc)
        else:
            REFRESHES.ok()
        finally:
            self._refreshing.discard(key)

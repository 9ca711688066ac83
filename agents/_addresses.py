"""Where outbound connections go: one lookup per name, judged before anything is dialled.

A guard that resolves a name itself and lets the HTTP client resolve it
again checks one set of addresses and connects to another: a name that
answers a public address first and a loopback one second (DNS rebinding)
passes the check and reaches the loopback service. So the lookup the
connection uses is the lookup the guard judges: `GuardedResolver` is the
aiohttp connector's resolver; it asks its base resolver once, hands every
address to the guard, and returns exactly those addresses, which are all the
connector dials. The name stays the request's Host and TLS server name.

An IP literal is dialled without a lookup (aiohttp never asks the resolver
for one), so the transport judges a literal host itself
(`agents._transports`), with the same guard.

A name that does not resolve fails the connection (`unreachable`); it is
never a reason to let a connection through.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Sequence
from typing import Protocol

from agents._aiohttp import AbstractResolver, ResolveResult

__all__ = ["Address", "AddressGuard", "GuardedResolver", "literal_address"]

Address = ipaddress.IPv4Address | ipaddress.IPv6Address


class AddressGuard(Protocol):
    """Judges where a connection to `host`:`port` would go, before it is dialled.

    Raises `schema.errors.Refused` to forbid the connection (it propagates
    out of `Executor.execute`); returns to allow it. `addresses` is every
    address the name resolved to (one, for an IP literal): the connection
    goes to one of them and nowhere else.
    """

    def __call__(self, host: str, port: int, addresses: Sequence[Address]) -> None: ...


def literal_address(host: str) -> Address | None:
    """The address `host` is when it is an IP literal (brackets allowed), else None."""
    text = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


class GuardedResolver(AbstractResolver):
    """An aiohttp resolver: `base` looks the name up once, `guard` judges every address.

    `base` defaults to aiohttp's `ThreadedResolver` (the system's
    getaddrinfo, in a thread), created on first use inside the running loop.
    A failed lookup, an empty answer or an answer that is not an address is
    an `OSError` (the connector makes that a connection error: `unreachable`).
    """

    def __init__(self, guard: AddressGuard | None, base: AbstractResolver | None = None) -> None:
        self._guard = guard
        self._base = base

    def _resolver(self) -> AbstractResolver:
        if self._base is None:
            from aiohttp import ThreadedResolver

            self._base = ThreadedResolver()
        return self._base

    async def lookup(
        self, host: str, port: int, family: socket.AddressFamily = socket.AF_UNSPEC
    ) -> list[tuple[ResolveResult, Address]]:
        """What `host` resolves to, each answer with its parsed address (unjudged)."""
        answers = await self._resolver().resolve(host, port, family=family)
        if not answers:
            raise OSError(f"{host} resolved to no address")
        parsed: list[tuple[ResolveResult, Address]] = []
        for answer in answers:
            address = literal_address(str(answer["host"]))
            if address is None:
                raise OSError(f"{host} resolved to {str(answer['host'])[:100]!r}, not an address")
            parsed.append((answer, address))
        return parsed

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        answers = await self.lookup(host, port, family)
        if self._guard is not None:
            # All or nothing: a name that answers both a permitted and a forbidden
            # address is refused whole, never trimmed to its permitted part.
            self._guard(host, port, [address for _, address in answers])
        return [answer for answer, _ in answers]

    async def close(self) -> None:
        if self._base is not None:
            await self._base.close()

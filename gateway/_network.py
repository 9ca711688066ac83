"""Which network addresses the gateway service may call agents at (GATEWAY.md, safety).

An agent registered through the API names any URL it likes; without a
policy it could point the gateway at its own loopback services or a cloud
metadata endpoint. The check runs when connecting (the executor's resolve
guard), so a name that re-resolves to a private address later (DNS
rebinding) is refused then too, and once at registration for a clear error.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from dataclasses import dataclass
from urllib.parse import urlsplit

from schema.errors import Refused, UsageError

__all__ = ["NetworkPolicy", "parse_networks"]

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Address = ipaddress.IPv4Address | ipaddress.IPv6Address


def parse_networks(text: str) -> tuple[bool, tuple[Network, ...]]:
    """(allow everything?, extra allowed networks) from the `agent_networks` setting."""
    value = text.strip().lower()
    if value == "any":
        return True, ()
    if value in ("public", ""):
        return False, ()
    networks: list[Network] = []
    for part in value.split(","):
        try:
            networks.append(ipaddress.ip_network(part.strip(), strict=False))
        except ValueError:
            raise UsageError(
                f"HOLON_AGENT_NETWORKS: {part.strip()!r} is not a network",
                hint="public, any, or CIDRs such as 127.0.0.0/8,10.0.0.0/8",
            ) from None
    return False, tuple(networks)


def _special(address: Address) -> bool:
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return not address.is_global or address.is_multicast


@dataclass(frozen=True)
class NetworkPolicy:
    allow_all: bool
    allowed: tuple[Network, ...]

    @classmethod
    def from_setting(cls, text: str) -> NetworkPolicy:
        allow_all, allowed = parse_networks(text)
        return cls(allow_all, allowed)

    def permits(self, address: Address) -> bool:
        if self.allow_all or not _special(address):
            return True
        return any(address in network for network in self.allowed)

    async def check(self, host: str, port: int) -> None:
        """Raise Refused unless every address `host` resolves to is permitted."""
        if self.allow_all:
            return
        try:
            infos = await asyncio.get_running_loop().getaddrinfo(
                host, port, type=socket.SOCK_STREAM
            )
        except OSError:
            return  # unresolvable: the connection fails as `unreachable`
        for info in infos:
            address = ipaddress.ip_address(info[4][0])
            if not self.permits(address):
                raise Refused(
                    f"agent address {address} ({host}) is in a network the gateway may not call",
                    hint="an operator allows it with HOLON_AGENT_NETWORKS",
                    details={"host": host, "address": str(address)},
                )

    async def check_url(self, url: str) -> None:
        parts = urlsplit(url)
        if parts.hostname:
            default = 443 if parts.scheme == "https" else 80
            await self.check(parts.hostname, parts.port or default)

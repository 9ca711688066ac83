"""Which network addresses the gateway service may call agents at (docs/gateway.md, "Agents at
private addresses").

An agent registered through the API names any URL it likes; without a
policy it could point the gateway at its own loopback services or a cloud
metadata endpoint. `NetworkPolicy.judge` is the executor's address guard
(`agents.AddressGuard`): it sees every address a name resolved to in the
very lookup the connection then uses, so what it judged is where the
connection goes (a name that re-resolves somewhere private, DNS rebinding,
is judged on what it answers then). Registration judges once more, up
front, for a clear error.

One function judges an address, at registration and when connecting. IPv6
forms that stand for an IPv4 address are judged by that IPv4 address:
IPv4-mapped (`::ffff:a.b.c.d`), IPv4-translated (`::ffff:0:a.b.c.d`),
IPv4-compatible (`::a.b.c.d`), NAT64's well-known prefix
(`64:ff9b::/96`), 6to4 (`2002::/16`) and Teredo (`2001::/32`: both the
server and the client address). Site-local (`fec0::/10`) and the local-use
NAT64 prefix (`64:ff9b:1::/48`, RFC 8215: where the IPv4 address sits in it
depends on the prefix length its site chose) are refused.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from schema.errors import Refused, UsageError

__all__ = ["NetworkPolicy", "embedded_ipv4", "parse_networks"]

log = logging.getLogger(__name__)

# How long a registration waits for its host's lookup (a hostile name server may stall).
LOOKUP_TIMEOUT_S = 5.0

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
# agents.Address, spelled out: the settings read this module at every start-up, and
# importing `agents` would load the HTTP stack for commands that never call an agent.
Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Lookup = Callable[[str, int], Awaitable[list[Address]]]

_V4 = ipaddress.IPv4Network
_V6 = ipaddress.IPv6Network
_LOW32 = 0xFFFFFFFF

# Forms that embed the IPv4 address a connection to them reaches, in its low 32 bits.
_MAPPED = _V6("::ffff:0:0/96")
_TRANSLATED = _V6("::ffff:0:0:0/96")
_COMPATIBLE = _V6("::/96")
_NAT64 = _V6("64:ff9b::/96")

# Never public, whatever the Python version's tables say (older ones call some global).
_SPECIAL = (
    _V4("0.0.0.0/8"),
    _V4("192.0.0.0/24"),
    _V4("224.0.0.0/4"),
    _V4("240.0.0.0/4"),
    _V6("fec0::/10"),  # site-local (deprecated, but routed where it is configured)
    _V6("64:ff9b:1::/48"),  # local-use NAT64
    _V6("3fff::/20"),  # documentation (RFC 9637)
    _V6("5f00::/16"),  # SRv6 SIDs (RFC 9602)
    _V6("ff00::/8"),  # multicast
)


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


def embedded_ipv4(address: ipaddress.IPv6Address) -> tuple[ipaddress.IPv4Address, ...]:
    """The IPv4 addresses an IPv6 address stands for (what a connection to it would
    reach), or () when it is an IPv6 address of its own."""
    low = ipaddress.IPv4Address(int(address) & _LOW32)
    if address in _MAPPED or address in _TRANSLATED or address in _NAT64:
        return (low,)
    if address in _COMPATIBLE:
        # :: and ::1 are IPv6's own unspecified and loopback addresses.
        return () if int(address) <= 1 else (low,)
    if address.sixtofour is not None:
        return (address.sixtofour,)
    if address.teredo is not None:
        return address.teredo  # (server, client): the client's is unobfuscated here
    return ()


def _public(address: Address) -> bool:
    return address.is_global and not address.is_multicast and not _listed(address, _SPECIAL)


def _listed(address: Address, networks: Sequence[Network]) -> bool:
    return any(address.version == n.version and address in n for n in networks)


@dataclass(frozen=True)
class NetworkPolicy:
    allow_all: bool
    allowed: tuple[Network, ...]

    @classmethod
    def from_setting(cls, text: str) -> NetworkPolicy:
        allow_all, allowed = parse_networks(text)
        return cls(allow_all, allowed)

    def permits(self, address: Address) -> bool:
        """Whether the gateway may connect to `address`: listed, else public (an IPv6
        address that stands for IPv4 addresses: if every one of them is permitted)."""
        if self.allow_all or _listed(address, self.allowed):
            return True
        if isinstance(address, ipaddress.IPv6Address):
            inner = embedded_ipv4(address)
            if inner:
                return all(self.permits(v4) for v4 in inner)
        return _public(address)

    def judge(self, host: str, port: int, addresses: Sequence[Address]) -> None:
        """The executor's address guard: Refused unless every address is permitted
        (a name that answers one forbidden address is refused whole)."""
        for address in addresses:
            if not self.permits(address):
                raise Refused(
                    f"agent address {address} ({host[:255]}) is in a network the gateway "
                    "may not call",
                    hint="an operator allows it with HOLON_AGENT_NETWORKS",
                    details={"host": host[:255], "port": port, "address": str(address)},
                )

    async def check_url(self, url: str, lookup: Lookup) -> None:
        """At registration: Refused when the URL's host resolves to a forbidden address.

        A name that does not resolve (yet), or not within `LOOKUP_TIMEOUT_S`,
        is let through: calls to it are judged on what it resolves to then,
        and fail as `unreachable` while it resolves to nothing.
        """
        if self.allow_all:
            return
        # The manifest's one endpoint parser (imported here: agents loads the HTTP stack).
        from agents import EndpointError, parse_endpoint

        try:
            endpoint = parse_endpoint(url)
        except EndpointError:  # the manifest's own check names the problem
            return
        if endpoint.address is not None:
            self.judge(endpoint.host, endpoint.port, [endpoint.address])
            return
        port = endpoint.port
        try:
            async with asyncio.timeout(LOOKUP_TIMEOUT_S):
                addresses = await lookup(endpoint.host, port)
        except (OSError, TimeoutError) as exc:
            log.info("agent host %s does not resolve (yet): %r", endpoint.host[:255], exc)
            return
        self.judge(endpoint.host, port, addresses)

"""What an agent's http(s) endpoint may be: the one parser, at every door and every dial.

Three parsers used to read an endpoint's host: `urllib.parse` at
registration, httpx's when a call was prepared, and the C resolver's
`getaddrinfo`/`inet_aton` when the name was looked up. They disagree:
`0177.0.0.1`, `0x7f.1`, `127.1` and `2130706433` are 127.0.0.1 to the C
resolver, an error to httpx (an uncaught one: a 500), and a name to
`ipaddress`, so a policy that judged "the name" and a resolver that dialled
"the number" looked at different things. So registration accepts only
spellings all of them read alike, and the transport parses each request URL
with the same function before anything is dialled:

- the scheme is `http` or `https`; no userinfo, no fragment; nothing but
  printable ASCII (no whitespace, no backslash, no percent sign in the
  host: what one parser strips or decodes another keeps);
- the host is a canonical IPv4 literal (four decimal parts 0-255 without
  leading zeros), or a bracketed IPv6 literal (no zone id: `%25eth0` names
  an interface of the calling host, not an address), or a DNS name: labels of letters, digits and
  hyphens (1-63 characters, no hyphen at either end, 253 in all), no
  trailing dot, and a last label that is not a number (all digits, or
  `0x` hex) - a name that ends in a number is an IPv4 form to `inet_aton`
  (WHATWG's URL standard reads it so too). A name outside ASCII is written
  in its IDNA form (`xn--`).
- a port, when given, is 1-65535 in decimal without leading zeros.

IPv6 literals are taken in any spelling RFC 4291 allows, neither rewritten
nor refused for not being RFC 5952's: IPv6 text has one strict grammar,
which `ipaddress`, httpx and `inet_pton` read alike (no octal, no short
forms; a dotted IPv4 tail without leading zeros), so every spelling is one
address, and the policy judges that address (`::ffff:127.0.0.1` is
127.0.0.1). Rewriting would store a manifest nobody wrote (the endpoint is
part of what an org signs and the store digests); refusing would refuse the
mixed form RFC 5952 itself recommends for IPv4-mapped addresses.

`EndpointError` says which form was found and what was expected; the
manifest turns it into a `ManifestError` at the `endpoint` path, the
transport into a refusal of the call.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from urllib.parse import urlsplit

from agents._addresses import Address

__all__ = ["Endpoint", "EndpointError", "parse_endpoint"]

_DIGITS = frozenset("0123456789")
_HEX = _DIGITS | frozenset("abcdefABCDEF")
_LDH = _DIGITS | frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-")


# Plain character checks, not `str.isdigit()`/`int()` (they take Unicode digits) nor regular
# expressions (agent text is matched with RE2 only; these few rules need none).
def _decimal(text: str) -> bool:
    return bool(text) and all(c in _DIGITS for c in text)


def _canonical_octet(text: str) -> bool:
    return _decimal(text) and len(text) <= 3 and (text == "0" or text[0] != "0") and int(text) < 256


def _canonical_ipv4(host: str) -> bool:
    parts = host.split(".")
    return len(parts) == 4 and all(_canonical_octet(p) for p in parts)


def _number(label: str) -> bool:
    """Whether `label` is a number to `inet_aton`: decimal (octal with a leading 0) or 0x hex."""
    if label[:2].lower() == "0x":
        return all(c in _HEX for c in label[2:])
    return _decimal(label)


def _ldh_label(label: str) -> bool:
    return (
        0 < len(label) <= 63
        and all(c in _LDH for c in label)
        and not label.startswith("-")
        and not label.endswith("-")
    )


def _canonical_port(text: str) -> bool:
    return _decimal(text) and text[0] != "0" and len(text) <= 5 and int(text) <= 65535


EXPECTED_HOST = (
    "a DNS name (letters, digits, '-'; IDNA 'xn--' form outside ASCII), a dotted-quad "
    "IPv4 address such as 192.0.2.1, or a bracketed IPv6 address such as [2001:db8::1]"
)


class EndpointError(ValueError):
    """The endpoint is not one every parser reads alike; `str()` names the form and the rule."""


@dataclass(frozen=True, slots=True)
class Endpoint:
    """A parsed http(s) endpoint: `host` in lower case (an IPv6 one without brackets)."""

    scheme: str
    host: str
    port: int
    address: Address | None  # the IP literal the host is, None for a DNS name


def parse_endpoint(url: str) -> Endpoint:
    """Parse an http(s) URL by the one rule (module docstring), or raise EndpointError."""
    if not url or not all("!" <= c <= "~" for c in url):
        raise EndpointError(
            "the URL holds whitespace, control or non-ASCII characters; "
            "write it in printable ASCII (a name outside ASCII in its IDNA 'xn--' form)"
        )
    if "\\" in url:
        raise EndpointError("a backslash is not allowed in the URL (parsers read it differently)")
    scheme, sep, rest = url.partition("://")
    if not sep or scheme.lower() not in ("http", "https"):
        raise EndpointError("expected an http(s) URL with a host")
    end = min((i for i in (rest.find(c) for c in "/?#") if i >= 0), default=len(rest))
    netloc = rest[:end]
    if "@" in netloc:
        raise EndpointError(
            "credentials in the URL are not allowed; set a secret with 'holon agents secret set'"
        )
    if "#" in url:
        raise EndpointError("a URL fragment is not allowed")
    host, port_text = _split_netloc(netloc)
    if port_text is None:
        port = 443 if scheme.lower() == "https" else 80
    elif _canonical_port(port_text):
        port = int(port_text)
    else:
        raise EndpointError(
            f"port {port_text[:20]!r} is not a port: expected 1 to 65535 in decimal, "
            "without leading zeros"
        )
    address = _host_address(host)
    try:  # what urllib (the manifest's other checks, the A2A origin) makes of it must agree
        parts = urlsplit(url)
        same = parts.hostname == _bare(host) and (parts.port or port) == port
    except ValueError:
        same = False
    if not same:
        raise EndpointError(f"the URL's host and port do not read alike to every parser: {url!r}")
    return Endpoint(scheme.lower(), _bare(host), port, address)


def _bare(host: str) -> str:
    return host[1:-1].lower() if host.startswith("[") else host.lower()


def _split_netloc(netloc: str) -> tuple[str, str | None]:
    if netloc.startswith("["):
        end = netloc.find("]")
        if end < 0:
            raise EndpointError("an IPv6 address opened with '[' is not closed with ']'")
        host, after = netloc[: end + 1], netloc[end + 1 :]
        if after and not after.startswith(":"):
            raise EndpointError(f"unexpected {after[:20]!r} after the IPv6 address")
        return host, after[1:] if after else None
    host, colon, port = netloc.partition(":")
    return host, port if colon else None


def _host_address(host: str) -> Address | None:
    """The IP literal `host` is, None for a valid DNS name; EndpointError for anything else."""
    if not host:
        raise EndpointError(f"the URL has no host: expected {EXPECTED_HOST}")
    if host.startswith("["):
        return _ipv6(host[1:-1])
    if "%" in host:
        raise EndpointError(
            f"host {host[:100]!r} is percent-encoded: write it plainly, as {EXPECTED_HOST}"
        )
    if _canonical_ipv4(host):
        return ipaddress.IPv4Address(host)
    labels = host.split(".")
    if labels[-1] == "":
        raise EndpointError(
            f"host {host[:100]!r} ends with a dot: write the name without its trailing dot"
        )
    if _number(labels[-1]):
        raise EndpointError(
            f"host {host[:100]!r} is {_numeric_form(labels)}: a host ending in a number is an "
            f"IPv4 form to the system resolver and not to other parsers; expected {EXPECTED_HOST}"
        )
    if len(host) > 253 or not all(_ldh_label(label) for label in labels):
        raise EndpointError(f"host {host[:100]!r} is not a valid name: expected {EXPECTED_HOST}")
    return None


def _numeric_form(labels: list[str]) -> str:
    """What kind of non-canonical IPv4 spelling a host ending in a number is (for the error)."""
    numbers = [_number(label) for label in labels]
    if not all(numbers):
        return "a name ending in a number"
    if any(label.lower().startswith("0x") for label in labels):
        return "an IPv4 address in hexadecimal"
    if any(len(label) > 1 and label.startswith("0") for label in labels):
        return "an IPv4 address with leading zeros (octal to the system resolver)"
    if len(labels) == 1:
        return "an IPv4 address written as one integer"
    if len(labels) < 4:
        return f"a short IPv4 address ({len(labels)} parts, not 4)"
    return "not a dotted-quad IPv4 address (parts over 255, or more than 4)"


def _ipv6(text: str) -> ipaddress.IPv6Address:
    if "%" in text:
        raise EndpointError(
            f"IPv6 address [{text[:100]}] has a zone id: a zone names an interface of this "
            "host, not an address an agent can have; expected [address] without '%'"
        )
    try:
        address = ipaddress.IPv6Address(text)
    except ValueError:
        raise EndpointError(
            f"[{text[:100]}] is not an IPv6 address: expected {EXPECTED_HOST}"
        ) from None
    return address

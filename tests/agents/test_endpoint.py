"""The one endpoint parser (`agents._endpoint`) against every address form the red team used,
and generated ones: each is refused with a clear error, or read as exactly what the C resolver
and the HTTP client read, and judged on that.

The oracle for an accepted host: an IP literal is the address `getaddrinfo` (numeric host)
gives for it, and the host httpx and yarl send to; a name is no number to `getaddrinfo`,
`inet_aton` or `ipaddress` (so only the guarded resolver's lookup gives it an address).
For a refused one: `EndpointError` from the parser, `ManifestError` at `$.endpoint` from the
manifest, `Refused` from the transport - never any other exception.
"""

from __future__ import annotations

import ipaddress
import socket

import httpx
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from yarl import URL

from agents import EndpointError, manifest_from_dict, parse_endpoint
from agents._transports import target
from gateway._network import NetworkPolicy
from schema.errors import ManifestError, Refused
from tests._manifests import http_manifest

PUBLIC = NetworkPolicy.from_setting("public")

# (host as written in the URL, accepted?) - every form of the red team's, then more of each.
FORMS: list[tuple[str, bool]] = [
    ("0177.0.0.1", False),  # octal (the red team's)
    ("010.0.0.1", False),  # octal: 8.0.0.1 to inet_aton
    ("0x7f.1", False),  # hex, short
    ("0x7f.0.0.1", False),  # hex
    ("0x7f000001", False),  # hex integer
    ("127.1", False),  # short
    ("127.0.1", False),
    ("2130706433", False),  # integer
    ("017700000001", False),  # octal integer
    ("0x7f.0.0.01", False),  # mixed
    ("127.0x0.0.1", False),
    ("127.0.0.01", False),  # a leading zero
    ("00127.0.0.1", False),
    ("256.0.0.1", False),  # out of range
    ("1.2.3.4.5", False),
    ("08.0.0.1", False),
    ("127.0.0.1.", False),  # trailing dot
    ("localhost.", False),
    ("example.com.", False),
    ("a.123", False),  # a name ending in a number
    ("0x", False),
    ("[fe80::1%25eth0]", False),  # zone ids
    ("[fe80::1%eth0]", False),
    ("[::1%251]", False),
    ("[127.0.0.1]", False),
    ("[::ffff:127.0.0.01]", False),
    ("[1::2::3]", False),
    ("%31%32%37.0.0.1", False),  # percent-encoding
    ("127.0.0.1%00", False),
    ("loc%61lhost", False),
    ("١٢٧.0.0.1", False),  # Arabic-Indic digits
    ("１２７.0.0.1", False),  # fullwidth digits
    ("127。0。0。1", False),  # ideographic full stops
    ("127．0．0．1", False),  # fullwidth full stops
    ("bücher.example", False),  # IDNA: written in its xn-- form
    ("good@127.0.0.1", False),  # userinfo
    ("good:pw@127.0.0.1", False),
    ("127.0.0.1\\@good.example", False),  # backslashes
    ("good.example\\.evil", False),
    ("127.0.0.1 ", False),  # whitespace
    (" 127.0.0.1", False),
    ("127.0.0.1\t", False),
    ("127.0.0.1\n", False),
    ("exa mple.com", False),
    ("-bad.example", False),
    ("bad-.example", False),
    ("a..b", False),
    ("a" * 64 + ".example", False),
    ("under_score.example", False),
    ("", False),
    ("[", False),
    ("127.0.0.1", True),  # canonical: judged (refused under `public`) by the policy
    ("10.0.0.1", True),
    ("8.8.8.8", True),
    ("0.0.0.0", True),
    ("255.255.255.255", True),
    ("[::1]", True),
    ("[::ffff:127.0.0.1]", True),  # IPv4-mapped: judged as 127.0.0.1
    ("[::ffff:7f00:1]", True),
    ("[::127.0.0.1]", True),  # IPv4-compatible
    ("[0:0:0:0:0:ffff:7f00:1]", True),
    ("[2001:DB8::1]", True),
    ("[2606:4700:4700::1111]", True),
    ("localhost", True),
    ("agent.test", True),
    ("Example.COM", True),
    ("xn--bcher-kva.example", True),
    ("1.example", True),
    ("0x7f.example", True),
    ("a-b.c-d.example", True),
    ("a" * 63 + ".example", True),
]


def _url(host: str, port: str = ":8080") -> str:
    return f"http://{host}{port}/agent"


def _check(url: str) -> bool:
    """True when accepted (and read alike everywhere), False when refused cleanly."""
    try:
        endpoint = parse_endpoint(url)
    except EndpointError as exc:
        assert str(exc)
        with pytest.raises(ManifestError) as refused:
            manifest_from_dict(http_manifest("acme/forms", url))
        assert refused.value.location is not None
        assert refused.value.location.path == "$.endpoint"
        with pytest.raises(Refused):
            target(url)
        return False
    manifest_from_dict(http_manifest("acme/forms", url))  # the same rule: accepted there too
    to = target(url)
    # What goes on the wire (`.host` of httpx and yarl shows an IDNA name decoded).
    hosts = {to.url.raw_host, endpoint.host, httpx.URL(url).raw_host.decode(), URL(url).raw_host}
    if endpoint.address is None:
        assert hosts == {endpoint.host}
    else:  # yarl prints an IPv6 address compressed: the same address
        assert {ipaddress.ip_address(h) for h in hosts} == {endpoint.address}
    assert (to.port or (443 if to.scheme == "https" else 80)) == endpoint.port
    if endpoint.address is not None:
        dialled = socket.getaddrinfo(endpoint.host, endpoint.port, flags=socket.AI_NUMERICHOST)
        assert {ipaddress.ip_address(a[4][0]) for a in dialled} == {endpoint.address}
        PUBLIC.permits(endpoint.address)  # judged on exactly that address
    else:
        with pytest.raises(socket.gaierror):
            socket.getaddrinfo(endpoint.host, endpoint.port, flags=socket.AI_NUMERICHOST)
        with pytest.raises(OSError):
            socket.inet_aton(endpoint.host)
        with pytest.raises(ValueError):
            ipaddress.ip_address(endpoint.host)
    return True


@pytest.mark.parametrize(("host", "accepted"), FORMS)
def test_every_form_is_refused_or_read_as_the_resolver_reads_it(host: str, accepted: bool) -> None:
    assert _check(_url(host)) is accepted
    assert _check(_url(host, "")) is accepted


def test_the_refusal_names_the_form_and_what_was_expected() -> None:
    with pytest.raises(ManifestError) as octal:
        manifest_from_dict(http_manifest("acme/forms", "http://0177.0.0.1:8080/"))
    assert "leading zeros" in octal.value.message and "dotted-quad" in octal.value.message
    for host, words in [
        ("0x7f.1", "hexadecimal"),
        ("127.1", "short"),
        ("2130706433", "one integer"),
        ("[fe80::1%25eth0]", "zone id"),
        ("a.b.", "trailing dot"),
        ("%31.0.0.1", "percent-encoded"),
        ("good@a.b", "credentials"),
    ]:
        with pytest.raises(EndpointError, match=words):
            parse_endpoint(_url(host))


def test_ports_are_decimal_without_leading_zeros() -> None:
    for port in (":0", ":080", ":65536", ":８０", ":0x50", ":-1", ":"):
        with pytest.raises(EndpointError):
            parse_endpoint(_url("a.example", port))
    assert parse_endpoint(_url("a.example", ":65535")).port == 65535
    assert parse_endpoint("https://a.example/").port == 443


# -- generated forms -----------------------------------------------------------------------

_DIGIT_SETS = ["0123456789", "٠١٢٣٤٥٦٧٨٩", "０１２３４５６７８９"]


@st.composite
def _numbers(draw: st.DrawFn) -> str:
    value = draw(st.integers(min_value=0, max_value=2**32 - 1))
    form = draw(st.sampled_from(["dec", "oct", "hex", "zeros", "unicode"]))
    if form == "oct":
        return "0" + format(value, "o")
    if form == "hex":
        return draw(st.sampled_from(["0x", "0X"])) + format(value, "x")
    if form == "zeros":
        return "0" * draw(st.integers(1, 3)) + str(value)
    if form == "unicode":
        digits = draw(st.sampled_from(_DIGIT_SETS))
        return "".join(digits[int(c)] for c in str(value))
    return str(value)


_labels = st.one_of(
    _numbers(),
    st.integers(0, 255).map(str),
    st.from_regex(r"[a-z0-9]([a-z0-9-]{0,8}[a-z0-9])?", fullmatch=True),
)
_dots = st.sampled_from([".", ".", ".", "。", "．", "%2e"])


@st.composite
def _hosts(draw: st.DrawFn) -> str:
    labels = draw(st.lists(_labels, min_size=1, max_size=5))
    host = labels[0]
    for label in labels[1:]:
        host += draw(_dots) + label
    decoration = draw(
        st.sampled_from(
            ["", "", "", "trailing dot", "userinfo", "zone", "mapped", "space", "backslash"]
        )
    )
    if decoration == "trailing dot":
        host += "."
    elif decoration == "userinfo":
        host = "good@" + host
    elif decoration == "zone":
        host = f"[fe80::1%25{host}]"
    elif decoration == "mapped":
        host = f"[::ffff:{host}]"
    elif decoration == "space":
        host += draw(st.sampled_from([" ", "\t", "\u00a0", "\u3000"]))
    elif decoration == "backslash":
        host = "good\\@" + host
    return host


@settings(max_examples=400, deadline=None)
@given(host=st.one_of(_hosts(), st.text(max_size=30)))
@example(host="0177.0.0.1")
@example(host="[::ffff:0177.0.0.1]")
def test_generated_forms_are_refused_or_read_alike(host: str) -> None:
    _check(_url(host))


def test_an_a2a_cards_url_the_rule_refuses_falls_back_to_the_endpoint() -> None:
    """A card is the agent's word: its odd interface URL must not make a call raise."""
    from agents._a2a import target_from_card

    endpoint = "http://agent.example:8080/a2a"
    for url in ("/a2a path", "/a2a\\x", "/ä", "http://agent.example:8080/x y"):
        card = {"url": url, "protocolVersion": "0.3"}
        assert target_from_card(card, endpoint).url == endpoint, url
    good = {"url": "/v1/a2a", "protocolVersion": "0.3"}
    assert target_from_card(good, endpoint).url == "http://agent.example:8080/v1/a2a"

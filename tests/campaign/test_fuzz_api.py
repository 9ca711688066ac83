"""Fuzzing every route of the gateway's API with hostile values: no 5xx, one error shape.

Each draw is one request to one route of the route table (`ENDPOINTS`), as
an operator, an org or a caller, through the app in-process (httpx's ASGI
transport, the app's lifespan entered): path parameters, query parameters
and a JSON body made of valid values and of lone surrogates, 5,000-digit
integers, huge exponents, "NaN" / "sNaN" / "Infinity" / "-0" as strings and
as raw JSON numbers, malformed URLs, control characters, very long strings
and wrong types, in valid bodies or in place of them. Every answer must be
below 500 (an agent's failure on an invoke, 502/504 with its outcome code,
is the only 5xx allowed: it is the agent's answer, not ours), and every
error body must be exactly ``{"error": {"code", "message", "details"}}``.

Schemathesis (tests/gateway/server/test_schemathesis.py) generates what the
OpenAPI document describes; this one generates what an attacker sends.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import ExitStack
from decimal import Decimal
from pathlib import Path
from typing import Any
from urllib.parse import quote

import anyio.from_thread
import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from agents import load_manifest
from gateway.server import ENDPOINTS, create_app
from gateway.settings import Settings
from gateway.web import Endpoint
from records import new_key, open_store
from schema import jsontext
from tests.campaign._mutate import ODD_SCALARS, fuzz_settings
from tests.campaign._tally import record
from tests.gateway.server._gateway import (
    PATH_VALUES,
    TRIAGE,
    install_tiny,
    mandate,
    register_triage,
)

CAMPAIGN = "gateway API"
ROLES = ("operator", "org:acme", "caller:finance-bot")
QUICK = 16  # draws per route in the quick pass (34 routes: about 550 requests)
LONG = 120  # draws per route in the long pass
ON_POSTGRES = 20  # draws per route on PostgreSQL (NUL in text, 32-bit integers)
AGENT_OUTCOMES = {
    "agent_error",
    "agent_unreachable",
    "agent_protocol",
    "timeout",
    "invalid_output",  # its output broke the capability's output schema (issue 14)
}


class Raw(str):
    """JSON text put in the body as is (a number Python will not write, an invalid literal)."""


def _refused_at_loads(text: str) -> bool:
    try:
        jsontext.loads(text)
    except ValueError:
        return True
    return False


# Exponents this large are written out digit by digit on the way out (a
# billion zeros): bounding them at loads is schema/jsontext.py's work, under
# way elsewhere. They join the fuzz as soon as loads refuses them.
HUGE_EXPONENTS = [Raw(t) for t in ("1e999999999", "1E-999999999") if _refused_at_loads(t)]
RAW_NUMBERS = [
    *HUGE_EXPONENTS,
    Raw("1" * 5000),
    Raw("-" + "9" * 5000),
    Raw("1e4000"),
    Raw("1E-4000"),
    Raw("-0"),
    Raw("-0.0"),
    Raw("0." + "0" * 4000 + "1"),
    Raw("NaN"),
    Raw("Infinity"),
    Raw("-Infinity"),
]
HOSTILE_STRINGS = [
    "\ud800",
    "\udfff",
    "a\ud800b",
    "\x00",
    "x\x00y",
    "\x1b[31mred",
    "\r\nHost: evil.example",
    "\u202e",
    "NaN",
    "sNaN",
    "Infinity",
    "-Infinity",
    "-0",
    "1e999999999",
    "1E-999999999",
    "9" * 5000,
    "99999999999999999999999",
    "-1",
    "0",
    "1.5",
    "²",
    "١",
    "http://[::1/",
    "http://127.0.0.1:99999/",
    "http://user:pass@agents.example/",
    "javascript:alert(1)",
    "asgi:os:system",
    "../../etc/passwd",
    "%00",
    "",
    " ",
    "a" * 5000,
    "é" * 2000,
]
ODD_VALUES: list[Any] = [
    *ODD_SCALARS,
    Decimal("1E+400"),
    Decimal("0.1"),
    [],
    {},
    ["\ud800"],
    {"\ud800": 1},
    {"": None},
    [[[[[[[[[[1]]]]]]]]]],
]
VALID = {**PATH_VALUES, "mandate": "finance-tickets"}  # a mandate the store holds
VALID_QUERY = {
    "limit": "10",
    "version": "1",
    "min_eval_score": "0.5",
    "include_disabled": "true",
    "include_revoked": "true",
    "format": "md",
    "audience": "operator",
    "decision": "allow",
    "agent": "acme/ticket-triage",
    "allow_mismatch": "true",
}


def _manifest() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(jsontext.dumps(load_manifest(TRIAGE).to_json()))
    data.update(
        id="acme/fuzzed", protocol="holon-http", endpoint="http://127.0.0.1:9/", version="1.0.0"
    )
    return data


def _bodies() -> dict[str, Any]:
    """A valid body per route that takes one: the mutations start from these."""
    invoke = {"capability": "ticket.classify", "input": {"subject": "hi", "body": "refund"}}
    return {
        "POST /v1/agents": _manifest(),
        "PUT /v1/agents/{org}/{name}/secret": {"secret": "s3cret"},
        "POST /v1/agents/{org}/{name}/invoke": invoke,
        "POST /v1/capabilities/{capability}/invoke": invoke,
        "POST /v1/mandates": json.loads(jsontext.dumps(mandate(id="fuzzed"))),
        "POST /v1/mandates/{mandate}/check": {
            "agent": "acme/ticket-triage",
            "capability": "ticket.classify",
        },
        "POST /v1/evals": {"agent": "acme/ticket-triage", "dry_run": True, "max_cost_usd": "5"},
        "POST /v1/chat/completions": {
            "model": "ticket.classify",
            "messages": [{"role": "user", "content": json.dumps(invoke["input"])}],
        },
    }


def encode(value: Any) -> str:
    """JSON text with `Raw` pieces as they are and strings ASCII-escaped (so "\\ud800" travels)."""
    if isinstance(value, Raw):
        return str(value)
    if isinstance(value, dict):
        return "{" + ",".join(f"{encode(str(k))}:{encode(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(encode(v) for v in value) + "]"
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, Decimal):
        return str(value)
    return json.dumps(value)


def hostile() -> st.SearchStrategy[Any]:
    return st.one_of(
        st.sampled_from(HOSTILE_STRINGS),
        st.sampled_from(RAW_NUMBERS),
        st.sampled_from(ODD_VALUES),
        st.text(max_size=40),
        st.integers(),
    )


def _paths(value: Any, at: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [at]
    if isinstance(value, dict):
        for key, item in value.items():
            out += _paths(item, (*at, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            out += _paths(item, (*at, index))
    return out


@st.composite
def body(draw: st.DrawFn, valid: Any) -> tuple[str, bytes | None]:
    """(what, body bytes): the valid body, one field of it changed, a key added, or junk."""
    kind = draw(st.sampled_from(["valid", "field", "key", "whole", "bytes", "none"]))
    if kind == "none" or (valid is None and kind in ("valid", "field", "key")):
        return "no body", None
    if kind == "bytes":
        junk = draw(
            st.sampled_from(
                [
                    b"",
                    b"{",
                    b"\xff\xfe",
                    b'{"a":"\\ud800"}',
                    b'"\\udc00"',
                    b"[" * 100 + b"]" * 100,
                    b"{" + b'"k":1,' * 10 + b'"k":2}',
                    b"NaN",
                    b"1" * 5000,
                    b"\x00",
                ]
            )
        )
        return f"bytes {junk[:20]!r}", junk
    if kind == "whole":
        value = draw(hostile())
        return f"whole {value!r:.60}", encode(value).encode("utf-8", "surrogatepass")
    copy = json.loads(json.dumps(valid))
    if kind == "field":
        at = draw(st.sampled_from(_paths(copy)[1:] or [()]))
        new = draw(hostile())
        if at:
            parent = copy
            for part in at[:-1]:
                parent = parent[part]
            parent[at[-1]] = new
        else:
            copy = new
        what = f"field {at} = {new!r:.60}"
    elif kind == "key":
        key = draw(st.sampled_from(["\ud800", "\x00", "unknown", "", "a" * 3000]))
        if isinstance(copy, dict):
            copy[key] = draw(hostile())
        what = f"key {key!r:.20}"
    else:
        what = "valid"
    return what, encode(copy).encode("ascii")


@st.composite
def request(draw: st.DrawFn, endpoint: Endpoint, valid_body: Any) -> dict[str, Any]:
    path = endpoint.path
    for name in VALID:  # every path parameter of the route table
        if "{" + name + "}" in path:
            value = draw(st.one_of(st.just(VALID[name]), st.sampled_from(HOSTILE_STRINGS)))
            text = str(value) or "x"  # an empty segment is another route
            path = path.replace("{" + name + "}", quote(text, safe="", errors="surrogatepass"))
    names = [q for q, _ in endpoint.query] + ["limit", "version"]
    query: list[tuple[str, str]] = []
    for name in draw(st.lists(st.sampled_from(names), max_size=3, unique=True)):
        choices = [*HOSTILE_STRINGS, VALID_QUERY.get(name, "x")]
        query.append((name, draw(st.sampled_from(choices))))
    what, content = draw(body(valid_body))
    role = draw(st.sampled_from(ROLES))
    encoded = "&".join(
        f"{quote(k, errors='surrogatepass')}={quote(v, safe='', errors='surrogatepass')}"
        for k, v in query
    )
    return {
        "role": role,
        "url": path + ("?" + encoded if encoded else ""),
        "content": content,
        "what": what,
    }


class Harness:
    """The app with its lifespan entered, called in-process from a blocking portal."""

    def __init__(self, root: Path, url: str | None = None) -> None:
        url = url or f"sqlite:///{root / 'holon.db'}"
        self.store = open_store(url, secret_key=new_key(), auto_upgrade=True)
        install_tiny(self.store, root)
        register_triage(self.store)
        self.store.mandates.grant(mandate())
        settings = Settings.from_env(
            {
                "HOLON_HOME": str(root / "home"),
                "HOLON_EXAMPLES": "off",
                "HOLON_AGENT_NETWORKS": "public",
                "HOLON_PROBE_INTERVAL_S": "0",
            }
        )
        self.app = create_app(settings, store=self.store, eval_workers=0, cache_ttl_s=0.0)
        self.tokens = {role: self.store.tokens.create(role)[1] for role in ROLES}
        self._stack = ExitStack()

    def __enter__(self) -> Harness:
        self.portal = self._stack.enter_context(anyio.from_thread.start_blocking_portal())
        self._stack.enter_context(
            self.portal.wrap_async_context_manager(self.app.router.lifespan_context(self.app))
        )
        self.client = httpx.AsyncClient(
            transport=httpx.ASGITransport(app=self.app), base_url="http://gateway", timeout=60
        )
        return self

    def __exit__(self, *exc: object) -> None:
        self.portal.call(self.client.aclose)
        self._stack.close()
        self.store.close()

    def send(self, method: str, url: str, role: str, content: bytes | None) -> httpx.Response:
        headers = {"authorization": f"Bearer {self.tokens[role]}"}
        if content is not None:
            headers["content-type"] = "application/json"

        async def go() -> httpx.Response:
            return await self.client.request(method, url, headers=headers, content=content)

        return self.portal.call(go)


@pytest.fixture(scope="module")
def harness(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Harness]:
    with Harness(tmp_path_factory.mktemp("fuzz-api")) as opened:
        yield opened


def judge(response: httpx.Response, endpoint: Endpoint, label: str) -> str:
    """The answer is below 500 (or an agent's outcome on a live call) and errors have the one
    shape: holon's, or the OpenAI door's (OpenAI's, with holon's code and details)."""
    status = response.status_code
    if status >= 400:
        assert response.headers["content-type"].startswith("application/json"), label
        error_body = response.json()
        assert set(error_body) == {"error"}, (label, error_body)
        error = error_body["error"]
        keys = {"code", "message", "details"}
        if endpoint.errors is not None:
            keys |= {"type", "param"}
        assert set(error) == keys, (label, error)
        assert isinstance(error["code"], str) and isinstance(error["message"], str), label
        assert isinstance(error["details"], dict), label
        code = error["code"]
        if status >= 500:
            invoke = endpoint.path.endswith("/invoke") or endpoint.path == "/v1/chat/completions"
            assert invoke and status in (502, 504) and code in AGENT_OUTCOMES, (label, error)
        outcome = f"{status} {code}"
    else:
        outcome = f"{status}"
    record(CAMPAIGN, outcome)
    return outcome


def _fuzz(harness: Harness, endpoint: Endpoint, examples: int) -> None:
    valid = _bodies().get(f"{endpoint.method} {endpoint.path}")

    @fuzz_settings(examples)
    @given(drawn=request(endpoint, valid))
    def check(drawn: dict[str, Any]) -> None:
        response = harness.send(endpoint.method, drawn["url"], drawn["role"], drawn["content"])
        label = f"{endpoint.method} {drawn['url'][:300]} as {drawn['role']}: {drawn['what']}"
        judge(response, endpoint, label)

    check()


ROUTES = pytest.mark.parametrize("endpoint", ENDPOINTS, ids=lambda e: f"{e.method} {e.path}")


@ROUTES
def test_every_route_quick(harness: Harness, endpoint: Endpoint) -> None:
    _fuzz(harness, endpoint, QUICK)


@pytest.mark.slow
@pytest.mark.timeout(900)
@ROUTES
def test_every_route_long(harness: Harness, endpoint: Endpoint) -> None:
    _fuzz(harness, endpoint, LONG)


@pytest.mark.slow
@pytest.mark.postgres
@pytest.mark.timeout(900)
def test_every_route_on_postgresql(postgres_url: str, tmp_path: Path) -> None:
    with Harness(tmp_path, postgres_url) as on_postgres:
        for endpoint in ENDPOINTS:
            _fuzz(on_postgres, endpoint, ON_POSTGRES)


# The inputs of issue 13 (class 6) that answered 500, by name: each is a located 4xx now.
def _named() -> list[tuple[str, str, str, str, bytes | None, int]]:
    manifest = _manifest()
    bad_port = encode({**manifest, "endpoint": "http://127.0.0.1:99999/"}).encode()
    bad_host = encode({**manifest, "endpoint": "http://[::1/"}).encode()
    invoke = b'{"capability": "ticket.classify", "input": {"subject": "\\ud800"}}'
    start = '{{"agent": "acme/ticket-triage", "max_cost_usd": "{}"}}'
    digits = "1" * 5000
    return [
        ("invoke", "POST", "/v1/agents/acme/ticket-triage/invoke", "caller", invoke, 400),
        ("NaN", "POST", "/v1/evals", "operator", start.format("NaN").encode(), 400),
        ("sNaN", "POST", "/v1/evals", "operator", start.format("sNaN").encode(), 400),
        ("Infinity", "POST", "/v1/evals", "operator", start.format("Infinity").encode(), 400),
        ("-1", "POST", "/v1/evals", "operator", start.format("-1").encode(), 400),
        ("version", "GET", "/v1/suites/tiny?version=99999999999999999999999", "any", None, 400),
        ("agents", "GET", f"/v1/agents?limit={digits}", "any", None, 400),
        ("ledger", "GET", f"/v1/ledger?limit={digits}", "operator", None, 400),
        ("superscript", "GET", "/v1/ledger?limit=%C2%B2", "operator", None, 400),
        ("port", "POST", "/v1/agents", "org", bad_port, 422),
        ("ipv6", "POST", "/v1/agents", "org", bad_host, 422),
        ("nul", "GET", "/v1/agents/acme/a%00b", "any", None, 400),
    ]


ROLE_OF = {"caller": "caller:finance-bot", "operator": "operator", "org": "org:acme"}


# Issue 14: what the contract refuses on a live call, each a located 400 with its code.
def _contract_refusals() -> list[tuple[str, str, bytes, str, str]]:
    agent = "/v1/agents/acme/ticket-triage/invoke"
    routed = "/v1/capabilities/ticket.classify/invoke"
    valid = '"capability": "ticket.classify", "input": {"subject": "hi"}'
    return [
        ("stream", agent, f'{{{valid}, "stream": true}}'.encode(), "unknown_key", "$.stream"),
        ("routed key", routed, f'{{{valid}, "n": 2}}'.encode(), "unknown_key", "$.n"),
        (
            "input type",
            agent,
            b'{"capability": "ticket.classify", "input": {"subject": 5}}',
            "invalid_input",
            "$.input.subject",
        ),
        ("input missing", routed, b'{"input": {}}', "invalid_input", "$.input"),
    ]


@pytest.mark.parametrize("case", _contract_refusals(), ids=lambda c: c[0])
def test_what_the_contract_refuses(harness: Harness, case: Any) -> None:
    name, url, content, code, path = case
    response = harness.send("POST", url, "caller:finance-bot", content)
    endpoint = next(e for e in ENDPOINTS if e.path.endswith("/invoke"))
    assert judge(response, endpoint, name) == f"400 {code}", response.text
    assert response.json()["error"]["details"]["path"] == path


@pytest.mark.parametrize("case", _named(), ids=lambda c: c[0])
def test_the_inputs_that_answered_500(harness: Harness, case: Any) -> None:
    name, method, url, role, content, status = case
    response = harness.send(method, url, ROLE_OF.get(role, "operator"), content)
    endpoint = next(e for e in ENDPOINTS if e.method == method)
    judge(response, endpoint, name)
    assert response.status_code == status, response.text
    details = response.json()["error"]["details"]
    assert details.get("path") or details.get("parameter"), details  # located

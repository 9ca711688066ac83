"""Each operation of the table is declared once, and every door reads that declaration.

For every operation: the OpenAPI parameters and body schema, the CLI's flags,
the HTTP client's request and the route's parsing of it are each compared
with the request type's fields. A request type with one more field (the
ledger's `outcome`, as a next filter would be) gets it in every door with no
other edit. docs/operations.md is generated from the table and must be
current.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import difflib
import threading
import time
from collections.abc import Iterator
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import pytest
from starlette.requests import Request
from starlette.routing import Match, Route

from gateway.cli._app import _Parser, build_parser, common_options
from gateway.cli._operations import command, dest, operation_commands
from gateway.cli._operations_reference import REGENERATE, render
from gateway.client import HttpService
from gateway.operations import (
    AGENTS_DISABLE,
    CERTIFICATES_IMPORT,
    EVALS_COMPARE,
    EVALS_IMPORT,
    EVALS_LIST,
    EVALS_REPORT,
    EVALS_START,
    LEDGER_LIST,
    OPERATIONS,
    AgentRef,
    CompareRequest,
    EvalImport,
    EvalsQuery,
    EvalStart,
    Field,
    LedgerQuery,
    Operation,
    ReportRequest,
    param,
)
from gateway.operations._certificates import IMPORT_MAX_BYTES
from gateway.server import ENDPOINTS
from gateway.server._openapi import openapi
from gateway.web import Bearer, endpoint, read_request
from schema.errors import Forbidden, GatewayUnreachable, PayloadTooLarge, UsageError

ROOT = Path(__file__).resolve().parents[2]
SPEC = openapi(ENDPOINTS)
IDS = [op.name for op in OPERATIONS]
ROUTED = [op for op in OPERATIONS if op.routed]
STORE_ONLY = [op for op in OPERATIONS if not op.routed]


@dataclasses.dataclass(frozen=True)
class WithOutcome(LedgerQuery):
    """The ledger's request with one more filter, declared here alone."""

    outcome: str | None = param(help="one outcome's", choices=("ok", "timeout"))


WITH_OUTCOME: Operation[WithOutcome] = dataclasses.replace(  # type: ignore[arg-type]
    LEDGER_LIST, request=WithOutcome
)


# -- OpenAPI ------------------------------------------------------------------------


def _described(op: Operation[Any], spec: dict[str, Any]) -> dict[str, Any]:
    operation: dict[str, Any] = spec["paths"][op.path][op.method.lower()]
    return operation


@pytest.mark.parametrize("op", ROUTED, ids=[op.name for op in ROUTED])
def test_openapi_comes_from_the_declaration(op: Operation[Any]) -> None:
    described = _described(op, SPEC)
    roles = [op.roles] if isinstance(op.roles, str) else sorted(op.roles)
    assert described["x-holon-roles"] == roles
    assert described["summary"] == op.summary
    params = described["parameters"]
    assert [p["name"] for p in params if p["in"] == "path"] == [
        name for f in op.located("path") for name in f.spec.segments or (f.name,)
    ]
    current = [p for p in params if p["in"] == "query" and not p.get("deprecated")]
    assert [(p["name"], p["description"], p["schema"]) for p in current] == [
        (f.name, f.spec.help, f.json_schema) for f in op.located("query")
    ]
    deprecated = [p["name"] for p in params if p.get("deprecated")]
    assert deprecated == [f.spec.renamed for f in op.located("query") if f.spec.renamed]
    body, document = op.located("body"), op.located("document")
    if body:
        schema = described["requestBody"]["content"]["application/json"]["schema"]
        assert list(schema["properties"]) == [f.name for f in body]
        assert schema["required"] == [f.name for f in body if f.spec.required]
        assert schema["additionalProperties"] is False
    elif document:  # the whole body is one document, described by its schema file
        (field,) = document
        schema = described["requestBody"]["content"]["application/json"]["schema"]
        if "$ref" in field.spec.schema:
            name = field.spec.schema["$ref"].removesuffix(".schema.json")
            assert schema == {"$ref": f"#/components/schemas/{name}"}
            assert name in SPEC["components"]["schemas"]
        else:  # described in words (a whole report: no generator should draw one)
            assert schema == field.spec.schema
    else:
        assert "requestBody" not in described
    content = described["responses"][str(op.created)]["content"]
    declared = (("application/json", op.response),) if op.response else op.media_types
    assert list(content) == [media for media, _ in declared]
    for media, schema in declared:
        expected = {"type": "string"} if schema is None else schema()
        ref = expected.get("$ref", "")
        if ref.endswith(".schema.json"):  # a schema of schema/, as a component
            expected = {"$ref": "#/components/schemas/" + ref.removesuffix(".schema.json")}
        assert content[media]["schema"] == expected


def test_every_operation_is_routed_once() -> None:
    routed = [(e.method, e.path) for e in ENDPOINTS]
    for op in ROUTED:
        assert routed.count((op.method, op.path)) == 1, op.name
    assert len({op.name for op in OPERATIONS}) == len(OPERATIONS)


@pytest.mark.parametrize("op", STORE_ONLY, ids=[op.name for op in STORE_ONLY])
def test_a_store_only_operation_has_no_route_and_no_request(op: Operation[Any]) -> None:
    assert op.method == "" and not [e for e in ENDPOINTS if e.summary == op.summary]
    with pytest.raises(TypeError, match="the store's alone"):
        endpoint(op)
    client = HttpService("http://127.0.0.1:9", "hol_test")  # nothing is sent
    try:
        with pytest.raises(UsageError, match="works on the store only"):
            client.call(op, op.request(**{f.name: _sample(f) for f in op.fields}))
    finally:
        client.close()


# -- the CLI ------------------------------------------------------------------------


def _subparser(parser: argparse.ArgumentParser, words: tuple[str, ...]) -> argparse.ArgumentParser:
    for word in words:
        if word.startswith("--"):  # a switch to another operation of the same command
            break
        (group,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        parser = group.choices[word]
    return parser


def _check_flags(op: Operation[Any], parser: argparse.ArgumentParser) -> None:
    actions = [a for a in parser._actions if a.dest.startswith("op_")]
    old = [a for a in actions if (a.help or "").startswith("deprecated: the old name of")]
    renamed = {a.option_strings[0] for a in old}
    current = {a.dest: a for a in actions if a not in old}
    assert len(current) == len(actions) - len(old)
    assert set(current) == {dest(f) for f in op.fields if f.on_cli}
    for f in op.fields:
        if not f.on_cli:
            continue
        action = current[dest(f)]
        assert action.option_strings == ([] if f.flag is None else [f.flag]), f.name
        assert action.help == (f.spec.cli_help or f.spec.help)
        assert tuple(action.choices or ()) == f.spec.choices
        assert action.required == (f.spec.required or f.flag is None)
        if f.kind == "int":
            default = f.default if f.spec.cli_default is None else f.spec.cli_default
            assert action.type is int and action.default == default
    assert renamed == {f"--{f.spec.renamed}" for f in op.fields if f.spec.renamed}


@pytest.mark.parametrize("op", OPERATIONS, ids=IDS)
def test_cli_flags_come_from_the_declaration(op: Operation[Any]) -> None:
    parser = build_parser()
    if op.cli is None:  # API only, or a command of its own runs it (`holon eval`)
        return
    words = operation_commands(parser)[op.name]  # a command runs every other operation
    command_parser = _subparser(parser, words)
    _check_flags(op, command_parser)
    if op.cli.description is not None and not words[-1].startswith("--"):
        assert command_parser.description == op.cli.description


def test_a_switch_runs_an_operation_of_the_same_request() -> None:
    parser = _Parser(prog="t")
    sub = parser.add_subparsers()
    with pytest.raises(TypeError, match="takes another request"):
        command(sub, "x", LEDGER_LIST, parents=[], switch=("--other", OPERATIONS[0]))


# -- the HTTP client and the route --------------------------------------------------


def _sample(f: Field) -> Any:
    if f.spec.where in ("bearer", "local"):
        return f.default  # filled by narrowing from who asks, or by the command: never sent
    if f.spec.where == "document" and f.kind == "bytes":
        return '{"id": "x é",\n "n": [1.50]}'.encode()  # the body as sent, byte for byte
    if f.spec.where == "document":
        return {"id": "x é", "nested": {"n": [1, "é"]}}  # the whole body
    if f.name == "expires_in":
        return "2h"  # checked as a duration in every door
    if f.name == "max_cost_usd":
        return "5"  # checked as dollars
    if f.name == "revocations_url":
        return "https://issuer.example/x%20\u00e9"  # checked as an http(s) URL
    if f.spec.segments:
        return "/".join(f"x {name} é" for name in f.spec.segments)  # one quoted segment each
    if f.spec.choices or "enum" in f.json_schema:
        return (f.spec.choices or f.json_schema["enum"])[-1]
    if f.json_schema.get("type") == "array":
        return [f"x {f.name} é"]
    if f.json_schema.get("type") == "object":
        return {"x": f"{f.name} é"}
    if f.kind == "bool":
        return True
    if f.kind == "int":
        return 7
    if f.kind == "custom":
        return Decimal("0.5")
    return f"x {f.name} é"  # quoted in a path, encoded in a query


class _Recorder(BaseHTTPRequestHandler):
    """A real server on 127.0.0.1 that keeps each request it is sent and answers `{}`."""

    seen: list[tuple[str, str, bytes, dict[str, str]]] = []

    def _answer(self) -> None:
        size = int(self.headers.get("content-length") or 0)
        headers = {k.lower(): v for k, v in self.headers.items()}
        self.seen.append((self.command, self.path, self.rfile.read(size), headers))
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    do_GET = do_POST = do_PUT = do_DELETE = _answer

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass


@pytest.fixture(scope="module")
def recorder() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def _sent(op: Operation[Any], url: str, asked: Any) -> tuple[str, str, bytes, dict[str, str]]:
    _Recorder.seen.clear()
    client = HttpService(url, "hol_test")
    try:
        # A document operation's answer is its text, as the server sent it.
        assert client.call(op, asked) == ({} if op.media is None else {"text": "{}"})
    finally:
        client.close()
    ((method, target, body, headers),) = _Recorder.seen
    return method, target, body, headers


def _parsed(
    op: Operation[Any],
    method: str,
    target: str,
    body: bytes,
    *,
    declared: bool = True,
    headers: dict[str, str] | None = None,
) -> Any:
    """What the route reads of the request the client sent (the route's own matching);
    `declared=False`: the body comes in chunks with no Content-Length."""
    parts = urlsplit(target)
    scope: dict[str, Any] = {
        "type": "http",
        "method": method,
        "path": unquote(parts.path),
        "raw_path": parts.path.encode(),
        "query_string": parts.query.encode(),
        "headers": ([(b"content-length", str(len(body)).encode())] if declared else [])
        + [(k.encode(), v.encode()) for k, v in (headers or {}).items()],
    }
    match, child = Route(op.path, lambda r: None, methods=[op.method]).matches(scope)
    assert match is Match.FULL, target
    scope.update(child)
    chunk = len(body) if declared else 1024 * 1024
    chunks = [body[i : i + chunk] for i in range(0, len(body), chunk or 1)] or [b""]

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": chunks.pop(0), "more_body": bool(chunks)}

    async def read() -> Any:
        asked, _ = await read_request(op, Request(scope, receive))
        return asked

    return asyncio.run(read())


@pytest.mark.parametrize("op", ROUTED, ids=[op.name for op in ROUTED])
def test_the_client_sends_what_the_route_reads(op: Operation[Any], recorder: str) -> None:
    asked = op.request(**{f.name: _sample(f) for f in op.fields})
    method, target, body, headers = _sent(op, recorder, asked)
    assert method == op.method
    query = parse_qs(urlsplit(target).query)
    assert set(query) == {f.name for f in op.located("query")}
    assert (body != b"") == bool(op.located("body") or op.located("document"))
    sent = {f.spec.header.lower(): headers[f.spec.header.lower()] for f in op.located("header")}
    assert _parsed(op, method, target, body, headers=sent) == asked


# -- one more filter: one declaration -----------------------------------------------


def test_one_more_field_reaches_every_door(recorder: str) -> None:
    described = _described(WITH_OUTCOME, openapi([endpoint(WITH_OUTCOME)]))
    (outcome,) = [p for p in described["parameters"] if p["name"] == "outcome"]
    assert outcome["schema"] == {"enum": ["ok", "timeout"]}

    parser = _Parser(prog="holon")
    sub = parser.add_subparsers()
    ledger = command(sub, "ledger", WITH_OUTCOME, parents=[common_options()])
    _check_flags(WITH_OUTCOME, ledger)
    args = parser.parse_args(["ledger", "--outcome", "timeout", "--mandate", "m1"])
    assert (args.op_outcome, args.op_mandate) == ("timeout", "m1")

    asked = WithOutcome(mandate="m1", outcome="timeout")
    method, target, body, _ = _sent(WITH_OUTCOME, recorder, asked)
    assert parse_qs(urlsplit(target).query)["outcome"] == ["timeout"]
    assert _parsed(WITH_OUTCOME, method, target, body) == asked
    # ...and its choices are enforced by the route, with the usage error of the others.
    with pytest.raises(UsageError, match="^outcome must be ok or timeout$"):
        _parsed(WITH_OUTCOME, "GET", "/v1/ledger?outcome=lost", b"")


def test_a_bad_value_is_a_located_usage_error() -> None:
    with pytest.raises(UsageError, match="^decision must be allow or deny$"):
        _parsed(LEDGER_LIST, "GET", "/v1/ledger?decision=maybe", b"")
    with pytest.raises(UsageError, match="query parameter limit must be an integer") as caught:
        _parsed(LEDGER_LIST, "GET", "/v1/ledger?limit=0", b"")
    assert caught.value.details["parameter"] == "limit"


def test_a_filter_form_reads_blanks_as_no_filter_and_leaves_paging_to_the_page() -> None:
    # The console's ledger page and CSV: a submitted form sends every field, blank or not.
    target = "/v1/ledger?caller=&mandate=m1&agent=&decision=&limit=oops&cursor=c1"
    scope: dict[str, Any] = {
        "type": "http",
        "method": "GET",
        "path": "/v1/ledger",
        "query_string": urlsplit(target).query.encode(),
        "headers": [],
    }

    async def read(query: str) -> Any:
        asked, _ = await read_request(
            LEDGER_LIST, Request({**scope, "query_string": query.encode()}), form=True
        )
        return asked

    assert asyncio.run(read(scope["query_string"].decode())) == LedgerQuery(mandate="m1")
    with pytest.raises(UsageError, match="^decision must be allow or deny$"):
        asyncio.run(read("decision=maybe"))


def test_narrowing_is_the_operations_own() -> None:
    narrow = LEDGER_LIST.narrow
    assert narrow is not None
    caller = Bearer("caller:finance-bot", "tok_1")
    assert narrow(caller, LedgerQuery()) == LedgerQuery(caller="finance-bot")
    assert narrow(caller, LedgerQuery(caller="finance-bot")).caller == "finance-bot"
    with pytest.raises(UsageError, match="^a caller token reads its own ledger only$"):
        narrow(caller, LedgerQuery(caller="someone-else"))
    # An org may disable its own agents only (the route's rule, now the operation's).
    assert AGENTS_DISABLE.narrow is not None
    org = Bearer("org:acme", "tok_3")
    assert AGENTS_DISABLE.narrow(org, AgentRef("acme/bot")) == AgentRef("acme/bot")
    with pytest.raises(Forbidden):
        AGENTS_DISABLE.narrow(org, AgentRef("other/bot"))
    assert narrow(Bearer("operator", "tok_2"), LedgerQuery(caller="x")) == LedgerQuery(caller="x")


def test_an_eval_listing_and_a_report_are_narrowed_to_what_the_bearer_may_see() -> None:
    org = Bearer("org:acme", "tok_3")
    assert EVALS_LIST.narrow is not None
    with pytest.raises(UsageError, match="^an org token lists the evals of one of its agents"):
        EVALS_LIST.narrow(org, EvalsQuery())
    with pytest.raises(Forbidden):
        EVALS_LIST.narrow(org, EvalsQuery(agent="other/bot"))
    assert EVALS_LIST.narrow(org, EvalsQuery(agent="acme/bot")) == EvalsQuery(agent="acme/bot")
    # The operator audience (the holdout's cases) is an operator's alone, in both documents.
    for op, asked in (
        (EVALS_REPORT, ReportRequest("ev_1", audience="operator")),
        (EVALS_COMPARE, CompareRequest("ev_1", "ev_2", audience="operator")),
    ):
        assert op.narrow is not None and op.run_for is not None
        with pytest.raises(Forbidden, match="only an operator may read the operator audience"):
            op.narrow(org, asked)
        assert op.narrow(Bearer("operator", "tok_2"), asked) == asked


def test_a_document_is_text_in_the_format_asked() -> None:
    from evals.reports import COMPARE_FORMATS, REPORT_FORMATS

    assert EVALS_REPORT.media is not None and EVALS_COMPARE.media is not None
    for form, media in REPORT_FORMATS.items():
        assert EVALS_REPORT.media(ReportRequest("ev_1", format=form)) == media
    for form, media in COMPARE_FORMATS.items():
        assert EVALS_COMPARE.media(CompareRequest("a", "b", format=form)) == media
    asked = _parsed(EVALS_REPORT, "GET", "/v1/evals/ev_1/report", b"")
    assert asked == ReportRequest("ev_1", format="json", audience="author")  # the defaults
    with pytest.raises(UsageError, match="^format must be one of json, md, html, junit$"):
        _parsed(EVALS_REPORT, "GET", "/v1/evals/ev_1/report?format=pdf", b"")
    with pytest.raises(UsageError, match="^format must be one of json, md, html$"):
        _parsed(EVALS_COMPARE, "GET", "/v1/evals/a/compare/b?format=junit", b"")
    with pytest.raises(UsageError, match="^audience must be one of author, operator$"):
        _parsed(EVALS_REPORT, "GET", "/v1/evals/ev_1/report?audience=everyone", b"")


def test_an_eval_start_reads_its_body_as_the_route_did() -> None:
    def start(body: bytes) -> Any:
        return _parsed(EVALS_START, "POST", "/v1/evals", body)

    assert start(b'{"agent": "acme/bot"}') == EvalStart(agent="acme/bot")
    # null is the default, as an absent key is.
    assert start(b'{"agent": "acme/bot", "concurrency": null, "pace_s": null}') == EvalStart(
        agent="acme/bot"
    )
    assert start(b'{"agent": "acme/bot", "pace_s": 1.5, "max_cost_usd": 5}') == EvalStart(
        agent="acme/bot", pace_s=Decimal("1.5"), max_cost_usd="5"
    )
    with pytest.raises(UsageError, match="^unknown keys: colour, size$"):
        start(b'{"agent": "acme/bot", "size": 1, "colour": 2}')
    with pytest.raises(UsageError, match=r"^\$\.agent must be an agent id 'org/name'$"):
        start(b'{"suites": []}')
    with pytest.raises(UsageError, match="^suites must be a list of at most 100 suite ids$"):
        start(b'{"agent": "acme/bot", "suites": "all"}')
    with pytest.raises(UsageError, match=r"^\$\.suites\[1\] must be a suite id$"):
        start(b'{"agent": "acme/bot", "suites": ["a", 7]}')
    for key, value, message in (
        ("concurrency", "0", "concurrency must be an integer from 1 to 1024"),
        ("retries", "true", "retries must be an integer from 0 to 10"),
        ("repetitions", "101", "repetitions must be an integer from 1 to 100"),
        ("pace_s", "1E+3999", "pace_s must be a number from 0 to 3600"),
        ("max_cost_usd", '"NaN"', "max_cost_usd must be a decimal string of dollars"),
        ("max_cost_usd", '"1E-999999999"', "max_cost_usd must be a decimal string of dollars"),
    ):
        body = f'{{"agent": "acme/bot", "{key}": {value}}}'.encode()
        with pytest.raises(UsageError, match=f"^{message}") as caught:
            start(body)
        assert caught.value.details == {"path": f"$.{key}"}
    # A dry run creates nothing: 200; a start, 201.
    assert EVALS_START.status is not None
    assert EVALS_START.status(EvalStart(agent="a/b", dry_run=True), {}) == 200
    assert EVALS_START.status(EvalStart(agent="a/b"), {}) == EVALS_START.created == 201


def test_a_certificate_import_names_its_shape() -> None:
    from records import CERTIFICATE_MAX_BYTES, JWKS_MAX_BYTES, REVOCATIONS_MAX_BYTES

    assert IMPORT_MAX_BYTES == CERTIFICATE_MAX_BYTES + JWKS_MAX_BYTES + REVOCATIONS_MAX_BYTES
    assert CERTIFICATES_IMPORT.max_body_bytes == IMPORT_MAX_BYTES
    from gateway.operations._checks import MAX_URL_CHARS
    from records._issuers import MAX_URL_CHARS as KEPT_URL_CHARS

    assert MAX_URL_CHARS == KEPT_URL_CHARS  # a URL the table admits is kept whole
    for body, path in (
        (b'{"certificate": {}}', "$"),
        (b'{"certificate": {}, "jwks": {}, "x": 1}', "$.x"),
    ):
        with pytest.raises(
            UsageError, match="an import is {certificate, jwks\\[, revocations, "
        ) as caught:
            _parsed(CERTIFICATES_IMPORT, "POST", "/v1/certificates/import", body)
        assert caught.value.details == {
            "path": path,
            "fields": [
                "certificate",
                "jwks",
                "revocations",
                "revocations_url",
                "allow_unchecked_revocation",
            ],
        }


def test_a_report_is_read_as_the_bytes_sent_up_to_the_operations_own_bound() -> None:
    op = EVALS_IMPORT
    assert op.max_body_bytes > 8 * 1024 * 1024 and not op.large_body  # past the gateway's own
    # The document is the body as sent, unparsed: its run checks it and names places in it.
    sent = b'{"report_version": 1,\n "x": [1.50, "\\u00e9"]}'
    asked = _parsed(op, "POST", "/v1/evals/import?source=a", sent)
    assert asked == EvalImport(report=sent, source="a")
    with pytest.raises(UsageError, match="^the request needs a JSON body: the report$"):
        _parsed(op, "POST", "/v1/evals/import", b"")
    # One byte over the bound is refused before anything is parsed (these bytes are not
    # JSON): from its Content-Length, or as it is read.
    over = b"{" * (op.max_body_bytes + 1)
    for declared in (True, False):
        with pytest.raises(PayloadTooLarge) as caught:
            _parsed(op, "POST", "/v1/evals/import", over, declared=declared)
        assert caught.value.details == {"limit": op.max_body_bytes}
    # The bound is the declaration's: another operation's body is held to its own.
    small = dataclasses.replace(op, max_body_bytes=64)
    with pytest.raises(PayloadTooLarge, match="the request body is over 64 bytes"):
        _parsed(small, "POST", "/v1/evals/import", sent + b" " * 64)


class _Slow(BaseHTTPRequestHandler):
    """A real server on 127.0.0.1 that answers `{}` after PAUSE_S."""

    PAUSE_S = 0.5

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        time.sleep(self.PAUSE_S)
        try:
            self.send_response(201)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"{}")
        except OSError:  # the client stopped waiting
            pass

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass


def test_the_http_service_waits_the_operations_own_timeout() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Slow)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    asked = EvalImport(report=b"{}")
    hurried = dataclasses.replace(EVALS_IMPORT, timeout_s=None)
    try:
        quick = HttpService(url, "hol_test", timeout_s=0.1)
        try:
            assert EVALS_IMPORT.timeout_s is not None and EVALS_IMPORT.timeout_s > _Slow.PAUSE_S
            assert quick.call(EVALS_IMPORT, asked) == {}  # its own timeout, not the client's
            with pytest.raises(GatewayUnreachable, match="did not answer within 0.1 s"):
                quick.call(hurried, asked)
        finally:
            quick.close()
        # The operation's timeout is a least wait: a client that waits longer still does.
        patient = HttpService(url, "hol_test", timeout_s=5)
        try:
            assert patient.call(dataclasses.replace(EVALS_IMPORT, timeout_s=0.1), asked) == {}
        finally:
            patient.close()
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_a_command_written_by_hand_declares_the_operations_it_runs() -> None:
    commands = operation_commands(build_parser())
    assert commands["evals.start"] == ("eval",)
    assert commands["evals.resume"] == ("evals", "resume")
    assert commands["evals.report"] == ("evals", "report")
    assert commands["evals.compare"] == ("evals", "compare")
    assert commands["certificates.show"] == ("records", "certificate")
    assert commands["certificates.import"] == ("certificates", "import")
    parser = _Parser(prog="t")
    with pytest.raises(TypeError, match="evals.start declares no command"):
        command(parser.add_subparsers(), "start", EVALS_START, parents=[])


def test_a_request_field_must_be_declared() -> None:
    @dataclasses.dataclass(frozen=True)
    class Bare:
        plain: str | None = None

    with pytest.raises(TypeError, match=r"Bare.plain is not declared with param\(\)"):
        dataclasses.replace(LEDGER_LIST, request=Bare).fields  # noqa: B018


# -- docs/operations.md ---------------------------------------------------------------


def test_operations_reference_is_current() -> None:
    page = ROOT / "docs" / "operations.md"
    expected = render()
    actual = page.read_text(encoding="utf-8")
    if actual != expected:
        diff = "".join(
            difflib.unified_diff(
                actual.splitlines(keepends=True), expected.splitlines(keepends=True), n=1
            )
        )
        pytest.fail(f"docs/operations.md is stale: regenerate it with `{REGENERATE}`\n{diff}")

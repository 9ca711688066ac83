"""Every operation's answer is what its declared schema says, for every role that may ask.

Each operation of the table declares its answer (`Operation.response`: an entity, a page
of one, or a view of schema/responses/; a rendered document its media types). Here a
real store (the echo agent evaluated twice, mandates, ledger rows, a canary, tokens,
another issuer's certificate imported) answers every operation in-process: the routed
ones through the gateway's app for each role kind the operation admits, the store's own
through the store's service. Each answer is validated against the declaration, optional
parts both present and absent where a second call shows them (a dry run and a start, a
cancelled eval and a done one, a secret set and cleared). And a field the schema does not
declare, added to each answer, fails it: the schemas are closed, so a field added to a
view and not to its schema fails here (OPEN names the answers that are open on purpose).
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest

from gateway._roles import ROLE_KINDS
from gateway.operations import OPERATIONS, Operation
from gateway.service import StoreService
from records import CallEntry, CanaryRun, LedgerEntry, Store, utcnow
from schema import make_validator
from schema.jsontext import dumps, loads
from tests.evals.reports._agent import AGENT_ID
from tests.evals.reports._setup import run_eval, setup, suite_dir
from tests.evals.suites._make import SUITE_YAML
from tests.gateway.server._gateway import mandate
from tests.gateway.server._in_process import gateway_app, sync_client
from tests.gateway.test_certificate_issuers import GENUINE, Issuer
from tests.records._documents import MANIFEST

# A token of each role kind: the echo agent's org, and finance-bot, which holds mandates.
ROLES = {"operator": "operator", "org": "org:test", "caller": "caller:finance-bot"}
# Answers whose schema leaves room on purpose: a mandate's decision carries the numbers
# that decided it, which vary with the reason (docs/gateway.md, "Mandates"); an envelope
# is DSSE's format (schema/certificate.schema.json), which other issuers may extend.
OPEN = {"mandates.check", "certificates.show", "certificates.revocations"}
# Documents of schema/ answered as they are (an envelope, a report), by their own schema.
SHIPPED = "https://holon.dev/schema/"


@dataclass
class Answer:
    op: Operation[Any]
    who: str  # a role kind, "none" (no token) or "store" (the store's service)
    status: int
    media: str
    body: Any
    note: str = ""


@dataclass
class World:
    store: Store
    root: Path
    client: httpx.Client
    service: StoreService
    tokens: dict[str, str]
    ids: dict[str, str] = field(default_factory=dict)
    answers: list[Answer] = field(default_factory=list)

    def http(
        self,
        op: Operation[Any],
        who: str,
        path: dict[str, str] | None = None,
        note: str = "",
        **kw: Any,
    ) -> Any:
        """`op` asked over HTTP as `who`; its answer (JSON parsed, a document as text)."""
        url = op.path
        for name, value in (path or {}).items():
            url = url.replace("{" + name + "}", value)
        headers = {} if who == "none" else {"Authorization": f"Bearer {self.tokens[who]}"}
        if "json" in kw:  # documents hold exact numbers (Decimal), as holon writes them
            kw["content"] = dumps(kw.pop("json")).encode()
            headers["Content-Type"] = "application/json"
        response = self.client.request(op.method, url, headers=headers, **kw)
        assert response.status_code in (200, 201), (op.name, who, response.text)
        media = response.headers["content-type"].split(";")[0]
        body = loads(response.content) if media == "application/json" else response.text
        self.answers.append(Answer(op, who, response.status_code, media, body, note))
        return body

    def store_call(self, op: Operation[Any], request: Any, note: str = "") -> Any:
        body = self.service.call(op, request)
        self.answers.append(Answer(op, "store", 200, "application/json", body, note))
        return body


def kinds(op: Operation[Any]) -> tuple[str, ...]:
    """Who may ask `op`: each role kind it admits, "none" for a public document, "store"
    for the store's own."""
    if not op.routed:
        return ("store",)
    if op.roles == "none":
        return ("none",)
    return tuple(k for k in ROLE_KINDS if op.roles == "any" or k in op.roles)


def by_name(name: str) -> Operation[Any]:
    return next(op for op in OPERATIONS if op.name == name)


def _seed(store: Store, root: Path) -> dict[str, str]:
    """The store's world before the gateway starts: two evals of the echo agent (a record,
    its certificate, spent holdout budget), finance-bot's mandates, a ledger row and a
    canary, and the agent another issuer's certificate is of."""
    setup(store, root)
    home = root / "home"
    first, second = run_eval(store, home), run_eval(store, home)
    store.mandates.grant(mandate())
    store.mandates.grant(
        mandate(
            id="finance-limited",
            budget={"period": "month", "amount_usd": "1"},
            rate_limit={"calls": 10, "per": "minute"},
        )
    )

    def reserve() -> LedgerEntry:
        call = CallEntry(str(uuid.uuid4()), "finance-bot", "ticket.classify", AGENT_ID, "1.0.0")
        entry = store.ledger.reserve(
            call,
            mandate_id="finance-tickets",
            cap=Decimal("0.01"),
            expires_at=utcnow() + timedelta(minutes=1),
            details={"matched": ["finance-tickets"]},
            budget=None,
        )
        assert isinstance(entry, LedgerEntry)
        return entry

    denied = CallEntry(str(uuid.uuid4()), "finance-bot", "ticket.classify", AGENT_ID, "1.0.0")
    store.ledger.deny(denied, mandate_id="finance-tickets", reason="no_record", details={})
    reserved = reserve()
    reserve()  # left reserved: a row whose outcome is not known yet
    store.ledger.settle(
        reserved.id, outcome_code="ok", cost=Decimal("0.004"), cost_source="priced", latency_ms=12.3
    )
    version = store.agents.get(AGENT_ID).version
    run = CanaryRun(
        "req-canary", AGENT_ID, version, "ticket.classify", second, "tiny", 1,
        "ok", True, Decimal("0.001"), 2.5, utcnow(),
    )  # fmt: skip
    store.canaries.record(run, lambda state, passed: ({"n": 1}, None))
    store.agents.register(MANIFEST)
    return {"first": first, "second": second}


@pytest.fixture(scope="module")
def world(module_store: Store, tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    root = tmp_path_factory.mktemp("views")
    ids = _seed(module_store, root)
    tokens = {kind: module_store.tokens.create(role)[1] for kind, role in ROLES.items()}
    service = StoreService(module_store, root / "home")
    with sync_client(gateway_app(module_store, root)) as client:
        yield World(module_store, root, client, service, tokens, ids)


def _ask_everything(w: World) -> None:
    """Every operation, as every role kind that may ask it, in an order where each finds
    what it reads (the writes that others read first, the ones that remove things last)."""
    echo = {"org": "test", "name": "echo"}
    everyone = ("operator", "org", "caller")
    # Another issuer's certificate of acme/triage, its issuers, a re-check.
    partner, third = Issuer(), Issuer("urn:holon:issuer:third")
    w.http(
        by_name("certificates.import"),
        "operator",
        json={
            "certificate": partner.certificate(GENUINE, 0.5),
            "jwks": partner.jwks(),
            "revocations": partner.revocations(),
            "revocations_url": "https://partner.example/revocations.json",
        },
    )
    w.http(by_name("certificates.issuers.pin"), "operator", json={"jwks": third.jwks()})
    recheck = {"issuer": partner.name, "revocations": partner.revocations()}
    w.http(by_name("certificates.recheck"), "operator", json=recheck)

    # Reads of the registry, records and certificates.
    for who in everyone:
        w.http(by_name("agents.list"), who)
        w.http(by_name("agents.list"), who, params={"min_eval_score": "0"})
        w.http(by_name("agents.show"), who, echo)
        w.http(by_name("suites.list"), who)
        for op in ("suites.show", "suites.cases", "suites.files"):
            w.http(by_name(op), who, {"suite": "tiny"})
        w.http(by_name("records.show"), who, echo)
        w.http(by_name("certificates.show"), who, echo)
    for who in ("operator", "caller"):  # acme's: a record only another issuer's certificate has
        w.http(by_name("records.show"), who, {"org": "acme", "name": "triage"}, "imported")
    for op in ("keys.jwks", "certificates.revocations"):
        w.http(by_name(op), "none")
    for op in ("mandates.list", "tokens.list", "keys.list", "canaries.list"):
        w.http(by_name(op), "operator")
    w.http(by_name("certificates.list"), "operator")
    w.http(by_name("certificates.issuers"), "operator")
    for mandate_id in ("finance-tickets", "finance-limited"):
        w.http(by_name("mandates.show"), "operator", {"mandate": mandate_id})
        for who in ("operator", "caller"):
            w.http(by_name("mandates.revisions"), who, {"mandate": mandate_id})
        check = {"agent": AGENT_ID, "capability": "ticket.classify"}
        w.http(by_name("mandates.check"), "operator", {"mandate": mandate_id}, json=check)
    for who in ("operator", "caller"):
        w.http(by_name("ledger.list"), who)

    # Evals: listed, shown, reported and compared, as the operator and the agent's org.
    first, second = w.ids["first"], w.ids["second"]
    for who in ("operator", "org"):
        w.http(by_name("evals.list"), who, params={"agent": AGENT_ID})
        w.http(by_name("evals.show"), who, {"eval": first})
        audience = "operator" if who == "operator" else "author"
        for form in ("json", "md", "html", "junit"):
            params = {"format": form, "audience": audience}
            w.http(by_name("evals.report"), who, {"eval": first}, params=params)
        for form in ("json", "md", "html"):
            params = {"format": form, "audience": audience}
            pair = {"base": first, "candidate": second}
            w.http(by_name("evals.compare"), who, pair, params=params)
    w.http(by_name("evals.list"), "operator")
    report = w.client.get(
        f"/v1/evals/{first}/report",
        params={"audience": "operator"},
        headers={"Authorization": f"Bearer {w.tokens['operator']}"},
    )
    w.http(by_name("evals.import"), "operator", content=report.content, params={"source": "here"})

    # Evals started (a dry run first: a plan, no eval), resumed and cancelled.
    started = {}
    for who in ("operator", "org"):
        w.http(by_name("evals.start"), who, json={"agent": AGENT_ID, "dry_run": True}, note="dry")
        started[who] = w.http(by_name("evals.start"), who, json={"agent": AGENT_ID})["eval"]["id"]
    for who in ("operator", "org"):
        w.http(by_name("evals.show"), who, {"eval": started["org"]}, "running")
    w.http(by_name("evals.resume"), "operator", {"eval": started["operator"]})
    for who, eval_id in started.items():  # the org cancels its own eval
        w.http(by_name("evals.cancel"), who, {"eval": eval_id})
    w.http(by_name("evals.show"), "operator", {"eval": started["operator"]}, "cancelled")

    # Agents: registered (an uncertified capability warned of), its secret, switched.
    other = {**MANIFEST, "id": "test/other", "capabilities": ["ticket.classify", "x.unknown"]}
    for who in ("org", "operator"):  # created, then unchanged
        w.http(by_name("agents.register"), who, json=other)
    path = {"org": "test", "name": "other"}
    for who in ("org", "operator"):
        w.http(by_name("agents.secret.set"), who, path, json={"secret": "s3cret-token"})
        w.http(by_name("agents.secret.clear"), who, path)  # cleared, then nothing to clear
        w.http(by_name("agents.disable"), who, path)
        w.http(by_name("agents.enable"), who, path)

    # Tokens, keys, mandates: created, rotated, granted, revoked.
    made = w.http(by_name("tokens.create"), "operator", json={"role": "org:test"})
    w.http(by_name("tokens.create"), "operator", json={"role": "org:x", "expires_in": "1d"})
    w.http(by_name("tokens.revoke"), "operator", {"token": made["id"]})
    w.http(by_name("tokens.list"), "operator", params={"include_revoked": "true"})
    w.http(by_name("keys.rotate"), "operator")
    w.http(by_name("mandates.grant"), "operator", json=mandate(id="finance-new"))
    small = mandate(id="finance-new", budget={"period": "day", "amount_usd": "0.001"})
    w.http(by_name("mandates.grant"), "operator", json=small, note="budget too small")
    w.http(by_name("mandates.revoke"), "operator", {"mandate": "finance-new"})
    w.http(by_name("mandates.list"), "operator", params={"include_revoked": "true"})
    revoked = {"agent": AGENT_ID, "capability": "ticket.classify"}
    w.http(by_name("mandates.check"), "operator", {"mandate": "finance-new"}, json=revoked)

    # The store's own: a suite version added (then again, unchanged), activated, a new
    # holdout epoch, the holdout budgets, one given back.
    v2 = suite_dir(w.root / "v2", suite_yaml=SUITE_YAML.replace("\nversion: 1\n", "\nversion: 2\n"))
    for name, fields, note in (
        ("suites.add", {"path": str(v2)}, "installed"),
        ("suites.add", {"path": str(v2)}, "unchanged"),
        ("suites.activate", {"suite": "tiny", "version": 2}, ""),
        ("suites.rotate_holdout", {"suite": "tiny"}, ""),
        ("suites.exposure", {"suite": "tiny"}, ""),
        ("suites.exposure_reset", {"suite": "tiny", "org": "test", "reason": "a test"}, ""),
        ("suites.exposure", {"suite": "tiny", "org": "test"}, "after a reset"),
    ):
        op = by_name(name)
        w.store_call(op, op.request(**fields), note)


def _validator(schema: dict[str, Any]) -> Any:
    # A document of schema/ is referenced by its file name, relative to the shipped ones.
    return make_validator({"$id": SHIPPED + "answer.json", **schema})


def _declared(answer: Answer) -> dict[str, Any]:
    """The schema `answer.op` declares for what it answered (a document's: by its media)."""
    op = answer.op
    if op.response is not None:
        assert answer.media == "application/json", (op.name, answer.media)
        return op.response()
    documents = dict(op.media_types)
    assert answer.media in documents, (op.name, answer.media)
    schema = documents[answer.media]
    return {"type": "string"} if schema is None else schema()


def problems(answer: Answer) -> list[str]:
    return [e.message for e in _validator(_declared(answer)).iter_errors(answer.body)]


def _with_an_undeclared_field(body: Any) -> Any:
    """`body` with one more field than its view has: at its top, or in its first item."""
    grown = copy.deepcopy(body)
    target = grown["items"][0] if grown.get("items") else grown
    target["not_declared"] = 1
    return grown


@pytest.fixture(scope="module")
def answers(world: World) -> list[Answer]:
    _ask_everything(world)
    return world.answers


def test_every_operation_declares_its_answer() -> None:
    """A JSON answer's schema, or (a rendered document) the media types it may be in."""
    for op in OPERATIONS:
        if op.media is None:
            assert op.response is not None and not op.media_types, op.name
        else:
            assert op.response is None and op.media_types, op.name


def test_every_operation_is_asked_by_every_role_kind_that_may(answers: list[Answer]) -> None:
    asked = {(a.op.name, a.who) for a in answers}
    wanted = {(op.name, who) for op in OPERATIONS for who in kinds(op)}
    assert wanted - asked == set()


def test_every_answer_is_what_its_operation_declares(answers: list[Answer]) -> None:
    wrong = [(a.op.name, a.who, a.note, problems(a)[:3]) for a in answers if problems(a)]
    assert wrong == []


def test_optional_parts_are_seen_present_and_absent(answers: list[Answer]) -> None:
    """The cheap pairs: an answer with the part, and one without it."""

    def seen(name: str, key: str) -> set[bool]:
        return {key in a.body for a in answers if a.op.name == name}

    assert seen("evals.start", "eval") == {True, False}  # a start, a dry run
    outcomes = {
        r["outcome"] for a in answers if a.op.name == "ledger.list" for r in a.body["items"]
    }
    assert outcomes == {"ok", None}  # settled, and denied or in flight
    assert seen("agents.secret.clear", "cleared") == {True}
    assert seen("agents.secret.set", "cleared") == {False}
    # The operator's cancel answers the holdout budget; the org's (the author's view) not.
    assert seen("evals.cancel", "holdout_budget") == {True, False}
    assert seen("evals.show", "holdout_budget") == {True, False}
    assert seen("records.show", "imported") == {True, False}
    assert seen("records.show", "live_score") == {True, False}  # a canary graded, or none
    assert seen("mandates.check", "budget") == {True, False}
    assert seen("mandates.check", "rate_limit") == {True, False}
    assert seen("mandates.check", "revoked_at") == {True, False}
    assert seen("evals.show", "plan_digest") == {True, False}  # the operator's, an author's
    warned = {bool(a.body["warnings"]) for a in answers if a.op.name == "mandates.grant"}
    assert warned == {True, False}


def test_a_field_the_schema_does_not_declare_fails(answers: list[Answer]) -> None:
    """Negative: every JSON answer with one field more than its view declares is refused
    by its schema (but those OPEN on purpose), so a view cannot grow past its schema."""
    passed = set()
    for answer in answers:
        if not isinstance(answer.body, dict):
            continue
        grown = Answer(answer.op, answer.who, answer.status, answer.media, answer.body)
        grown.body = _with_an_undeclared_field(answer.body)
        if not problems(grown):
            passed.add(answer.op.name)
    assert passed == OPEN

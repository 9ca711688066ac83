"""What the API returns of the store is its entities: each response body, over real HTTP
from a real gateway, is what the entity's schema (schema/entities/) says, for every role
that may read it. So an operation's response schema may reference the entity's instead of
restating it (docs/architecture.md, "Entities").
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from gateway.operations import RECORDS_SHOW
from records import CallEntry, Store
from schema import entity_schema, make_validator
from tests.evals.reports._setup import run_eval, setup
from tests.gateway.server._gateway import Gateway, mandate, running_gateway


@contextmanager
def _gateway(store: Store, tmp_path: Path) -> Iterator[Gateway]:
    setup(store, tmp_path)  # the tiny suite and the echo agent
    store.mandates.grant(mandate(holder="finance-bot"))
    store.mandates.grant(mandate(holder="finance-bot", max_cost_per_call_usd="0.02"))
    call = CallEntry(str(uuid.uuid4()), "finance-bot", "ticket.classify", "test/echo", "1.0.0")
    store.ledger.deny(call, mandate_id="finance-tickets", reason="no_record", details={})
    with running_gateway(store, tmp_path / "home", eval_workers=0) as gateway:
        yield gateway


@pytest.fixture
def gw(store: Store, tmp_path: Path) -> Iterator[Gateway]:
    with _gateway(store, tmp_path) as gateway:
        yield gateway


@pytest.fixture(scope="module")
def reads_gw(module_store: Store, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    """One gateway per backend for the reads, which change nothing."""
    with _gateway(module_store, tmp_path_factory.mktemp("reads")) as gateway:
        yield gateway


def problems(name: str, value: Any) -> list[str]:
    return [e.message for e in make_validator(entity_schema(name)).iter_errors(value)]


def body(gw: Gateway, path: str, role: str) -> Any:
    response = gw.call("GET", path, role)
    assert response.status_code == 200, (path, role, response.text)
    return response.json()


# (path, the roles that may read it, where the entities are in the body, their schema)
READS = [
    ("/v1/agents", ("operator", "org:test"), "items", "agent"),
    ("/v1/agents/test/echo", ("operator", "org:test"), None, "agent"),
    ("/v1/suites", ("operator", "org:test"), "items", "suite"),
    ("/v1/suites/tiny", ("operator", "org:test"), None, "suite"),
    ("/v1/mandates", ("operator",), "items", "mandate"),
    ("/v1/mandates/finance-tickets", ("operator",), None, "mandate"),
    ("/v1/mandates/finance-tickets/revisions", ("operator",), "items", "mandate-revision"),
    ("/v1/ledger", ("operator", "caller:finance-bot"), "items", "ledger-row"),
    ("/v1/tokens", ("operator",), "items", "token"),
    ("/v1/keys", ("operator",), "items", "key"),
]


@pytest.mark.parametrize(("path", "roles", "where", "name"), READS, ids=[r[0] for r in READS])
def test_each_read_returns_its_entities(
    reads_gw: Gateway, path: str, roles: tuple[str, ...], where: str | None, name: str
) -> None:
    gw = reads_gw
    for role in roles:
        gw.token(role)
        found = body(gw, path, role)
        entities = found[where] if where is not None else [found]
        assert entities, (path, role)
        for entity in entities:
            assert problems(name, entity) == [], (path, role, entity)


def test_an_eval_is_its_entity_to_the_operator_and_to_its_org(gw: Gateway, store: Store) -> None:
    eval_id = run_eval(store, gw.home)
    gw.token("org:test")
    operator = body(gw, f"/v1/evals/{eval_id}", "operator")
    author = body(gw, f"/v1/evals/{eval_id}", "org:test")
    assert "plan_digest" in operator and "plan_digest" not in author
    listed = [
        *body(gw, "/v1/evals", "operator")["items"],
        *body(gw, "/v1/evals?agent=test/echo", "org:test")["items"],
    ]
    for view in (operator, author, *listed):
        assert problems("eval", view) == [], view


def test_a_record_is_its_entity_to_every_role_that_may_read_it(gw: Gateway, store: Store) -> None:
    """GET /v1/records/{org}/{name}: the record entity (the operator's view, or an author's:
    no holdout epochs) with its score as evidence and live conformance, which the
    operation's response schema adds to it; fresh, then stale (a probe found another agent)."""
    run_eval(store, gw.home)
    path = "/v1/records/test/echo"
    roles = ("operator", "org:test", "caller:finance-bot")
    for role in roles:
        gw.token(role)

    def read(role: str) -> dict[str, Any]:
        found = body(gw, path, role)
        assert RECORDS_SHOW.response is not None
        shown = make_validator(RECORDS_SHOW.response()).iter_errors(found)
        assert [e.message for e in shown] == [], (role, found)
        record = {k: v for k, v in found.items() if k not in ("eval_score_lower", "live")}
        assert problems("record", record) == [], (role, record)
        assert ("holdout_epochs" in record) is (role == "operator"), role
        return record

    assert not any(read(role)["stale"] for role in roles)
    store.identities.observe(
        "test/echo",
        "1.0.0",
        answered_id="test/echo",
        answered_version="6.6.6",
        not_advertised=[],
        mismatch="answered as version '6.6.6'",
    )
    for role in roles:
        stale = read(role)
        assert stale["stale"] is True and "'6.6.6'" in stale["stale_reasons"][0], role


def test_the_check_can_fail(gw: Gateway) -> None:
    """Negative: a body the schema does not describe (a ledger listing as agents) fails."""
    rows = body(gw, "/v1/ledger", "operator")["items"]
    assert rows and problems("agent", rows[0])

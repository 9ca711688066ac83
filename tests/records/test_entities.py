"""The entities the API returns are typed records, each with one `to_json`, and the JSON of
real ones (made by a real store, SQLite and PostgreSQL) is what schema/entities/ says.

`additionalProperties: false` throughout, so a field added to a `to_json` and not to its
schema (or the other way round) fails here, not in a client.
"""

from __future__ import annotations

import inspect
import uuid
from collections.abc import Callable
from datetime import timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

import records
from evals import author_record
from records import (
    INVALID_OUTPUT,
    BudgetState,
    CallEntry,
    ExposureSpend,
    LedgerEntry,
    RateLimit,
    RateState,
    Store,
    SuiteInstall,
    utcnow,
    verify_certificate,
)
from records._exposure import spend_all
from schema import entity_names, entity_schema, make_validator
from tests.evals.reports._setup import run_eval, setup
from tests.gateway.server._gateway import mandate
from tests.records.test_agents import manifest

# Each entity's record type in `records` and the schema of its `to_json`.
ENTITIES: dict[str, str] = {
    "AgentInfo": "agent",
    "BudgetState": "budget",
    "EvalInfo": "eval",
    "ExposureResetInfo": "exposure-reset",
    "KeyInfo": "key",
    "LedgerEntry": "ledger-row",
    "LiveConformance": "live-conformance",
    "MandateInfo": "mandate",
    "MandateRevision": "mandate-revision",
    "RateState": "rate-state",
    "InstalledSuite": "suite",
    "TokenInfo": "token",
    "Verified": "verified-certificate",
}
# Records with a `to_json` whose JSON is not an entity of its own but a part of another's:
# a version is an agent's `versions[]`, a limit a rate state's `rate_limit`, an identity
# probe's result the `identity` of an agent's record.
PARTS = {"VersionInfo", "RateLimit", "IdentityInfo"}


def errors(name: str, value: Any) -> list[str]:
    return [e.message for e in make_validator(entity_schema(name)).iter_errors(value)]


def _call(caller: str = "finance-bot") -> CallEntry:
    return CallEntry(str(uuid.uuid4()), caller, "ticket.classify", "acme/t", "1.0.0")


def _suite(version: int, digest: str) -> SuiteInstall:
    return SuiteInstall(
        id="tiny-installed",
        version=version,
        capability="ticket.classify",
        title="Tiny",
        suite_digest=digest,
        digests={"suite_digest": digest},
        files={"suite.yaml": "id: tiny\n"},
        public_cases=2,
        holdout_cases=3,
        holdout_kind="file",
    )


def real_entities(store: Store, root: Path) -> list[tuple[str, Any, dict[str, Any]]]:
    """(schema, record, its JSON) for every entity, as a store makes them."""
    out: list[tuple[str, Any, dict[str, Any]]] = []

    def add(name: str, record: Any, view: dict[str, Any] | None = None) -> None:
        out.append((name, record, record.to_json() if view is None else view))

    # A real eval of the echo agent, to the end: as the operator and an author see it.
    setup(store, root)
    done = store.evals.get(run_eval(store, root / "home"))
    add("eval", done)
    add("eval", done, done.to_json(store.evals.counts(done.id)))
    add(
        "eval", done, done.to_json(store.evals.counts(done.id), spent=store.evals.progress(done.id))
    )
    public = store.evals.counts(done.id, split="public")
    spent = store.evals.progress(done.id, split="public")
    author = done.to_json(public, spent=spent, author_record=author_record)
    assert "plan_digest" not in author and author["progress_of"] == "public"
    assert "holdout_epochs" in done.to_json()["record"]
    assert "holdout_epochs" not in author["record"]
    add("eval", done, author)

    store.agents.register(manifest("acme/t", capabilities=["ticket.classify"]))
    agent = store.agents.register(manifest("acme/t", "1.1.0", contact="ops@acme.example")).agent
    store.agents.set_secret("acme/t", "s3cret")
    agent = store.agents.get("acme/t")
    add("agent", agent)
    add("agent", agent, agent.to_json(store.agents.history("acme/t")))

    store.suites.install(_suite(1, "a" * 64))
    _, second = store.suites.install(_suite(2, "b" * 64), activate=True)
    add("suite", second)
    add("suite", second, second.to_json(store.suites.versions("tiny-installed")))
    first = store.suites.get("tiny-installed", 1)
    add("suite", first)  # not active: activated_at may be set, the version is not current

    store.mandates.grant(mandate())
    _, granted = store.mandates.grant(
        mandate(budget={"period": "month", "amount_usd": "0.01"}), granted_by="tok_x"
    )
    add("mandate", granted)
    add("mandate", store.mandates.revoke(granted.id))
    for revision in store.mandates.revisions(granted.id):
        add("mandate-revision", revision)

    now = utcnow()
    info, _ = store.tokens.create("caller:finance-bot", "ci", expires_at=now + timedelta(days=1))
    add("token", info, info.to_json(now))
    add("token", info, info.to_json(now + timedelta(days=2)))  # expired
    plain, _ = store.tokens.create("operator", None)
    add("token", store.tokens.revoke(plain.id), store.tokens.revoke(plain.id).to_json(now))

    def reserve(**extra: Any) -> LedgerEntry | BudgetState | RateState:
        return store.ledger.reserve(
            _call(),
            mandate_id="finance-tickets",
            cap=Decimal("0.01"),
            expires_at=utcnow() + timedelta(minutes=1),
            details={"matched": ["finance-tickets"]},
            **extra,
        )

    reserved = reserve(budget=("month", Decimal("0.01")))
    assert isinstance(reserved, LedgerEntry)
    add("ledger-row", reserved)
    settled = store.ledger.settle(
        reserved.id,
        outcome_code=INVALID_OUTPUT,
        cost=Decimal("0.004"),
        cost_source="priced",
        latency_ms=12.3456,
    )
    add("ledger-row", settled)
    refused = reserve(budget=("month", Decimal("0.01")))
    assert isinstance(refused, BudgetState)
    add("budget", refused)
    add("ledger-row", store.ledger.deny(_call(), mandate_id=None, reason="no_mandate", details={}))
    limit = RateLimit(calls=1, per="minute", burst=1)
    assert isinstance(reserve(budget=None, rate_limit=limit), LedgerEntry)
    limited = reserve(budget=None, rate_limit=limit)
    assert isinstance(limited, RateState)
    add("rate-state", limited)
    add("live-conformance", store.conformance.of("acme/t", "ticket.classify"))
    add("live-conformance", store.conformance.of("acme/none", "ticket.classify"))

    with store.write() as session:
        spend_all(session, [ExposureSpend("acme", "tiny", "set-1", "tiny@1", limit=5)])
    for reset in store.exposure.reset(org="acme", suite_id="tiny", reset_by="local", reason="why"):
        add("exposure-reset", reset)

    # The real eval's certificate (a full plan's record is certified), verified against
    # this store's key set.
    row = store.certificates.of_eval(done.id)
    assert row is not None
    add("verified-certificate", verify_certificate(row.envelope, store.keys.jwks(), now=utcnow()))

    store.keys.rotate()
    for key in store.keys.keys():
        add("key", key)
    return out


def test_every_entity_of_a_real_store_is_what_its_schema_says(store: Store, tmp_path: Path) -> None:
    made = real_entities(store, tmp_path)
    assert {name for name, _, _ in made} == set(entity_names())
    for name, record, view in made:
        assert ENTITIES[type(record).__name__] == name
        assert errors(name, view) == [], (name, view)


def test_every_public_record_with_a_to_json_is_an_entity_or_a_part() -> None:
    with_json = {
        name
        for name in records.__all__
        if inspect.isclass(cls := getattr(records, name)) and hasattr(cls, "to_json")
    }
    assert with_json == set(ENTITIES) | PARTS
    assert set(ENTITIES.values()) == set(entity_names())


def test_the_schemas_are_strict(store: Store, tmp_path: Path) -> None:
    """Negative: the checks can fail, for an extra field, a missing one, a float of money,
    a timestamp not in holon's form and a status that is not one."""
    made = {name: view for name, _, view in real_entities(store, tmp_path)}
    broken: list[tuple[str, Callable[[dict[str, Any]], None]]] = [
        ("ledger-row", lambda v: v.update(extra=1)),
        ("ledger-row", lambda v: v.update(cost_usd=0.004)),
        ("ledger-row", lambda v: v.update(status="pending")),
        ("ledger-row", lambda v: v.pop("mandate_revision")),
        ("token", lambda v: v.update(created_at="2026-12-02 01:00:00")),
        ("token", lambda v: v.update(token="hol_secret")),
        ("agent", lambda v: v.update(secret="s3cret")),
        ("agent", lambda v: v["manifest"].pop("endpoint")),
        ("mandate", lambda v: v["mandate"].pop("holder")),
        ("key", lambda v: v.update(algorithm="RS256")),
        ("suite", lambda v: v["holdout"].update(seed=7)),
        ("budget", lambda v: v.update(spent_usd="a lot")),
        ("eval", lambda v: v.update(status="finished")),
        ("eval", lambda v: v.pop("progress_of")),
        ("verified-certificate", lambda v: v.update(valid=False)),
        ("verified-certificate", lambda v: v.update(subject="not a digest")),
    ]
    for name, damage in broken:
        view = {k: (dict(v) if isinstance(v, dict) else v) for k, v in made[name].items()}
        damage(view)
        assert errors(name, view), (name, view)


def test_an_unknown_entity_is_refused_with_the_known_ones() -> None:
    with pytest.raises(KeyError, match="no entity schema 'ledger': one of agent, budget"):
        entity_schema("ledger")

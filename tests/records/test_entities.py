"""The entities the API returns are typed records, each with one `to_json`, and the JSON of
real ones (made by a real store, SQLite and PostgreSQL) is what schema/entities/ says.

`additionalProperties: false` throughout, so a field added to a `to_json` and not to its
schema (or the other way round) fails here, not in a client.
"""

from __future__ import annotations

import copy
import inspect
import re
import uuid
from collections.abc import Callable
from datetime import timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

import records
from evals import author_record, rebuild
from evals._finish import suite_counts
from evals._scores import score_eval
from evals.suites import install_suite
from records import (
    INVALID_OUTPUT,
    AgentRecord,
    BudgetState,
    CallEntry,
    CanaryRun,
    ExposureSpend,
    LedgerEntry,
    RateLimit,
    RateState,
    Store,
    SuiteInstall,
    utc_text,
    utcnow,
    verify_certificate,
)
from records._exposure import spend_all
from records._models import AgentRecordRow
from schema import entity_names, entity_schema, make_validator
from schema.jsontext import dumps
from tests.evals.reports._agent import AGENT_ID
from tests.evals.reports._setup import run_eval, setup, suite_dir
from tests.evals.suites._make import SUITE_YAML
from tests.gateway.server._gateway import mandate
from tests.records._documents import suite_install
from tests.records.test_agents import manifest

# Each entity's record type in `records` and the schema of its `to_json`.
ENTITIES: dict[str, str] = {
    "AgentInfo": "agent",
    "AgentRecord": "record",
    "BudgetState": "budget",
    "CanaryRun": "canary-run",
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
# probe's result the `identity` of an agent's record, and a suite's grades, a split, an
# overfit verdict and a warning the parts of an agent's record.
PARTS = {
    "VersionInfo",
    "RateLimit",
    "IdentityInfo",
    "RecordSuite",
    "RecordSplit",
    "RecordOverfit",
    "RecordWarning",
    "RecordCanaries",
}


def errors(name: str, value: Any) -> list[str]:
    return [e.message for e in make_validator(entity_schema(name)).iter_errors(value)]


def _call(caller: str = "finance-bot") -> CallEntry:
    return CallEntry(str(uuid.uuid4()), caller, "ticket.classify", "acme/t", "1.0.0")


def _suite(version: int, digest: str) -> SuiteInstall:
    return suite_install(version, digest, "tiny-installed")


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
        spend_all(
            session,
            done.id,
            [ExposureSpend("acme", "tiny", "set-1", "tiny@1", limit=5, instance_limit=6)],
        )
    for reset in store.exposure.reset(org="acme", suite_id="tiny", reset_by="local", reason="why"):
        add("exposure-reset", reset)

    # The real eval's certificate (a full plan's record is certified), verified against
    # this store's key set.
    row = store.certificates.of_eval(done.id)
    assert row is not None
    add("verified-certificate", verify_certificate(row.envelope, store.keys.jwks(), now=utcnow()))

    out += real_records(store, root, done.id)

    store.keys.rotate()
    for key in store.keys.keys():
        add("key", key)
    return out


def real_records(store: Store, root: Path, eval_id: str) -> list[tuple[str, Any, dict[str, Any]]]:
    """The agent's record of a real eval (`eval_id`, of the echo agent), every way a store
    reads it: as the operator and an author see it, as written (no staleness), another
    issuer's certificate of it imported, and stale (a new suite version past its grace
    period; a probe that found another agent). The operator's stale view comes last."""
    out: list[tuple[str, Any, dict[str, Any]]] = []
    version = store.agents.get(AGENT_ID).version
    record = store.evals.current_record_with_staleness(AGENT_ID, version)
    assert record is not None and record.eval_id == eval_id and not record.stale
    assert record.holdout_evals and record.holdout_epochs is not None
    author = author_record(record)
    assert author.holdout_epochs is None and "holdout_epochs" not in author.to_json()
    assert author.to_json() == author_record(record.to_json())  # one rule for both
    written = store.evals.current_record(AGENT_ID, version)
    assert written is not None and written.stale_reasons is None
    out += [("record", r, r.to_json()) for r in (record, author, written)]
    out += [("record", r, r.to_json()) for r in store.evals.record_history(AGENT_ID)]
    imported = _imported(store, eval_id)
    assert imported.issuer == "urn:holon:issuer:other" and imported.eval_started_at is None
    out.append(("record", imported, imported.to_json()))

    v2 = SUITE_YAML.replace("\nversion: 1\n", "\nversion: 2\n")
    install_suite(store, suite_dir(root / "suite-v2", suite_yaml=v2), activate=True)
    activated = store.suites.get("tiny").activated_at
    assert activated is not None
    graced = store.evals.current_record_with_staleness(
        AGENT_ID, version, now=activated + timedelta(days=14)
    )
    assert graced is not None and graced.stale and graced.stale_reasons
    assert "grace period ended" in graced.stale_reasons[0]
    store.identities.observe(
        AGENT_ID,
        version,
        answered_id=AGENT_ID,
        answered_version="6.6.6",
        not_advertised=[],
        mismatch="answered as version '6.6.6'",
    )
    probed = store.evals.current_record_with_staleness(AGENT_ID, version)
    assert probed is not None and probed.stale and probed.stale_reasons
    assert "answered as version '6.6.6'" in probed.stale_reasons[0]
    out += [("record", r, r.to_json()) for r in (author_record(graced), author_record(probed))]
    out += [("record", r, r.to_json()) for r in (graced, probed)]
    out += _drifted(store, eval_id, version)
    return out


def _drifted(store: Store, eval_id: str, version: str) -> list[tuple[str, Any, dict[str, Any]]]:
    """Canaries graded against the eval's record until one decides drift: the runs, and
    the record with its canaries as the operator and an author see it."""
    runs = []
    for n in range(3):
        run = CanaryRun(
            f"req-canary-{n}", AGENT_ID, version, "ticket.classify", eval_id, "tiny", 1,
            "ok", n == 0, Decimal("0.001"), 2.5, utcnow(),
        )  # fmt: skip
        store.canaries.record(
            run, lambda state, passed: ({"n": 1}, {"test": 1} if not passed else None)
        )
        runs.append(("canary-run", run, run.to_json()))
    record = store.evals.current_record_with_staleness(AGENT_ID, version)
    assert record is not None and record.drifted and record.canaries is not None
    seen = record.canaries["ticket.classify"]
    assert (seen.graded, seen.passed, seen.drift) == (2 + 1, 1, {"test": 1})
    author = author_record(record)
    assert author.to_json()["canaries"] == {"ticket.classify": {"drifted": True}}
    # The operator's view last: it is stale too (the probe above), and has every part.
    return [*runs, ("record", author, author.to_json()), ("record", record, record.to_json())]


def _imported(store: Store, eval_id: str) -> AgentRecord:
    """This store's certificate of the eval's record, as another issuer would have signed
    it, imported here: the record a mandate then reads, labelled with that issuer."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from records import PAYLOAD_TYPE, jwk_of, sign_envelope
    from records._certificates import key_id

    row = store.certificates.of_eval(eval_id)
    assert row is not None
    ours = verify_certificate(row.envelope, store.keys.jwks(), now=utcnow())
    key = Ed25519PrivateKey.generate()
    issuer = "urn:holon:issuer:other"
    statement = copy.deepcopy(ours.statement)
    statement["predicate"].update(issuer=issuer, certificate_id="crt_01M8S16TF620DHWN2EDYBJWQDT")
    envelope = sign_envelope(dumps(statement).encode(), PAYLOAD_TYPE, key, key_id(key.public_key()))
    jwks = {"issuer": issuer, "keys": [jwk_of(key.public_key())]}
    store.certificates.import_verified(
        verify_certificate(envelope, jwks, now=utcnow()), envelope, jwks, revocation_checked=True
    )
    (imported,) = store.certificates.imported_records(
        AGENT_ID,
        store.agents.get(AGENT_ID).version,
        store.agents.get(AGENT_ID).manifest,
        now=utcnow(),
    )
    return imported


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
        ("record", lambda v: v.update(extra=1)),
        ("record", lambda v: v.update(eval_score="0.9")),
        ("record", lambda v: v.update(stale="no")),
        ("record", lambda v: v.update(revocation="checked")),
        ("record", lambda v: v.pop("eval_started_at")),
        ("record", lambda v: v["suites"]["tiny"].update(grade="A")),
        ("record", lambda v: v["suites"]["tiny"]["holdout"].update(total=6.5)),
        ("record", lambda v: v["suites"]["tiny"]["overfit"].update(verdict="maybe")),
        ("record", lambda v: v["warnings"].append({"code": "overfit", "suite": "tiny"})),
        ("canary-run", lambda v: v.update(cost_usd=0.001)),
        ("canary-run", lambda v: v.pop("passed")),
    ]
    assert made["record"]["stale"] is True and made["record"]["holdout_epochs"]
    assert errors("record", made["record"]) == []
    for name, damage in broken:
        view = copy.deepcopy(made[name])
        damage(view)
        assert errors(name, view), (name, view)


def test_an_unknown_entity_is_refused_with_the_known_ones() -> None:
    with pytest.raises(KeyError, match="no entity schema 'ledger': one of agent, budget"):
        entity_schema("ledger")


def test_a_stored_record_reads_back_to_the_json_it_was_written_as(
    store: Store, tmp_path: Path
) -> None:
    """Round trip: each record a real eval wrote (stored JSON) -> AgentRecord -> `to_json` is
    the stored JSON, key for key and, written out, byte for byte; and so is the record in
    the eval's result, which the API shows with the eval."""
    setup(store, tmp_path)
    first = run_eval(store, tmp_path / "home")
    second = run_eval(store, tmp_path / "home", repetitions=2)  # narrowed: no record
    third = run_eval(store, tmp_path / "home")
    with store.read() as session:
        stored = {r.eval_id: r.record for r in session.scalars(select(AgentRecordRow))}
    assert set(stored) == {first, third}
    for eval_id, written in stored.items():
        # What the record was before it was typed: the eval's scores' JSON (evals._scores)
        # between the agent's fields and the epochs, then its certificate.
        info = store.evals.get(eval_id)
        plan = rebuild(store, info.plan, home=tmp_path / "home")
        score = score_eval(
            list(plan.agent.capabilities), suite_counts(plan, store.evals.scored_cells(eval_id))
        )
        untyped = {
            "agent": plan.agent.id,
            "agent_version": plan.agent.version,
            "eval_id": eval_id,
            "evaluated_at": written["evaluated_at"],
            "eval_started_at": utc_text(info.created_at),
            "stale": False,
            **score.to_json(),
            "holdout_epochs": {p.suite.id: p.epoch for p in plan.suites if p.holdout},
            "certificate_id": written["certificate_id"],
        }
        assert dumps(written) == dumps(untyped)
        record = AgentRecord.from_json(written)
        assert record.to_json() == written
        assert list(record.to_json()) == list(written)  # the keys in their order
        assert dumps(record.to_json()) == dumps(written)
        assert AgentRecord.from_json(record.to_json()) == record
        result = store.evals.get(eval_id).result
        assert result is not None and result["record"] == written
    narrowed = store.evals.get(second).result
    assert narrowed is not None
    assert dumps(AgentRecord.from_json(narrowed["record"]).to_json()) == dumps(narrowed["record"])
    assert [r.eval_id for r in store.evals.record_history(AGENT_ID)] == [third, first]


def test_what_is_not_a_record_does_not_read_as_one(store: Store, tmp_path: Path) -> None:
    """Negative: `from_json` names the path of an extra key, a missing one, a wrong type."""
    setup(store, tmp_path)
    run_eval(store, tmp_path / "home")
    written = store.evals.current_record(AGENT_ID)
    assert written is not None
    good = written.to_json()
    broken: list[tuple[Callable[[dict[str, Any]], None], str]] = [
        (lambda v: v.update(extra=1), "$: unknown keys extra"),
        (lambda v: v.update(eval_score="0.9"), "$.eval_score: an exact number"),
        (lambda v: v.pop("suites"), "$: no 'suites'"),
        (lambda v: v.update(evaluated_at="yesterday"), "$.evaluated_at: not a date-time"),
        (lambda v: v["suites"]["tiny"]["public"].update(total=6.5), "$.suites.tiny.public.total"),
        (lambda v: v["suites"]["tiny"]["overfit"].update(verdict="maybe"), "verdict: one of"),
        (lambda v: v["warnings"].append({"code": "overfit"}), "$.warnings[0]: no 'suite'"),
    ]
    for damage, message in broken:
        view = copy.deepcopy(good)
        damage(view)
        with pytest.raises(ValueError, match=re.escape(message)):
            AgentRecord.from_json(view)
    # Another issuer's record may say more than this store reads, and leave out lists.
    loose = {**copy.deepcopy(good), "identity": {}, "issuer": "urn:x"}
    del loose["warnings"], loose["eval_started_at"]
    read = AgentRecord.from_json(loose, strict=False)
    assert read.warnings == () and read.issuer == "urn:x" and read.eval_started_at is None

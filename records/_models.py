"""The tables. Changing one means a new alembic migration in records/migrations/."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column
from sqlalchemy.sql.expression import true

from records._types import UTCDateTime

# Stable constraint names, so migrations are the same on SQLite and PostgreSQL.
NAMING = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)
    type_annotation_map = {datetime: UTCDateTime(), dict[str, Any]: JSON()}


class Agent(Base):
    """A registered agent; its manifests live in `agent_versions`."""

    __tablename__ = "agents"

    id: Mapped[str] = mapped_column(String(79), primary_key=True)  # org/name
    org: Mapped[str] = mapped_column(String(39), index=True)
    current_version: Mapped[str] = mapped_column(String(64))
    disabled: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]
    # When current_version last became current (a registration or a
    # reactivation): records of evals started before it do not apply.
    current_since: Mapped[datetime | None] = mapped_column(nullable=True)


class AgentVersion(Base):
    """Every manifest ever registered, kept: records refer to (agent, version)."""

    __tablename__ = "agent_versions"
    __table_args__ = (UniqueConstraint("agent_id", "seq"),)

    agent_id: Mapped[str] = mapped_column(ForeignKey("agents.id"), primary_key=True)
    version: Mapped[str] = mapped_column(String(64), primary_key=True)
    seq: Mapped[int] = mapped_column(Integer)  # registration order within the agent
    manifest: Mapped[dict[str, Any]]
    manifest_digest: Mapped[str] = mapped_column(String(64))
    registered_at: Mapped[datetime]


class AgentSecret(Base):
    """The agent's bearer secret, encrypted; write-only through every interface."""

    __tablename__ = "agent_secrets"

    agent_id: Mapped[str] = mapped_column(ForeignKey("agents.id"), primary_key=True)
    ciphertext: Mapped[bytes] = mapped_column(LargeBinary)
    updated_at: Mapped[datetime]


class SuiteRow(Base):
    """An installed suite; its versions install side by side, one is active."""

    __tablename__ = "suites"

    id: Mapped[str] = mapped_column(String(63), primary_key=True)
    active_version: Mapped[int | None] = mapped_column(Integer, nullable=True)
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]


class SuiteVersionRow(Base):
    """One installed (suite, version): its files as installed and its digests.

    The files (suite.yaml, schemas, case files; the holdout included) are the
    operator's: the store serves only public parts to anyone else.
    """

    __tablename__ = "suite_versions"

    suite_id: Mapped[str] = mapped_column(ForeignKey("suites.id"), primary_key=True)
    version: Mapped[int] = mapped_column(Integer, primary_key=True)
    capability: Mapped[str] = mapped_column(String(100), index=True)
    title: Mapped[str] = mapped_column(String(200))
    suite_digest: Mapped[str] = mapped_column(String(64))
    digests: Mapped[dict[str, Any]]
    files: Mapped[dict[str, Any]]  # relative path -> text
    public_cases: Mapped[int] = mapped_column(Integer)
    holdout_cases: Mapped[int] = mapped_column(Integer)
    holdout_kind: Mapped[str] = mapped_column(String(16))  # none | file | pool | generate
    # A pool's size and the epochs it holds (holdout_cases is then the subset an epoch
    # grades), as evals.suites.HoldoutPool says; NULL: no pool.
    holdout_pool_cases: Mapped[int | None] = mapped_column(Integer, nullable=True)
    holdout_pool_epochs: Mapped[int | None] = mapped_column(Integer, nullable=True)
    grace_days: Mapped[int] = mapped_column(Integer, default=14)
    holdout_epoch: Mapped[int] = mapped_column(Integer, default=0)
    evals_in_epoch: Mapped[int] = mapped_column(Integer, default=0)
    epoch_started_at: Mapped[datetime | None] = mapped_column(nullable=True)  # None: installed_at
    installed_at: Mapped[datetime]
    activated_at: Mapped[datetime | None] = mapped_column(nullable=True)


class StoreSecret(Base):
    """Secrets the store keeps for itself (the holdout secret), created on first use."""

    __tablename__ = "store_secrets"

    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    value: Mapped[bytes] = mapped_column(LargeBinary)
    created_at: Mapped[datetime]


class EvalRun(Base):
    """One eval: an agent version against a plan of suites; its cells are rows."""

    __tablename__ = "evals"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)  # ev_ + ULID
    agent_id: Mapped[str] = mapped_column(String(79), index=True)
    agent_version: Mapped[str] = mapped_column(String(64))
    plan: Mapped[dict[str, Any]]
    plan_digest: Mapped[str] = mapped_column(String(64))
    full_plan: Mapped[bool] = mapped_column(Boolean)
    status: Mapped[str] = mapped_column(String(16))  # running | done | cancelled
    cells_total: Mapped[int] = mapped_column(Integer)
    created_at: Mapped[datetime]
    finished_at: Mapped[datetime | None] = mapped_column(nullable=True)
    result: Mapped[dict[str, Any] | None] = mapped_column(nullable=True)
    # An imported eval's origin (records._imports); None for an eval run on this store.
    origin: Mapped[dict[str, Any] | None] = mapped_column(nullable=True)


class ImportedReport(Base):
    """The report an imported eval was checked from, kept whole: its views render it."""

    __tablename__ = "imported_reports"

    eval_id: Mapped[str] = mapped_column(ForeignKey("evals.id"), primary_key=True)
    report: Mapped[dict[str, Any]]


class EvalCell(Base):
    """One (suite, case, repetition) of an eval: claimed under a lease, recorded once.

    `fence` grows by one at every claim; a result is recorded only by the
    claim that still holds it (status running, same fence), so a worker that
    lost its lease cannot record.
    """

    __tablename__ = "eval_cells"
    __table_args__ = (Index("ix_eval_cells_claim", "eval_id", "status", "idx"),)

    eval_id: Mapped[str] = mapped_column(ForeignKey("evals.id"), primary_key=True)
    idx: Mapped[int] = mapped_column(Integer, primary_key=True)
    suite_id: Mapped[str] = mapped_column(String(63))
    suite_version: Mapped[int] = mapped_column(Integer)
    split: Mapped[str] = mapped_column(String(8))
    case_id: Mapped[str] = mapped_column(String(100))
    case_digest: Mapped[str] = mapped_column(String(64))
    repetition: Mapped[int] = mapped_column(Integer)
    tags: Mapped[list[str]] = mapped_column(JSON)
    request_id: Mapped[str] = mapped_column(String(36))
    status: Mapped[str] = mapped_column(String(8))  # pending | running | done
    lease_owner: Mapped[str | None] = mapped_column(String(128), nullable=True)
    lease_expires_at: Mapped[datetime | None] = mapped_column(nullable=True)
    fence: Mapped[int] = mapped_column(Integer, default=0)
    outcome_code: Mapped[str | None] = mapped_column(String(20), nullable=True)
    passed: Mapped[bool | None] = mapped_column(Boolean, nullable=True)
    cost_usd: Mapped[str | None] = mapped_column(String(40), nullable=True)  # Decimal text
    latency_ms: Mapped[float | None] = mapped_column(Float, nullable=True)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    outcome: Mapped[dict[str, Any] | None] = mapped_column(nullable=True)  # without the output
    # SQL NULL (not JSON null) when absent, so retention can find what it dropped.
    output: Mapped[Any] = mapped_column(JSON(none_as_null=True), nullable=True)
    checks: Mapped[list[Any] | None] = mapped_column(JSON, nullable=True)
    recorded_by: Mapped[str | None] = mapped_column(String(128), nullable=True)
    finished_at: Mapped[datetime | None] = mapped_column(nullable=True)


class AgentRecordRow(Base):
    """The record a complete full-plan eval wrote; history kept.

    An agent version's current record is the one whose eval *started* last
    (`eval_created_at`), whichever finished first.
    """

    __tablename__ = "agent_records"
    __table_args__ = (
        Index("ix_agent_records_lookup", "agent_id", "agent_version", "eval_created_at"),
    )

    eval_id: Mapped[str] = mapped_column(ForeignKey("evals.id"), primary_key=True)
    agent_id: Mapped[str] = mapped_column(String(79))
    agent_version: Mapped[str] = mapped_column(String(64))
    eval_created_at: Mapped[datetime]
    record: Mapped[dict[str, Any]]
    created_at: Mapped[datetime]


class AgentIdentityRow(Base):
    """What the last identity probe of an agent's registered version found.

    `mismatch_at` is the last time a probe found another id or version: it
    makes every record of an eval started before it stale (docs/gateway.md,
    "Identity"); a later matching probe leaves it. `not_advertised` lists the
    claimed capabilities the last answer did not advertise (refused live).
    """

    __tablename__ = "agent_identities"

    agent_id: Mapped[str] = mapped_column(ForeignKey("agents.id"), primary_key=True)
    agent_version: Mapped[str] = mapped_column(String(64), primary_key=True)
    probed_at: Mapped[datetime]
    answered_id: Mapped[str] = mapped_column(String(120))
    answered_version: Mapped[str] = mapped_column(String(120))
    not_advertised: Mapped[list[Any]] = mapped_column(JSON)
    mismatch_at: Mapped[datetime | None] = mapped_column(nullable=True)
    mismatch_reason: Mapped[str | None] = mapped_column(String(500), nullable=True)
    # The RFC 8785 digest of the agent card an A2A agent served at its last probe
    # (None: not an A2A agent, or never probed since certificates came).
    card_digest: Mapped[str | None] = mapped_column(String(64), nullable=True)


class TokenRow(Base):
    """An API token: random, shown once, stored as its sha256; revocable, history kept."""

    __tablename__ = "tokens"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)  # tok_ + ULID
    role: Mapped[str] = mapped_column(String(80))  # operator | org:ORG | caller:NAME
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    prefix: Mapped[str] = mapped_column(String(12))  # shown in listings to tell tokens apart
    note: Mapped[str | None] = mapped_column(String(200), nullable=True)
    created_at: Mapped[datetime]
    revoked_at: Mapped[datetime | None] = mapped_column(nullable=True)
    # None: never expires. An expired token authenticates as nothing.
    expires_at: Mapped[datetime | None] = mapped_column(nullable=True)
    # Coarse: written at most once a minute per token (records._tokens, LAST_USED_EVERY).
    last_used_at: Mapped[datetime | None] = mapped_column(nullable=True)


class MandateRow(Base):
    """A mandate: a caller's policy (docs/gateway.md, "Mandates").

    Regranting an id replaces its document (`revision` grows; every revision
    is kept in `mandate_revisions`); revoking keeps the row, so ledger rows
    always point at something.
    """

    __tablename__ = "mandates"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    holder: Mapped[str] = mapped_column(String(64), index=True)
    document: Mapped[dict[str, Any]]
    digest: Mapped[str] = mapped_column(String(64))
    revision: Mapped[int] = mapped_column(Integer, default=1)
    granted_at: Mapped[datetime]
    updated_at: Mapped[datetime]
    revoked_at: Mapped[datetime | None] = mapped_column(nullable=True)


class MandateRevisionRow(Base):
    """One granted revision of a mandate, kept: what a ledger row's `mandate_revision` names.

    `granted_by`: the token id that granted it over the API, `local` for the
    CLI on the store, NULL for revisions from before history was kept
    (backfilled by migration 0009).
    """

    __tablename__ = "mandate_revisions"

    mandate_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    revision: Mapped[int] = mapped_column(Integer, primary_key=True)
    holder: Mapped[str] = mapped_column(String(64))
    document: Mapped[dict[str, Any]]
    digest: Mapped[str] = mapped_column(String(64))
    granted_at: Mapped[datetime]
    granted_by: Mapped[str | None] = mapped_column(String(32), nullable=True)


class BudgetRow(Base):
    """What a mandate has spent and holds reserved in one calendar period (UTC).

    Money as Decimal text: exact, and the row is the lock that serialises
    reservations against one budget (FOR UPDATE on PostgreSQL, BEGIN
    IMMEDIATE on SQLite).
    """

    __tablename__ = "budgets"

    mandate_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    period: Mapped[str] = mapped_column(String(16), primary_key=True)  # 2026-11, 2026-W48, ...
    spent_usd: Mapped[str] = mapped_column(String(40))
    reserved_usd: Mapped[str] = mapped_column(String(40))
    updated_at: Mapped[datetime]


class RateBucketRow(Base):
    """A mandate's rate-limit bucket (records._rate): its level in units, at `updated_at`.

    Keyed by mandate id alone: a new revision of the mandate keeps its bucket
    (capped at the new burst). The row is the lock that serialises
    reservations against one limit, as a budget row is.
    """

    __tablename__ = "rate_buckets"

    mandate_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    level: Mapped[int] = mapped_column(BigInteger)  # UNITS_PER_TOKEN to a token
    updated_at: Mapped[datetime]


class LedgerRow(Base):
    """One live call: its decision, its reservation, then its settled outcome and cost.

    status: `reserved` (decided, calling), `settled` (outcome known),
    `expired` (the reservation outlived the call's deadline: the process
    died; charged what it reserved, `cost_source` `reserved`, since the agent
    may have been called), `denied` (never called).
    """

    __tablename__ = "ledger"
    __table_args__ = (
        Index("ix_ledger_caller", "caller", "id"),
        Index("ix_ledger_reserved", "status", "expires_at"),
    )

    id: Mapped[str] = mapped_column(String(32), primary_key=True)  # led_ + ULID
    request_id: Mapped[str] = mapped_column(String(36), unique=True)
    caller: Mapped[str] = mapped_column(String(64))
    mandate_id: Mapped[str | None] = mapped_column(String(64), nullable=True, index=True)
    period: Mapped[str | None] = mapped_column(String(16), nullable=True)
    agent_id: Mapped[str | None] = mapped_column(String(79), nullable=True, index=True)
    agent_version: Mapped[str | None] = mapped_column(String(64), nullable=True)
    capability: Mapped[str] = mapped_column(String(100))
    decision: Mapped[str] = mapped_column(String(8))  # allow | deny
    reason: Mapped[str | None] = mapped_column(String(40), nullable=True)
    details: Mapped[dict[str, Any]]
    status: Mapped[str] = mapped_column(String(10))
    reserved_usd: Mapped[str] = mapped_column(String(40))
    cost_usd: Mapped[str] = mapped_column(String(40))
    cost_source: Mapped[str | None] = mapped_column(String(10), nullable=True)
    outcome_code: Mapped[str | None] = mapped_column(String(20), nullable=True)
    latency_ms: Mapped[float | None] = mapped_column(Float, nullable=True)
    created_at: Mapped[datetime]
    expires_at: Mapped[datetime | None] = mapped_column(nullable=True)
    settled_at: Mapped[datetime | None] = mapped_column(nullable=True)
    # What decided the call: the revision of `mandate_id` (allowed or denied by
    # it) and the eval whose record it read (None when it read none).
    mandate_revision: Mapped[int | None] = mapped_column(Integer, nullable=True)
    record_eval_id: Mapped[str | None] = mapped_column(String(32), nullable=True)
    # The certificate of that record (its own or an imported one; None: none read).
    certificate_id: Mapped[str | None] = mapped_column(String(32), nullable=True)


class LiveConformanceRow(Base):
    """Per agent, capability and UTC day: live answers checked against the contract.

    Kept in the ledger's own transaction (records._conformance): `calls` are
    settled answers (outcome ok or invalid_output), `violations` those whose
    output broke the output schema (the agent's), `input_violations` calls
    refused for an input that broke the input schema (the caller's; `agent_id`
    is "" for a routed call, which had no agent yet), `check_failures` answers
    that failed a check of the suite's that reads only input and output.
    """

    __tablename__ = "live_conformance"

    agent_id: Mapped[str] = mapped_column(String(79), primary_key=True)
    capability: Mapped[str] = mapped_column(String(100), primary_key=True)
    day: Mapped[str] = mapped_column(String(10), primary_key=True)  # 2026-12-01 (UTC)
    calls: Mapped[int] = mapped_column(Integer)
    violations: Mapped[int] = mapped_column(Integer)
    input_violations: Mapped[int] = mapped_column(Integer)
    # Answers that failed a reference-free check of the suite (evals.suites.Contract):
    # counted apart, by the gateway, after the answer (records._conformance).
    check_failures: Mapped[int] = mapped_column(Integer, server_default="0", default=0)


class IssuerRow(Base):
    """This store as an issuer of certificates: one row, made with the first key."""

    __tablename__ = "certificate_issuer"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)  # always 1
    issuer: Mapped[str] = mapped_column(String(200))
    created_at: Mapped[datetime]


class SigningKeyRow(Base):
    """An Ed25519 signing key: its public JWK, and the private key encrypted (Fernet).

    `retired_at` None: the key that signs. A retired key signs nothing more and
    stays in the key set, so what it signed still verifies.
    """

    __tablename__ = "signing_keys"

    kid: Mapped[str] = mapped_column(String(64), primary_key=True)  # RFC 7638 thumbprint
    public_jwk: Mapped[dict[str, Any]]
    private_key: Mapped[bytes] = mapped_column(LargeBinary)
    created_at: Mapped[datetime]
    retired_at: Mapped[datetime | None] = mapped_column(nullable=True)


class CertificateRow(Base):
    """A certificate: one this store issued for a record, or one imported from an issuer.

    An imported certificate is the record it carries (`record`), labelled with
    its issuer; a local one points at its eval's record.
    """

    __tablename__ = "certificates"
    __table_args__ = (Index("ix_certificates_agent", "agent_id", "agent_version", "issued_at"),)

    id: Mapped[str] = mapped_column(String(32), primary_key=True)  # crt_ + ULID
    agent_id: Mapped[str] = mapped_column(String(79))
    agent_version: Mapped[str] = mapped_column(String(64))
    issuer: Mapped[str] = mapped_column(String(200))
    imported: Mapped[bool] = mapped_column(Boolean)
    eval_id: Mapped[str] = mapped_column(String(32))  # the issuer's eval
    subject_digest: Mapped[str] = mapped_column(String(64))
    card_digest: Mapped[str | None] = mapped_column(String(64), nullable=True)
    envelope: Mapped[dict[str, Any]]
    record: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)  # imported only
    issued_at: Mapped[datetime]
    expires_at: Mapped[datetime]
    created_at: Mapped[datetime]
    revoked_at: Mapped[datetime | None] = mapped_column(nullable=True)
    revoked_reason: Mapped[str | None] = mapped_column(String(500), nullable=True)
    # Imported only: whether the issuer's revocation list was checked at import or since
    # (False: imported with revocation unchecked, until a re-check succeeds).
    revocation_checked: Mapped[bool] = mapped_column(Boolean, server_default=true(), default=True)
    revocation_checked_at: Mapped[datetime | None] = mapped_column(nullable=True)


class CertificateIssuerRow(Base):
    """Another issuer as this store knows it: its name bound to the public keys pinned at
    first import (or at registration), changed only by an operator's rotation (`history`)."""

    __tablename__ = "certificate_issuers"

    issuer: Mapped[str] = mapped_column(String(200), primary_key=True)
    keys: Mapped[list[dict[str, Any]]] = mapped_column(JSON)  # public JWKs, by kid
    pinned_at: Mapped[datetime]
    updated_at: Mapped[datetime]
    history: Mapped[list[dict[str, Any]]] = mapped_column(JSON)  # pinned, rotated: when, by whom
    revocations_url: Mapped[str | None] = mapped_column(String(500), nullable=True)
    checked_at: Mapped[datetime | None] = mapped_column(nullable=True)  # its list, last read
    check_error: Mapped[str | None] = mapped_column(String(500), nullable=True)


class ConsoleSessionRow(Base):
    """A web console sign-in: its cookie stored as its sha256, bound to the token it was
    exchanged for (revoking the token ends the session), with an expiry."""

    __tablename__ = "console_sessions"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)  # sha256 of the cookie
    token_id: Mapped[str] = mapped_column(String(32), ForeignKey("tokens.id"), index=True)
    created_at: Mapped[datetime]
    expires_at: Mapped[datetime]
    ended_at: Mapped[datetime | None] = mapped_column(nullable=True)  # signed out


class A2ATaskRow(Base):
    """A task of the gateway's A2A front door (docs/gateway.md, "A2A front door").

    In the store, not in a process: a gateway runs several processes on one
    PostgreSQL store, and a client polling GetTask may reach any of them.
    `task` is the A2A Task as it is answered; `caller` alone may read it.
    """

    __tablename__ = "a2a_tasks"

    id: Mapped[str] = mapped_column(String(36), primary_key=True)  # uuid4
    caller: Mapped[str] = mapped_column(String(200), index=True)
    door: Mapped[str] = mapped_column(String(300))  # capability:<name> or agent:<org/name>
    state: Mapped[str] = mapped_column(String(40))
    task: Mapped[dict[str, Any]] = mapped_column(JSON)
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]


class EvalReportRow(Base):
    """A done eval's rendered report, kept for every process (records._eval_reports).

    One row per audience and format: an author's report is never another row's. `key`
    is the digest of everything the report was made of (evals.reports.report_key); a
    reader whose key differs renders again and replaces the row. `body` is the text in
    UTF-8, zlib-compressed when `compressed`.
    """

    __tablename__ = "eval_reports"

    eval_id: Mapped[str] = mapped_column(ForeignKey("evals.id"), primary_key=True)
    audience: Mapped[str] = mapped_column(String(16), primary_key=True)
    form: Mapped[str] = mapped_column(String(8), primary_key=True)
    key: Mapped[str] = mapped_column(String(64))
    compressed: Mapped[bool] = mapped_column(Boolean)
    body: Mapped[bytes] = mapped_column(LargeBinary)
    created_at: Mapped[datetime]


class CanaryRunRow(Base):
    """One canary: a holdout case the gateway sent an agent inside its live traffic and
    graded as an eval cell (records._canaries). Billed to the operator, never a caller."""

    __tablename__ = "canary_runs"
    __table_args__ = (
        Index("ix_canary_runs_agent_at", "agent_id", "created_at"),
        Index("ix_canary_runs_record", "agent_id", "agent_version", "capability", "created_at"),
    )

    id: Mapped[str] = mapped_column(String(36), primary_key=True)  # the call's request id
    agent_id: Mapped[str] = mapped_column(String(79))
    agent_version: Mapped[str] = mapped_column(String(64))
    capability: Mapped[str] = mapped_column(String(100))
    record_eval_id: Mapped[str] = mapped_column(String(32))
    suite_id: Mapped[str] = mapped_column(String(100))
    suite_version: Mapped[int] = mapped_column(Integer)
    created_at: Mapped[datetime]
    outcome_code: Mapped[str] = mapped_column(String(20))
    passed: Mapped[bool] = mapped_column(Boolean)
    cost_usd: Mapped[str] = mapped_column(String(40))  # Decimal text
    latency_ms: Mapped[float] = mapped_column(Float)


class CanaryStateRow(Base):
    """Per agent version and capability: the drift test over the canaries graded since
    the record's eval (`state`: evals' DriftState as JSON), and the drift it decided."""

    __tablename__ = "canary_states"

    agent_id: Mapped[str] = mapped_column(String(79), primary_key=True)
    agent_version: Mapped[str] = mapped_column(String(64), primary_key=True)
    capability: Mapped[str] = mapped_column(String(100), primary_key=True)
    record_eval_id: Mapped[str] = mapped_column(String(32))
    graded: Mapped[int] = mapped_column(Integer)
    passed: Mapped[int] = mapped_column(Integer)
    state: Mapped[dict[str, Any]] = mapped_column(JSON)
    drifted_at: Mapped[datetime | None] = mapped_column(nullable=True)
    drift: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    updated_at: Mapped[datetime]


class SchemaCompat(Base):
    """One row: the oldest holon schema revision whose code still runs on this schema
    (records._store.SchemaStatus.serves_from), for older processes in a rolling upgrade."""

    __tablename__ = "schema_compat"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    serves_from: Mapped[str] = mapped_column(String(32))

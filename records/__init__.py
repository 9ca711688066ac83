"""Records: persistence of everything durable (SQLAlchemy 2, alembic migrations).

Imports only `schema`: never `evals` or `gateway`.
"""

from records._agent_record import (
    OVERFIT_VERDICT_CODES,
    AgentRecord,
    OverfitVerdictCode,
    RecordCanaries,
    RecordOverfit,
    RecordSplit,
    RecordSuite,
    RecordWarning,
)
from records._agents import AgentInfo, AgentRegistry, Registration, VersionInfo
from records._canaries import (
    CANARY_WINDOW_DAYS,
    Advance,
    CanaryRegistry,
    CanaryRun,
    CanaryStanding,
)
from records._certificate_registry import (
    CERTIFICATE_LIFETIME,
    CertificateRegistry,
    Certify,
    ImportedRecord,
    imported_record,
)
from records._certificates import (
    CARD_DIGEST_FIELD,
    CERTIFICATE_MAX_BYTES,
    JWKS_MAX_BYTES,
    PAYLOAD_TYPE,
    PREDICATE_TYPE,
    REJECT_REASONS,
    REVOCATIONS_MAX_BYTES,
    REVOCATIONS_PAYLOAD_TYPE,
    STATEMENT_TYPE,
    Verified,
    agent_identity,
    jwk_of,
    pae,
    sign_envelope,
    verify_certificate,
    verify_revocations,
)
from records._conformance import (
    INVALID_INPUT,
    INVALID_OUTPUT,
    LIVE_WINDOW_DAYS,
    ConformanceRegistry,
    LiveConformance,
    live_window_start,
)
from records._eval_reports import MAX_STORED_REPORT_BYTES, EvalReportRegistry
from records._eval_search import EvalFilter
from records._eval_values import (
    CellResultRow,
    CellSpec,
    ClaimedCell,
    EvalInfo,
    ReportCell,
    ScoredCell,
)
from records._evals import EvalRegistry
from records._exposure import (
    ExposureInfo,
    ExposureRegistry,
    ExposureResetInfo,
    ExposureSpend,
    InstanceSetInfo,
    SpentUnit,
)
from records._health import StoreHealth, Unattended
from records._identities import IdentityInfo, IdentityRegistry
from records._ids import eval_id, ulid
from records._imports import ImportRegistry, NewImport, imported_view
from records._issuers import IssuerRegistry
from records._keys import KeyInfo, KeyRegistry, Signer
from records._ledger import LedgerRegistry
from records._ledger_values import (
    DECISION_CODES,
    EXPIRED_COST_SOURCE,
    EXPIRED_REASON,
    BudgetPeriod,
    BudgetState,
    CallEntry,
    DecisionCode,
    LedgerEntry,
    period_key,
)
from records._ledger_writes import Deny, LedgerWrite, Reserve, Settle
from records._mandates import LOCAL, GrantStatus, MandateInfo, MandateRegistry, MandateRevision
from records._models import EvalCell
from records._pages import Page
from records._rate import RateLimit, RatePer, RateState
from records._secrets import KEY_RECIPE, SecretBox, new_key
from records._sessions import ConsoleSession, SessionRegistry
from records._statuses import CellStatus, EvalStatus, LedgerStatus
from records._store import (
    SCHEMA_REVISION,
    SchemaStatus,
    Store,
    open_engine,
    open_store,
    schema_status,
    upgrade,
)
from records._suites import InstalledSuite, SuiteInstall, SuiteRegistry
from records._tokens import (
    LAST_USED_EVERY,
    TokenInfo,
    TokenRegistry,
    check_role,
    parse_duration,
)
from records._types import utc_text, utcnow

__all__ = [
    "CANARY_WINDOW_DAYS",
    "CARD_DIGEST_FIELD",
    "CERTIFICATE_LIFETIME",
    "CERTIFICATE_MAX_BYTES",
    "DECISION_CODES",
    "EXPIRED_COST_SOURCE",
    "EXPIRED_REASON",
    "INVALID_INPUT",
    "INVALID_OUTPUT",
    "JWKS_MAX_BYTES",
    "KEY_RECIPE",
    "LAST_USED_EVERY",
    "LIVE_WINDOW_DAYS",
    "LOCAL",
    "MAX_STORED_REPORT_BYTES",
    "OVERFIT_VERDICT_CODES",
    "PAYLOAD_TYPE",
    "PREDICATE_TYPE",
    "REJECT_REASONS",
    "REVOCATIONS_MAX_BYTES",
    "REVOCATIONS_PAYLOAD_TYPE",
    "SCHEMA_REVISION",
    "STATEMENT_TYPE",
    "Advance",
    "AgentInfo",
    "AgentRecord",
    "AgentRegistry",
    "BudgetPeriod",
    "BudgetState",
    "CallEntry",
    "CanaryRegistry",
    "CanaryRun",
    "CanaryStanding",
    "CellResultRow",
    "CellSpec",
    "CellStatus",
    "CertificateRegistry",
    "Certify",
    "ClaimedCell",
    "ConformanceRegistry",
    "ConsoleSession",
    "DecisionCode",
    "Deny",
    "EvalCell",
    "EvalFilter",
    "EvalInfo",
    "EvalRegistry",
    "EvalReportRegistry",
    "EvalStatus",
    "ExposureInfo",
    "ExposureRegistry",
    "ExposureResetInfo",
    "ExposureSpend",
    "GrantStatus",
    "IdentityInfo",
    "IdentityRegistry",
    "ImportRegistry",
    "ImportedRecord",
    "InstalledSuite",
    "InstanceSetInfo",
    "IssuerRegistry",
    "KeyInfo",
    "KeyRegistry",
    "LedgerEntry",
    "LedgerRegistry",
    "LedgerStatus",
    "LedgerWrite",
    "LiveConformance",
    "MandateInfo",
    "MandateRegistry",
    "MandateRevision",
    "NewImport",
    "OverfitVerdictCode",
    "Page",
    "RateLimit",
    "RatePer",
    "RateState",
    "RecordCanaries",
    "RecordOverfit",
    "RecordSplit",
    "RecordSuite",
    "RecordWarning",
    "Registration",
    "ReportCell",
    "Reserve",
    "SchemaStatus",
    "ScoredCell",
    "SecretBox",
    "SessionRegistry",
    "Settle",
    "Signer",
    "SpentUnit",
    "Store",
    "StoreHealth",
    "SuiteInstall",
    "SuiteRegistry",
    "TokenInfo",
    "TokenRegistry",
    "Unattended",
    "Verified",
    "VersionInfo",
    "agent_identity",
    "check_role",
    "eval_id",
    "imported_record",
    "imported_view",
    "jwk_of",
    "live_window_start",
    "new_key",
    "open_engine",
    "open_store",
    "pae",
    "parse_duration",
    "period_key",
    "schema_status",
    "sign_envelope",
    "ulid",
    "upgrade",
    "utc_text",
    "utcnow",
    "verify_certificate",
    "verify_revocations",
]

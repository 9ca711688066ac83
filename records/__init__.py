"""Records: persistence of everything durable (SQLAlchemy 2, alembic migrations).

Imports only `schema`: never `evals` or `gateway`.
"""

from records._agents import AgentInfo, AgentRegistry, Registration, VersionInfo
from records._conformance import (
    INVALID_INPUT,
    INVALID_OUTPUT,
    LIVE_WINDOW_DAYS,
    ConformanceRegistry,
    LiveConformance,
    live_window_start,
)
from records._evals import (
    CellResultRow,
    CellSpec,
    ClaimedCell,
    EvalInfo,
    EvalRegistry,
    ScoredCell,
)
from records._exposure import ExposureInfo, ExposureRegistry, ExposureResetInfo, ExposureSpend
from records._identities import IdentityInfo, IdentityRegistry
from records._ids import eval_id, ulid
from records._ledger import Deny, LedgerRegistry, LedgerWrite, Reserve, Settle
from records._ledger_values import (
    EXPIRED_COST_SOURCE,
    EXPIRED_REASON,
    BudgetPeriod,
    BudgetState,
    CallEntry,
    LedgerEntry,
    period_key,
)
from records._mandates import LOCAL, GrantStatus, MandateInfo, MandateRegistry, MandateRevision
from records._models import EvalCell
from records._pages import Page
from records._rate import RateLimit, RatePer, RateState
from records._secrets import SecretBox, new_key
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
    "EXPIRED_COST_SOURCE",
    "EXPIRED_REASON",
    "INVALID_INPUT",
    "INVALID_OUTPUT",
    "LIVE_WINDOW_DAYS",
    "LAST_USED_EVERY",
    "LOCAL",
    "SCHEMA_REVISION",
    "AgentInfo",
    "AgentRegistry",
    "BudgetPeriod",
    "BudgetState",
    "CallEntry",
    "CellResultRow",
    "CellSpec",
    "ClaimedCell",
    "ConformanceRegistry",
    "Deny",
    "EvalCell",
    "EvalInfo",
    "EvalRegistry",
    "ExposureInfo",
    "ExposureRegistry",
    "ExposureResetInfo",
    "ExposureSpend",
    "GrantStatus",
    "IdentityInfo",
    "IdentityRegistry",
    "InstalledSuite",
    "LedgerEntry",
    "LedgerRegistry",
    "LedgerWrite",
    "LiveConformance",
    "MandateInfo",
    "MandateRegistry",
    "MandateRevision",
    "Page",
    "RateLimit",
    "RatePer",
    "RateState",
    "ScoredCell",
    "Registration",
    "Reserve",
    "SchemaStatus",
    "SecretBox",
    "Settle",
    "Store",
    "SuiteInstall",
    "SuiteRegistry",
    "TokenInfo",
    "TokenRegistry",
    "VersionInfo",
    "check_role",
    "eval_id",
    "live_window_start",
    "new_key",
    "open_engine",
    "open_store",
    "parse_duration",
    "period_key",
    "schema_status",
    "ulid",
    "upgrade",
    "utc_text",
    "utcnow",
]

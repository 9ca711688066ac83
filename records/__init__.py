"""Records: persistence of everything durable (SQLAlchemy 2, alembic migrations).

Imports only `schema`: never `evals` or `gateway`.
"""

from records._agents import AgentInfo, AgentRegistry, Registration, VersionInfo
from records._evals import CellResultRow, CellSpec, ClaimedCell, EvalInfo, EvalRegistry
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
from records._mandates import GrantStatus, MandateInfo, MandateRegistry
from records._models import EvalCell
from records._pages import Page
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
from records._tokens import TokenInfo, TokenRegistry, check_role
from records._types import utc_text, utcnow

__all__ = [
    "EXPIRED_COST_SOURCE",
    "EXPIRED_REASON",
    "SCHEMA_REVISION",
    "AgentInfo",
    "AgentRegistry",
    "BudgetPeriod",
    "BudgetState",
    "CallEntry",
    "CellResultRow",
    "CellSpec",
    "ClaimedCell",
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
    "MandateInfo",
    "MandateRegistry",
    "Page",
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
    "new_key",
    "open_engine",
    "open_store",
    "period_key",
    "schema_status",
    "ulid",
    "upgrade",
    "utc_text",
    "utcnow",
]

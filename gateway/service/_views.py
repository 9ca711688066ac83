"""JSON views shared by the store's service and the HTTP API (one shape for both)."""

from __future__ import annotations

import getpass
from datetime import datetime
from typing import Any

from evals import author_digests, keyed_digest
from records import (
    AgentInfo,
    ExposureResetInfo,
    InstalledSuite,
    LedgerEntry,
    MandateInfo,
    MandateRevision,
    TokenInfo,
    VersionInfo,
    utc_text,
)


def timestamp(value: datetime) -> str:
    """RFC 3339 in UTC with a `Z`, to the second (what people read and diff)."""
    return utc_text(value)


# The views below are the entities' own `to_json` (records; schemas in schema/entities/,
# checked by tests/records/test_entities.py), under the names their callers use.


def agent_view(info: AgentInfo, versions: list[VersionInfo] | None = None) -> dict[str, Any]:
    return info.to_json(versions)


def suite_view(
    suite: InstalledSuite, versions: list[InstalledSuite] | None = None
) -> dict[str, Any]:
    """What anyone may see of an installed suite (`InstalledSuite.to_json`)."""
    return suite.to_json(versions)


def author_suite_view(view: dict[str, Any], secret: bytes) -> dict[str, Any]:
    """A suite view as anyone but an operator reads it: every digest that covers holdout
    content keyed under the store's holdout secret (docs/integrity.md, "Keyed digests"),
    and of a pool its size and epochs, not how many are left."""
    out = {
        **view,
        "suite_digest": keyed_digest(secret, view["suite_digest"]),
        "digests": author_digests(secret, view["digests"]),
    }
    if "versions" in view:
        out["versions"] = [
            {**v, "suite_digest": keyed_digest(secret, v["suite_digest"])} for v in view["versions"]
        ]
    pool = view["holdout"].get("pool")
    if pool is not None:
        # The epochs left tell the epoch, which is the operator's (docs/integrity.md).
        out["holdout"] = {**view["holdout"], "pool": {k: pool[k] for k in ("cases", "epochs")}}
    return out


def reset_view(entry: ExposureResetInfo) -> dict[str, Any]:
    return entry.to_json()


def mandate_view(info: MandateInfo) -> dict[str, Any]:
    return info.to_json()


def revision_view(entry: MandateRevision) -> dict[str, Any]:
    return entry.to_json()


def token_view(info: TokenInfo, now: datetime) -> dict[str, Any]:
    """A token's record: never the token (`TokenInfo.to_json`)."""
    return info.to_json(now)


def ledger_view(entry: LedgerEntry) -> dict[str, Any]:
    return entry.to_json()


def login_name() -> str:
    """Who runs this CLI on the store, for what it records as done by them."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no login name (a container with no passwd entry)
        return "unknown"

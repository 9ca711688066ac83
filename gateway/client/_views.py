"""JSON views shared by the store client and the HTTP API (one shape for both)."""

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


def agent_view(info: AgentInfo, versions: list[VersionInfo] | None = None) -> dict[str, Any]:
    view: dict[str, Any] = {
        "id": info.id,
        "version": info.version,
        "disabled": info.disabled,
        "secret_set": info.has_secret,
        "created_at": timestamp(info.created_at),
        "updated_at": timestamp(info.updated_at),
        "manifest": info.manifest,
    }
    if versions is not None:
        view["versions"] = [
            {
                "version": v.version,
                "registered_at": timestamp(v.registered_at),
                "manifest_digest": v.manifest_digest,
                "current": v.version == info.version,
            }
            for v in versions
        ]
    return view


def suite_view(
    suite: InstalledSuite, versions: list[InstalledSuite] | None = None
) -> dict[str, Any]:
    """What anyone may see of an installed suite: counts and digests, never the holdout itself.

    Holdout epochs, seeds and case ids are the operator's (SUITES.md), so
    they are not part of the view.
    """
    view: dict[str, Any] = {
        "id": suite.id,
        "version": suite.version,
        "capability": suite.capability,
        "title": suite.title,
        "active": suite.active,
        "suite_digest": suite.suite_digest,
        "digests": suite.digests,
        "public": {"cases": suite.public_cases},
        "holdout": {"cases": suite.holdout_cases, "kind": suite.holdout_kind},
        "installed_at": timestamp(suite.installed_at),
        "activated_at": timestamp(suite.activated_at) if suite.activated_at else None,
    }
    if versions is not None:
        view["versions"] = [
            {
                "version": v.version,
                "suite_digest": v.suite_digest,
                "active": v.active,
                "installed_at": timestamp(v.installed_at),
            }
            for v in versions
        ]
    return view


def author_suite_view(view: dict[str, Any], secret: bytes) -> dict[str, Any]:
    """A suite view as anyone but an operator reads it: every digest that covers holdout
    content keyed under the store's holdout secret (docs/integrity.md, "Keyed digests")."""
    out = {
        **view,
        "suite_digest": keyed_digest(secret, view["suite_digest"]),
        "digests": author_digests(secret, view["digests"]),
    }
    if "versions" in view:
        out["versions"] = [
            {**v, "suite_digest": keyed_digest(secret, v["suite_digest"])} for v in view["versions"]
        ]
    return out


def reset_view(entry: ExposureResetInfo) -> dict[str, Any]:
    return {
        "id": entry.id,
        "org": entry.org,
        "instance_set": entry.instance_set,
        "spent_before": entry.spent_before,
        "reset_by": entry.reset_by,
        "reason": entry.reason,
        "at": timestamp(entry.at),
    }


def mandate_view(info: MandateInfo) -> dict[str, Any]:
    return {
        "id": info.id,
        "holder": info.holder,
        "active": info.active,
        "revision": info.revision,
        "digest": info.digest,
        "granted_at": timestamp(info.granted_at),
        "updated_at": timestamp(info.updated_at),
        "revoked_at": timestamp(info.revoked_at) if info.revoked_at else None,
        "mandate": info.document,
    }


def revision_view(entry: MandateRevision) -> dict[str, Any]:
    return {
        "id": entry.mandate_id,
        "revision": entry.revision,
        "holder": entry.holder,
        "digest": entry.digest,
        "granted_at": timestamp(entry.granted_at),
        "granted_by": entry.granted_by,
        "mandate": entry.document,
    }


def token_view(info: TokenInfo, now: datetime) -> dict[str, Any]:
    """A token's record: never the token (its first characters tell tokens apart)."""
    return {
        "id": info.id,
        "role": info.role,
        "prefix": info.prefix + "…",
        "note": info.note,
        "created_at": timestamp(info.created_at),
        "expires_at": timestamp(info.expires_at) if info.expires_at else None,
        "expired": info.expired(now),
        "last_used_at": timestamp(info.last_used_at) if info.last_used_at else None,
        "revoked_at": timestamp(info.revoked_at) if info.revoked_at else None,
    }


def ledger_view(entry: LedgerEntry) -> dict[str, Any]:
    return {
        "id": entry.id,
        "request_id": entry.request_id,
        "at": timestamp(entry.created_at),
        "caller": entry.caller,
        "mandate": entry.mandate_id,
        "mandate_revision": entry.mandate_revision,
        "record_eval_id": entry.record_eval_id,
        "certificate_id": entry.certificate_id,
        "agent": entry.agent_id,
        "agent_version": entry.agent_version,
        "capability": entry.capability,
        "decision": entry.decision,
        "reason": entry.reason,
        "status": entry.status,
        "outcome": entry.outcome_code,
        "reserved_usd": str(entry.reserved_usd),
        "cost_usd": str(entry.cost_usd),
        "cost_source": entry.cost_source,
        "latency_ms": None if entry.latency_ms is None else round(entry.latency_ms, 3),
        "period": entry.period,
        "details": entry.details,
    }


def login_name() -> str:
    """Who runs this CLI on the store, for what it records as done by them."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no login name (a container with no passwd entry)
        return "unknown"

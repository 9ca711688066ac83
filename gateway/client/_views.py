"""JSON views shared by the store client and the HTTP API (one shape for both)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from records import AgentInfo, VersionInfo


def timestamp(value: datetime) -> str:
    """RFC 3339 in UTC with a `Z`, to the second (what people read and diff)."""
    return value.strftime("%Y-%m-%dT%H:%M:%SZ")


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

"""Mandates on the store (the CLI acting as operator): `client.mandates`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gateway.client._views import mandate_view
from gateway.live import Lookups, check_mandate
from gateway.mandates import load_mandate, mandate_from_dict
from records import LOCAL, Store, utcnow

JSONObject = dict[str, Any]


class MandateOps:
    def __init__(self, store: Store) -> None:
        self.store = store

    # -- mandates ----------------------------------------------------------

    def grant(
        self, document: JSONObject, *, source: str = "<request>", granted_by: str = LOCAL
    ) -> JSONObject:
        """`granted_by`: the granting token's id (the gateway), LOCAL (the CLI on the store)."""
        mandate = mandate_from_dict(document, source)
        assert mandate.document is not None
        status, info = self.store.mandates.grant(mandate.document, granted_by=granted_by)
        return {"status": status, "mandate": mandate_view(info)}

    def grant_file(self, path: Path) -> JSONObject:
        mandate = load_mandate(path)
        assert mandate.document is not None
        status, info = self.store.mandates.grant(mandate.document)
        return {"status": status, "mandate": mandate_view(info)}

    def check(self, mandate_id: str, agent_id: str, capability: str) -> JSONObject:
        return check_mandate(
            Lookups(self.store, ttl_s=0), mandate_id, agent_id, capability, utcnow()
        )

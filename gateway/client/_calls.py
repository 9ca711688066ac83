"""Mandates, live calls and the ledger on the store (the CLI acting as operator)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from agents import Executor
from gateway.client._views import ledger_view, mandate_view, revision_view
from gateway.live import LiveCalls, Lookups, check_mandate
from gateway.mandates import load_mandate, mandate_from_dict
from records import LOCAL, Store, utcnow
from schema.jsontext import JSONValue

JSONObject = dict[str, Any]


class CallOps:
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

    def list(
        self,
        *,
        holder: str | None = None,
        include_revoked: bool = False,
        cursor: str | None = None,
        limit: int = 100,
    ) -> JSONObject:
        page = self.store.mandates.list(
            holder=holder, include_revoked=include_revoked, cursor=cursor, limit=limit
        )
        return {"items": [mandate_view(m) for m in page.items], "next_cursor": page.next_cursor}

    def get(self, mandate_id: str) -> JSONObject:
        return mandate_view(self.store.mandates.get(mandate_id))

    def revisions(self, mandate_id: str) -> JSONObject:
        return {"items": [revision_view(r) for r in self.store.mandates.revisions(mandate_id)]}

    def revoke(self, mandate_id: str) -> JSONObject:
        return mandate_view(self.store.mandates.revoke(mandate_id))

    def check(self, mandate_id: str, agent_id: str, capability: str) -> JSONObject:
        return check_mandate(
            Lookups(self.store, ttl_s=0), mandate_id, agent_id, capability, utcnow()
        )

    # -- live calls and the ledger ------------------------------------------

    def invoke(
        self, caller: str, agent_id: str | None, capability: str, input: JSONValue
    ) -> JSONObject:
        async def call() -> JSONObject:
            async with Executor() as executor:
                calls = LiveCalls(self.store, executor, lookups=Lookups(self.store, ttl_s=0))
                if agent_id is None:
                    return await calls.route(caller, capability, input)
                return await calls.invoke(caller, agent_id, capability, input)

        return asyncio.run(call())

    def ledger(
        self,
        *,
        caller: str | None = None,
        mandate_id: str | None = None,
        agent_id: str | None = None,
        decision: str | None = None,
        cursor: str | None = None,
        limit: int = 100,
    ) -> JSONObject:
        self.store.ledger.expire()
        page = self.store.ledger.list(
            caller=caller,
            mandate_id=mandate_id,
            agent_id=agent_id,
            decision=decision,
            cursor=cursor,
            limit=limit,
        )
        return {"items": [ledger_view(e) for e in page.items], "next_cursor": page.next_cursor}

"""Mandates on the store (the CLI acting as operator): `service.mandates`."""

from __future__ import annotations

from gateway.live import LiveCalls, Lookups, check_mandate
from gateway.mandates import budget_too_small, mandate_from_dict
from gateway.service._views import mandate_view
from records import LOCAL, Store, utcnow
from schema.jsontext import JSONObject


class MandateOps:
    def __init__(self, store: Store) -> None:
        self.store = store
        # A gateway decides a dry run with its live calls' lookups and clock, so the check
        # answers what a live call would decide now (`decide_with`); the CLI reads afresh.
        self.live: LiveCalls | None = None

    def decide_with(self, live: LiveCalls) -> None:
        self.live = live

    # -- mandates ----------------------------------------------------------

    def grant(
        self,
        document: JSONObject,
        *,
        source: str = "<request>",
        granted_by: str = LOCAL,
        if_revision: int | None = None,
    ) -> JSONObject:
        """`granted_by`: the granting token's id (the gateway), LOCAL (the CLI on the store).

        A budget smaller than one call's cap is granted with a warning, not refused: every
        call under it is denied `budget_too_small`, which is what an operator lowering a
        budget to stop a holder's calls means; one who meant calls to go hears it now."""
        mandate = mandate_from_dict(document, source)
        assert mandate.document is not None
        status, info = self.store.mandates.grant(
            mandate.document, granted_by=granted_by, if_revision=if_revision
        )
        warnings = []
        too_small = budget_too_small(mandate)
        if too_small is not None:
            numbers = too_small.numbers
            warnings.append(
                {
                    "code": "budget_too_small",
                    **numbers,
                    "message": f"the budget of {numbers['amount_usd']} USD a "
                    f"{numbers['period']} cannot pay one call's cap "
                    f"(max_cost_per_call_usd {numbers['max_cost_per_call_usd']}): every call "
                    "under this mandate is denied budget_too_small",
                }
            )
        return {"status": status, "mandate": mandate_view(info), "warnings": warnings}

    def check(self, mandate_id: str, agent_id: str, capability: str) -> JSONObject:
        if self.live is not None:
            return self.live.check(mandate_id, agent_id, capability)
        return check_mandate(
            Lookups(self.store, ttl_s=0), mandate_id, agent_id, capability, utcnow()
        )

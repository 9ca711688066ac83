"""Who may ask what, and who did it: the narrowings several operations share
(`Operation.narrow`, see _declare.py), and the name a write records of its doer."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Protocol, TypeVar

from gateway.operations._declare import Bearer, fields


class _OfAgent(Protocol):
    @property
    def agent(self) -> str: ...


A = TypeVar("A", bound=_OfAgent)
R = TypeVar("R")


def own_agent(who: Bearer, asked: A) -> A:
    """An org asks of its own agents only (an operator of any): the request's `agent`."""
    who.require_agent(asked.agent)
    return asked


def by_bearer(who: Bearer, asked: R) -> R:
    """The request with its `bearer` fields filled from who asks: the token's id (who
    granted, imported or pinned it). On the store they keep their default (`doer`)."""
    found: dict[str, Any] = {
        f.name: who.token_id for f in fields(type(asked)) if f.spec.where == "bearer"
    }
    return replace(asked, **found)  # type: ignore[type-var]  # a request is a dataclass


def doer(token_id: str | None) -> str:
    """Who did a write, as it is recorded: the token's id through a gateway, `cli:LOGIN`
    for the CLI on the store."""
    from gateway.service import login_name

    return token_id or f"cli:{login_name()}"

"""One attempt at a call, as the executor hands it to the protocol that sends it."""

from __future__ import annotations

from dataclasses import dataclass

from agents._limits import CallLimits
from agents._manifest import Manifest
from schema.jsontext import JSONValue

__all__ = ["Call"]


@dataclass(frozen=True, slots=True)
class Call:
    """Whom a call asks, what, under which limits, and the ids it is sent with.

    Every attempt of a call sends the same `request_id` and a `traceparent` of
    its own (agents._trace): an attempt is its call with the traceparent
    replaced.
    """

    agent: Manifest
    capability: str
    input: JSONValue
    limits: CallLimits
    secret: str | None
    request_id: str
    traceparent: str

"""The contract at the point of use: a live call's input and its agent's output, checked.

A capability's contract is the input and output schema of the suite version
active for it (evals.suites.Contract, cached in gateway.live._cache). A live
input that breaks it is the caller's `400 invalid_input`, refused before any
decision or reservation, with a ledger row (deny, reason `invalid_input`,
nothing reserved) and no agent call. An output that breaks it is the agent's
`502 invalid_output`: never passed on, settled at zero (the caller does not
pay for an answer outside the contract), and counted against the agent
(records._conformance). A capability no installed suite certifies has no
contract: its calls pass unchecked.

Checking runs on the event loop: the quick path answers a valid document of
the usual shapes in microseconds. A document over `LARGE_NODES` values is
checked in a worker thread, so a megabyte-sized input or output never holds
up the loop.
"""

from __future__ import annotations

from typing import Any

from anyio import to_thread

from evals.suites import Contract, Violation
from schema.errors import InvalidInput, InvalidOutput
from schema.jsontext import LARGE_NODES, JSONValue, count_nodes

__all__ = ["check_input", "check_output", "invalid_input", "invalid_output"]


async def _violation(contract: Contract, value: JSONValue, *, output: bool) -> Violation | None:
    check = contract.output_violation if output else contract.input_violation
    if count_nodes(value, LARGE_NODES) > LARGE_NODES:
        return await to_thread.run_sync(check, value)
    return check(value)


async def check_input(contract: Contract | None, value: JSONValue) -> Violation | None:
    """Where `value` breaks the contract's input schema; None when it fits (or no contract)."""
    return None if contract is None else await _violation(contract, value, output=False)


async def check_output(contract: Contract | None, value: JSONValue) -> Violation | None:
    """Where `value` breaks the contract's output schema; None when it fits (or no contract)."""
    return None if contract is None else await _violation(contract, value, output=True)


def invalid_input(contract: Contract, violation: Violation, subject: str) -> InvalidInput:
    details: dict[str, Any] = {**violation.to_json(), **contract.to_json()}
    return InvalidInput(
        f"{subject}: the input breaks the input schema of {contract.key} at "
        f"{violation.path}: {violation.error}",
        details=details,
    )


def invalid_output(
    contract: Contract, violation: Violation, subject: str, details: dict[str, Any]
) -> InvalidOutput:
    merged: dict[str, Any] = {**details, **violation.to_json(), **contract.to_json()}
    return InvalidOutput(
        f"{subject}: invalid_output: the answer breaks the output schema of {contract.key} at "
        f"{violation.path}: {violation.error}",
        details=merged,
    )

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
the usual shapes in microseconds. A document over `LARGE_NODES` values or
`INLINE_BYTES` of text is checked in a worker thread, so a megabyte-sized
input or output never holds up the loop.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from anyio import to_thread

from evals.suites import Contract, Violation
from schema.errors import InvalidInput, InvalidOutput
from schema.jsontext import LARGE_NODES, JSONValue

__all__ = ["check_input", "check_output", "heavy", "invalid_input", "invalid_output"]


# Text in a document checked on the loop at most (as a request body parsed on the loop,
# gateway.web._http): a pattern over 8 MiB of text takes RE2 some 70 ms.
INLINE_BYTES = 64 * 1024
_CHARS_PER_NODE = INLINE_BYTES // LARGE_NODES


def heavy(value: JSONValue) -> bool:
    """Whether checking `value` may take over a millisecond: over `LARGE_NODES` values or
    `INLINE_BYTES` of text (keys included). Looks at no more than that much of it."""
    budget = LARGE_NODES - 1  # the value itself; a container pays for its members
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is str:
            budget -= len(item) // _CHARS_PER_NODE
        elif kind is dict or kind is list:
            budget -= len(item)
            if budget < 0:
                return True
            if kind is dict:
                budget -= sum(len(key) for key in item) // _CHARS_PER_NODE
                stack.extend(item.values())
            else:
                stack.extend(item)
        if budget < 0:
            return True
    return False


async def _violation(check: Callable[[Any], Violation | None], value: Any, big: bool) -> Any:
    if big:
        return await to_thread.run_sync(check, value)
    return check(value)


async def check_input(contract: Contract | None, value: JSONValue) -> Violation | None:
    """Where `value` breaks the contract's input schema; None when it fits (or no contract)."""
    if contract is None:
        return None
    found: Violation | None = await _violation(contract.input_violation, value, heavy(value))
    return found


async def check_output(
    contract: Contract | None, value: JSONValue, size: int | None = None
) -> Violation | None:
    """Where `value` breaks the contract's output schema; None when it fits (or no contract).

    `size`: the output's size as JSON when known (the executor's `output_bytes`).
    """
    if contract is None:
        return None
    if size is None:
        big = heavy(value)
    else:  # every value and character takes a byte of its JSON: a short one is not heavy
        big = size > INLINE_BYTES or (size >= LARGE_NODES and heavy(value))
    found: Violation | None = await _violation(contract.output_violation, value, big)
    return found


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

"""The group commit thread survives a failure outside its transaction (records._group)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from records._group import GroupCommit


def test_a_group_that_fails_outside_its_transaction_fails_alone(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A bug of ours past `apply` (here: one result too few for the group) once ended
    the thread with its `running` flag set: no thread started again, and every write
    after it waited forever."""
    calls: list[list[str]] = []

    def apply(writes: Sequence[str]) -> list[object]:
        calls.append(list(writes))
        return [] if len(calls) == 1 else [w.upper() for w in writes]

    group: GroupCommit[str] = GroupCommit(apply)
    first = group.submit("a")
    with pytest.raises(ValueError):
        first.result(timeout=10)
    assert group.submit("b").result(timeout=10) == "B"
    assert group.drain(timeout=10)
    assert "a group of 1 writes failed" in caplog.records[0].getMessage()

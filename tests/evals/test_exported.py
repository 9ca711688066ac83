"""The public face of evals.checks: a sorted __all__ that matches what the package exports."""

from __future__ import annotations

import evals.checks


def test_all_is_sorted_and_complete() -> None:
    exported = evals.checks.__all__
    assert exported == sorted(exported)
    public = {name for name in vars(evals.checks) if not name.startswith("_")}
    modules = {"annotations"}
    assert public - modules == set(exported)
    for name in exported:
        assert getattr(evals.checks, name) is not None

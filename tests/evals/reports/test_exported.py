"""The public face of evals.reports: a sorted __all__ that matches what the package exports."""

from __future__ import annotations

import evals.reports


def test_all_is_sorted_and_complete() -> None:
    exported = evals.reports.__all__
    assert exported == sorted(exported)
    public = {name for name in vars(evals.reports) if not name.startswith("_")}
    assert public - {"annotations"} == set(exported)
    for name in exported:
        assert getattr(evals.reports, name) is not None

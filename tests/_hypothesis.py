"""Hypothesis settings the property tests share."""

from __future__ import annotations

from hypothesis import HealthCheck, settings


def derandomized(examples: int) -> settings:
    """`examples` draws, the same on every run (no example database), no deadline and no
    health checks: for properties over real servers and stores, slow and large by design."""
    return settings(
        max_examples=examples,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )

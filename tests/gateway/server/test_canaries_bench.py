"""The canaries bench runs, at a smoke size: the figure in docs/performance.md comes from
a script that still works (canaries sent by the `on` gateway alone, every call answered).

The bench sets each gateway's canary settings itself: this session's
HOLON_CANARY_SHARE=0 (tests/conftest.py), which its processes inherit, must not
turn the `on` gateway's off."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.bench._run import run_bench

pytestmark = pytest.mark.slow


def test_the_canaries_bench_compares_on_off_and_control(tmp_path: Path) -> None:
    smoke = ("--rate", "100", "--seconds", "0.6", "--rounds", "1", "--share", "0.5")
    results = run_bench(
        "bench/gateway/canaries.py", *smoke, "--warmup", "20", home=tmp_path / "home"
    )
    paced = results["paced"]
    assert {"off", "on", "control", "on_added", "control_added"} <= set(paced)
    assert all(paced[name]["calls"] == 20 for name in ("off", "on", "control"))
    assert set(paced["on_added"]) == {"p50_ms", "p95_ms", "p99_ms", "gateway_cpu_ms_per_call"}
    canaries = paced["canaries"]
    # Half of the `on` gateway's calls, warm-up included, queue a canary: 40 calls.
    assert canaries["sent_in_all"] > 0 and canaries["skipped"] == {}
    assert canaries["raised"] == 0
    assert canaries["off_gateways_sent"] == 0

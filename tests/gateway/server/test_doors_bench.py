"""The front doors' benches run, at a smoke size: the numbers in docs/performance.md come
from scripts that still work (every answer checked, the ledger consistent)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.bench._run import run_bench

pytestmark = pytest.mark.slow


def test_the_doors_bench_measures_the_openai_door_against_invoke(tmp_path: Path) -> None:
    smoke = ("--calls", "5", "--rounds", "1", "--doors", "openai")
    results = run_bench("bench/doors/run.py", *smoke, home=tmp_path / "home")
    assert set(results) == {"c1", "c8", "ledger"}
    level = results["c1"]
    assert isinstance(level, dict) and set(level) == {"invoke", "openai"}
    assert level["openai"]["calls"] == 5
    ledger = results["ledger"]
    assert isinstance(ledger, dict) and ledger["consistent"] is True


def test_the_openai_mapping_bench_runs(tmp_path: Path) -> None:
    results = run_bench(
        "bench/doors/openai_mapping.py", "--calls", "200", "--rounds", "2", home=tmp_path / "home"
    )
    assert results["calls"] == 400
    assert isinstance(results["added_us"], float)


def test_the_stream_bench_measures_the_first_byte_against_the_agents(tmp_path: Path) -> None:
    smoke = ("--calls", "5", "--rounds", "1", "--delay-ms", "100")
    results = run_bench("bench/doors/stream.py", *smoke, home=tmp_path / "home")
    assert {"agent", "openai", "openai-stream", "a2a-stream", "ledger"} <= set(results)
    streamed, agent = results["openai-stream"], results["agent"]
    assert isinstance(streamed, dict) and isinstance(agent, dict)
    assert streamed["ttfb_p50_ms"] < agent["ttfb_p50_ms"] <= streamed["output_p50_ms"]
    ledger = results["ledger"]
    assert isinstance(ledger, dict) and ledger["consistent"] is True

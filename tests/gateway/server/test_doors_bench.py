"""The front doors' benches run, at a smoke size: the numbers in docs/performance.md come
from scripts that still work (every answer checked, the ledger consistent)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]

pytestmark = pytest.mark.slow


def _run(*args: str) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, *args, "--json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result: dict[str, object] = json.loads(done.stdout)
    return result


def test_the_doors_bench_measures_the_openai_door_against_invoke() -> None:
    results = _run("bench/doors/run.py", "--calls", "5", "--rounds", "1", "--doors", "openai")
    assert set(results) == {"c1", "c8", "ledger"}
    level = results["c1"]
    assert isinstance(level, dict) and set(level) == {"invoke", "openai"}
    assert level["openai"]["calls"] == 5
    ledger = results["ledger"]
    assert isinstance(ledger, dict) and ledger["consistent"] is True


def test_the_openai_mapping_bench_runs() -> None:
    results = _run("bench/doors/openai_mapping.py", "--calls", "200", "--rounds", "2")
    assert results["calls"] == 400
    assert isinstance(results["added_us"], float)


def test_the_stream_bench_measures_the_first_byte_against_the_agents() -> None:
    results = _run("bench/doors/stream.py", "--calls", "5", "--rounds", "1", "--delay-ms", "100")
    assert {"agent", "openai", "openai-stream", "a2a-stream", "ledger"} <= set(results)
    streamed, agent = results["openai-stream"], results["agent"]
    assert isinstance(streamed, dict) and isinstance(agent, dict)
    assert streamed["ttfb_p50_ms"] < agent["ttfb_p50_ms"] <= streamed["output_p50_ms"]
    ledger = results["ledger"]
    assert isinstance(ledger, dict) and ledger["consistent"] is True

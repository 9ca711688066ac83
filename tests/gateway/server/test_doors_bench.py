"""The front doors' benches run, at a smoke size: the numbers in docs/performance.md come
from scripts that still work (every answer checked, the ledger consistent)."""

from __future__ import annotations

import tempfile
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


LITELLM = Path(tempfile.gettempdir()) / "holon-bench-litellm" / "1.106.12"
LITELLM_SMOKE = ("--calls", "5", "--rounds", "1", "--concurrency", "1,4")


def _litellm_shape(results: dict[str, object], ways: set[str]) -> None:
    assert {"c1", "c4", "ledger", "versions"} <= set(results)
    level = results["c4"]
    assert isinstance(level, dict) and set(level) == ways
    for row in level.values():
        assert row["calls"] == 5
        assert {"p50_added_ms", "p95_added_ms", "calls_per_s", "cpu_ms_per_call"} <= set(row)
    ledger = results["ledger"]
    assert isinstance(ledger, dict) and ledger["consistent"] is True
    assert ledger["settled_ok"] == 30 + 2 * 5  # the warm-up, then each level's calls


def test_the_litellm_bench_runs_holons_side(tmp_path: Path) -> None:
    results = run_bench(
        "bench/doors/litellm.py", *LITELLM_SMOKE, "--no-litellm", home=tmp_path / "home"
    )
    _litellm_shape(results, {"direct", "holon"})
    assert results["versions"] == {"litellm": None}


@pytest.mark.timeout(600)  # LiteLLM's proxy takes tens of seconds of CPU to start under load
def test_the_litellm_bench_compares_holon_with_litellm(tmp_path: Path) -> None:
    """Both gateways before one upstream. LiteLLM is installed with pip by the bench on
    first use, never here: without its venv, holon's side runs alone (the test above)."""
    if not (LITELLM / "bin" / "python").exists():
        pytest.skip(
            f"LiteLLM is not installed at {LITELLM} (`bench/doors/litellm.py` installs it "
            "with pip); holon's side runs in the test above"
        )
    smoke = (*LITELLM_SMOKE, "--litellm-dir", str(LITELLM))
    results = run_bench("bench/doors/litellm.py", *smoke, home=tmp_path / "home", timeout=580)
    _litellm_shape(results, {"direct", "holon", "litellm"})
    assert results["versions"] == {"litellm": "1.106.12"}

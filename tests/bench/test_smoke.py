"""Every bench runs, at a smoke size: the figures in docs/performance.md come from scripts
that still work.

Each entry script of `bench/` (a file there with a `__main__` block) runs here with
arguments that take seconds, in a fresh process as its user runs it, and its `--json`
output is checked for its shape; no figure is asserted (benchmarks are never timed tests).
A few benches have their smoke test beside the code they measure (`ELSEWHERE`), and a
script another bench starts is exercised through it (`STARTED_BY`). The first test fails
when an entry script has none of these, so a new bench cannot go unrun.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.bench._run import run_bench
from tests.gateway.console._browser import chromium_or_skip

ROOT = Path(__file__).resolve().parents[2]
PG = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"  # replaced by the fixture's URL

Shape = Callable[[dict[str, Any]], None]


@dataclass(frozen=True)
class Smoke:
    args: tuple[str, ...]
    shape: Shape
    slow: bool = True  # more than about 2 s
    postgres: bool = False  # PG in `args` is the reachable server's admin URL


def _keys(*names: str) -> Shape:
    def check(result: dict[str, Any]) -> None:
        missing = set(names) - set(result)
        assert not missing, f"missing keys {sorted(missing)} in {sorted(result)}"

    return check


def _rows(result: dict[str, Any]) -> None:
    assert isinstance(result["rows"], list) and result["rows"]


def _eval(result: dict[str, Any]) -> None:
    scenario = result["zero-asgi-c16"]
    assert scenario["sqlite"]["cells"] == 20
    assert "executor_alone" in scenario and "goals" in result


def _contract(result: dict[str, Any]) -> None:
    assert {"off", "contract", "both", "control", "both_added"} <= set(result["paced"])
    assert {"input_quick_us", "output_quick_us"} <= set(result["micro"])


def _gateway(result: dict[str, Any]) -> None:
    summary = result["summary"]["sqlite"]
    assert summary["ledger_consistent"] is True
    assert {"added_p50_ms_c1", "calls_per_s_c16", "paced16"} <= set(summary)


def _rate_limit(result: dict[str, Any]) -> None:
    for backend in ("sqlite", "postgresql"):
        assert {"added_p50_us"} <= set(result[backend]["1"]), backend


def _ledger(result: dict[str, Any]) -> None:
    for load in ("c1", "c16"):
        assert {"sqlite", "pg-thread", "pg-statement", "pg-no-flush"} <= set(result[load])


def _processes(result: dict[str, Any]) -> None:
    assert all(result["ledgers_consistent"].values())
    assert {"one budget", "two budgets", "ratio_one_to_two_budgets"} <= set(result)


def _console(result: dict[str, Any]) -> None:
    pages = ("overview", "eval_page", "cell_page", "eval_list", "report_cold", "report_stored")
    explored = (result["case_explorer"][name] for name in ("first_page", "search_everything"))
    for page in (*(result[p] for p in (*pages, "report_warm")), *explored):
        assert {"page_ms", "json_ms", "ratio"} <= set(page), page


def _eval_memory(result: dict[str, Any]) -> None:
    first, second = result["rows"]
    assert (first["cells"], second["cells"]) == (20, 40)
    assert {"peak_rss_mb", "cpu_s", "peak_rss_ratio", "cpu_ratio"} <= set(second)


def _reports(result: dict[str, Any]) -> None:
    for form in ("json", "junit", "compare"):
        assert {"peak_rss_mb", "cpu_s"} <= set(result["runs"]["200"][form]), form
        assert {"peak_rss", "cpu"} <= set(result["ratios"][f"{form} 200/100"]), form


def _fisher(result: dict[str, Any]) -> None:
    assert len(result["rows"]) == 8 and "far 1000/100" in result["ratios"]
    assert {"old_ms", "new_ms", "decided_ms", "exact", "p"} <= set(result["rows"][-1])


SMOKE: dict[str, Smoke] = {
    "bench/certificates/run.py": Smoke(("--seconds", "0.05"), _keys("rows")),
    "bench/checks/run.py": Smoke(("--seconds", "0.05"), _rows, slow=False),
    "bench/fixtures/run.py": Smoke(
        ("--count", "2"), _keys("generation_ms", "read_back_ms", "goals")
    ),
    "bench/executor/run.py": Smoke(
        ("--calls", "200", "--timing-calls", "100"),
        _keys("loopback_c16", "loopback_c64", "in_process_c16", "memory", "goals"),
    ),
    "bench/executor/protocols.py": Smoke(
        ("--calls", "20", "--rounds", "1"), _keys("openai-chat", "mcp")
    ),
    "bench/operations/run.py": Smoke(
        ("--baseline", str(ROOT), "--rounds", "1"), _keys("table", "baseline", "cpu_ratio")
    ),
    "bench/eval/run.py": Smoke(
        ("--cases", "20", "--repetitions", "1", "--only", "zero-asgi-c16")
        + ("--workers", "0", "--processes", "0"),
        _eval,
    ),
    "bench/eval/import_report.py": Smoke(
        ("--cases", "10", "--repetitions", "1", "--runs", "1"),
        _keys("render_s", "import_s", "ratio", "phases_s"),
    ),
    "bench/eval/memory.py": Smoke(("--cases", "20", "--repetitions", "1,2"), _eval_memory),
    "bench/reports/run.py": Smoke(("--sizes", "100,200", "--repetitions", "10"), _reports),
    "bench/stats/run.py": Smoke(
        ("--sizes", "100,1000", "--old-max", "1000", "--seconds", "0.01"), _fisher, slow=False
    ),
    "bench/console/run.py": Smoke(
        ("--agents", "10", "--cases", "10", "--repetitions", "1", "--runs", "1"), _console
    ),
    "bench/gateway/run.py": Smoke(("--scale", "0.01", "--rates", "50", "--no-postgres"), _gateway),
    "bench/gateway/contract.py": Smoke(
        ("--rate", "100", "--seconds", "0.3", "--rounds", "1"), _contract
    ),
    "bench/gateway/rate_limit.py": Smoke(
        ("--rounds", "20", "--postgres", PG), _rate_limit, postgres=True
    ),
    "bench/gateway/ledger.py": Smoke(
        ("--rounds", "1", "--calls", "20", "--postgres", PG), _ledger, postgres=True
    ),
    "bench/gateway/processes.py": Smoke(
        ("--rounds", "1", "--calls", "50", "--postgres", PG), _processes, postgres=True
    ),
}
# Entry scripts whose smoke test lives beside what they measure.
ELSEWHERE = {
    "bench/doors/run.py": "tests/gateway/server/test_doors_bench.py",
    "bench/doors/openai_mapping.py": "tests/gateway/server/test_doors_bench.py",
    "bench/doors/stream.py": "tests/gateway/server/test_doors_bench.py",
    "bench/doors/litellm.py": "tests/gateway/server/test_doors_bench.py",
    "bench/gateway/canaries.py": "tests/gateway/server/test_canaries_bench.py",
}
# Entry scripts that another bench starts as a process (run by that bench's smoke test).
STARTED_BY = {"bench/gateway/serve.py": "bench/gateway/run.py"}
# Tested in this file, below, each in its own way.
OWN_TESTS = ("bench/compare-promptfoo/run.py", "bench/console/screenshots.py")


def entry_scripts() -> list[str]:
    return sorted(
        str(path.relative_to(ROOT))
        for path in (ROOT / "bench").glob("*/*.py")
        if 'if __name__ == "__main__":' in path.read_text()
    )


def test_every_bench_has_a_smoke_test() -> None:
    scripts = entry_scripts()
    assert "bench/eval/run.py" in scripts and len(scripts) >= 15
    known = {*SMOKE, *ELSEWHERE, *STARTED_BY, *OWN_TESTS}
    missing = [script for script in scripts if script not in known]
    assert not missing, f"benches without a smoke test (add them to SMOKE): {missing}"
    stale = sorted(known - set(scripts))
    assert not stale, f"smoke tests of benches that are gone: {stale}"
    for script, test in ELSEWHERE.items():
        assert script in (ROOT / test).read_text(), f"{test} does not run {script}"
    for script, parent in STARTED_BY.items():
        assert parent in SMOKE and Path(script).name in (ROOT / parent).read_text()


def _params() -> list[Any]:
    params = []
    for script, smoke in SMOKE.items():
        marks = [pytest.mark.slow] if smoke.slow else []
        if smoke.postgres:
            marks.append(pytest.mark.postgres)
        params.append(pytest.param(script, smoke, id=script.removeprefix("bench/"), marks=marks))
    return params


@pytest.mark.timeout(300)  # a few seconds alone; a minute when CI's two cores are busy
@pytest.mark.parametrize(("script", "smoke"), _params())
def test_the_bench_runs_at_a_smoke_size(
    script: str, smoke: Smoke, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    args = smoke.args
    if smoke.postgres:
        admin: str = request.getfixturevalue("postgres_admin_url")
        args = tuple(admin if arg == PG else arg for arg in args)
    smoke.shape(run_bench(script, *args, home=tmp_path / "home"))


PROMPTFOO = Path(tempfile.gettempdir()) / "holon-bench-promptfoo" / "0.121"


@pytest.mark.slow
@pytest.mark.timeout(600)  # two minutes under load: promptfoo's start-up is seconds of CPU
def test_the_promptfoo_comparison_runs_holon_and_promptfoo(tmp_path: Path) -> None:
    """Both tools over the same 20 cases; they must agree with the agent's ground truth
    (the bench stops otherwise). promptfoo is installed with npm by the bench on first use,
    never here: without it, holon's side runs alone and the peer is skipped."""
    binary = PROMPTFOO / "node_modules" / ".bin" / "promptfoo"
    common = ("bench/compare-promptfoo/run.py", "--cases", "20", "--runs", "1")
    if not binary.exists():
        pytest.skip(
            f"promptfoo is not installed at {PROMPTFOO} (`bench/compare-promptfoo/run.py` "
            "installs it with npm); holon's side runs in the next test"
        )
    result = run_bench(*common, "--promptfoo-dir", str(PROMPTFOO), home=tmp_path, timeout=580)
    assert result["passed_by_both"] == 15
    assert result["versions"]["promptfoo"].startswith("0.121")
    for tool in ("holon", "promptfoo"):
        assert {"wall_s", "eval_s", "cpu_s", "peak_tree_rss_mb"} <= set(result[tool])
    assert isinstance(result["wall_ratio_holon_to_promptfoo"], float)


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_the_promptfoo_comparison_runs_holon_alone(tmp_path: Path) -> None:
    result = run_bench(
        "bench/compare-promptfoo/run.py",
        *("--cases", "20", "--runs", "1", "--no-promptfoo"),
        home=tmp_path,
    )
    assert set(result) == {"cases", "concurrency", "passed_by_both", "versions", "holon"}
    assert result["passed_by_both"] == 15 and result["holon"]["runs"] == 1
    assert result["versions"]["holon"].startswith(("0.", "1."))


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_the_console_screenshots_are_taken(tmp_path: Path) -> None:
    """The screenshots of docs/console.md, in Debian's chromium (skipped where it is absent,
    a failure under HOLON_REQUIRE_CHROMIUM=1, as CI runs)."""
    chromium_or_skip()
    out = tmp_path / "shots"
    done = subprocess.run(
        [sys.executable, "bench/console/screenshots.py", "--out", str(out)],
        cwd=ROOT,
        env=dict(os.environ, HOLON_HOME=str(tmp_path / "home"), NO_COLOR="1"),
        capture_output=True,
        text=True,
        timeout=280,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    shots = sorted(out.glob("*.png"))
    assert shots and all(shot.read_bytes().startswith(b"\x89PNG") for shot in shots)

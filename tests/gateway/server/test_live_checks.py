"""Reference-free checks on every live answer: the suite's checks that read only input
and output grade live answers too, counted against the agent like contract violations
and gated by `max_live_violation_rate`."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from evals.suites import contract_from_files, install_suite
from records import Store
from tests.gateway.server._adder import (
    AGENT,
    CAPABILITY,
    SUITE_YAML,
    Adder,
    adder_mandate,
    serving_adder,
    write_adder_suite,
)
from tests.gateway.server._gateway import running_gateway

CALLER = "caller:finance-bot"
INVOKE = f"/v1/agents/{AGENT}/invoke"
# Two checks a live answer can be graded by (input and output only), one it cannot.
LIVE_CHECKS = """\
  - {name: at least a, path: $.output.sum, gte: {path: $.input.a}}
  - {name: a number, path: $.output.sum, exists: true}
"""


def _suite(root: Path) -> Path:
    directory = write_adder_suite(root / "adder-suite")
    text = SUITE_YAML.replace("checks:\n", "checks:\n" + LIVE_CHECKS)
    (directory / "suite.yaml").write_text(text)
    return directory


def test_the_dsl_finds_the_checks_a_live_answer_can_be_graded_by(tmp_path: Path) -> None:
    directory = _suite(tmp_path)
    files = {
        str(p.relative_to(directory)): p.read_text() for p in directory.rglob("*") if p.is_file()
    }
    contract = contract_from_files("adder", 1, CAPABILITY, files)
    # `sum` reads $.expected: an eval's, never a live answer's.
    assert [c.name for c in contract.live_checks] == ["at least a", "a number"]
    assert contract.live_check_failures({"a": 5, "b": 2}, {"sum": 7}) == []
    assert contract.live_check_failures({"a": 5, "b": 2}, {"sum": 4}) == ["at least a"]


@pytest.mark.slow
def test_failing_answers_are_passed_on_counted_and_gated(store: Store, tmp_path: Path) -> None:
    install_suite(store, _suite(tmp_path))
    adder = Adder(answer=lambda value: {"sum": value["a"] - 100})  # below a: a check fails
    store.mandates.grant(adder_mandate(max_live_violation_rate=0.5, min_live_calls=4))
    with (
        serving_adder(store, adder),
        running_gateway(store, tmp_path / "home", eval_workers=0, cells_ttl_s=0) as gw,
    ):
        answers = [
            gw.call(
                "POST", INVOKE, CALLER, json={"capability": CAPABILITY, "input": {"a": n, "b": 1}}
            )
            for n in range(4)
        ]
        deadline = time.monotonic() + 10
        while store.conformance.of(AGENT, CAPABILITY).check_failures < 4:
            assert time.monotonic() < deadline, store.conformance.of(AGENT, CAPABILITY)
            time.sleep(0.02)
        denied = gw.call(
            "POST", INVOKE, CALLER, json={"capability": CAPABILITY, "input": {"a": 9, "b": 1}}
        )
        metrics = gw.call("GET", "/metrics", "operator").text
    # Well-formed answers are passed on: the checks judge, the contract alone refuses.
    assert [a.status_code for a in answers] == [200] * 4
    live = store.conformance.of(AGENT, CAPABILITY)
    assert (live.calls, live.violations, live.check_failures) == (4, 0, 4)
    assert denied.status_code == 403, denied.text
    error = denied.json()["error"]
    assert error["code"] == "live_violation_rate_above_maximum"
    assert (error["details"]["live_check_failures"], error["details"]["live_calls"]) == (4, 4)
    assert f'holon_live_window_check_failures{{agent="{AGENT}",capability="{CAPABILITY}"}} 4' in (
        metrics
    )

"""Live calls held to the capability's contract (docs/gateway.md, "The contract on live calls").

Through a real gateway on 127.0.0.1 and a real adder agent that counts what
it receives, on SQLite and PostgreSQL: a bad input never reaches the agent
(400 invalid_input, a deny row, nothing reserved), a contract-breaking
output is never a 200 (502 invalid_output, settled at zero, counted), an
unknown body key is refused, and a capability no suite certifies passes
unchecked. Hostile outputs and inputs (deep, huge, many errors) go through
the validator quickly and come back as bounded errors.
"""

from __future__ import annotations

import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evals.checks import grade
from evals.suites import contract_from_files, load_suite, suite_files
from gateway.live import Lookups
from gateway.server._routes_calls import INVOKE_KEYS
from records import Store, period_key, utcnow
from schema.jsontext import LARGE_NODES, dumps
from tests.gateway.server._adder import (
    AGENT,
    CAPABILITY,
    MONTHLY,
    Adder,
    adder_gateway,
    adder_mandate,
    serving_adder,
    write_adder_suite,
)
from tests.gateway.server._gateway import Gateway, install_tiny, running_gateway

CALLER = "caller:finance-bot"
INVOKE = f"/v1/agents/{AGENT}/invoke"
ROUTE = f"/v1/capabilities/{CAPABILITY}/invoke"


def _invoke(gw: Gateway, body: dict[str, Any], path: str = INVOKE) -> Any:
    return gw.call("POST", path, CALLER, json=body)


def _rows(gw: Gateway) -> list[dict[str, Any]]:
    """Every ledger row, newest first, once this process's writes are committed."""
    answer = gw.call("GET", "/v1/ledger?limit=1000", "operator")
    assert answer.status_code == 200, answer.text
    items: list[dict[str, Any]] = answer.json()["items"]
    return items


def _gauge(text: str, name: str, agent: str) -> str | None:
    found = re.search(
        rf'^{name}\{{agent="{re.escape(agent)}",capability="{CAPABILITY}"\}} (\S+)$',
        text,
        re.MULTILINE,
    )
    return None if found is None else found.group(1)


@pytest.mark.slow
def test_a_bad_input_never_reaches_the_agent(store: Store, tmp_path: Path) -> None:
    adder = Adder()
    with adder_gateway(store, tmp_path, adder, MONTHLY, eval_workers=0, cells_ttl_s=0) as gw:
        direct = _invoke(gw, {"capability": CAPABILITY, "input": {"a": "x", "b": 1}})
        routed = gw.call("POST", ROUTE, CALLER, json={"input": {"a": 1}})
        rows = _rows(gw)
        metrics = gw.call("GET", "/metrics", "operator").text
    assert adder.requests == []  # neither call reached the agent
    assert direct.status_code == 400, direct.text
    error = direct.json()["error"]
    assert error["code"] == "invalid_input"
    assert error["details"]["path"] == "$.input.a"
    assert "expected a number" in error["details"]["error"]
    assert (error["details"]["suite"], error["details"]["suite_version"]) == ("adder", 1)
    assert routed.status_code == 400, routed.text
    assert routed.json()["error"]["details"]["path"] == "$.input"
    assert "missing required key 'b'" in routed.json()["error"]["details"]["error"]
    # One deny row each, nothing reserved, no mandate charged; the routed one has no agent.
    assert [
        (r["decision"], r["reason"], r["status"], r["reserved_usd"], r["mandate"], r["agent"])
        for r in rows
    ] == [
        ("deny", "invalid_input", "denied", "0", None, None),
        ("deny", "invalid_input", "denied", "0", None, AGENT),
    ]
    assert store.ledger.budget("finance-adding", period_key("month", utcnow())) == (0, 0)
    assert 'holon_live_denials_total{reason="invalid_input"} 2' in metrics
    # The caller's violations, counted apart: nothing against the agent.
    assert _gauge(metrics, "holon_live_window_input_violations", AGENT) == "1"
    assert _gauge(metrics, "holon_live_window_input_violations", "") == "1"
    assert _gauge(metrics, "holon_live_window_calls", AGENT) == "0"
    assert _gauge(metrics, "holon_live_window_violations", AGENT) == "0"


@pytest.mark.slow
def test_a_contract_breaking_output_is_never_200(store: Store, tmp_path: Path) -> None:
    adder = Adder()
    script = "<script>alert(1)</script>"
    with adder_gateway(store, tmp_path, adder, MONTHLY, eval_workers=1, cells_ttl_s=0) as gw:
        evaluated = gw.evaluate(AGENT)  # certified while it answers right
        assert evaluated["status"] == "done"
        good = _invoke(gw, {"capability": CAPABILITY, "input": {"a": 1, "b": 2}})
        adder.answer = lambda _input: {"sum": script}
        bad = _invoke(gw, {"capability": CAPABILITY, "input": {"a": 1, "b": 2}})
        routed = gw.call("POST", ROUTE, CALLER, json={"input": {"a": 3, "b": 4}})
        rows = _rows(gw)
        metrics = gw.call("GET", "/metrics", "operator").text
        record = gw.call("GET", f"/v1/records/{AGENT}", "operator")
        as_author = gw.call("GET", f"/v1/records/{AGENT}", "org:acme")
    assert good.status_code == 200, good.text
    assert good.json()["output"] == {"sum": 3}
    # Eval cells and live calls send the agent the same thing: the capability and the input.
    assert len(adder.requests) == 8 + 3
    assert {tuple(sorted(r)) for r in adder.requests} == {("capability", "input")}
    assert adder.requests[-2]["input"] == {"a": 1, "b": 2}
    for answer in (bad, routed):
        assert answer.status_code == 502, answer.text
        error = answer.json()["error"]
        assert error["code"] == "invalid_output"
        assert error["details"]["path"] == "$.output.sum"
        assert error["details"]["cost_usd"] == "0"
        assert error["details"]["agent"] == AGENT
        assert "output" not in answer.json()
    # Settled at zero although the agent is priced at 0.001 a call; the good one paid.
    settled = [(r["outcome"], Decimal(r["cost_usd"])) for r in rows]
    assert settled == [
        ("invalid_output", 0),
        ("invalid_output", 0),
        ("ok", Decimal("0.001")),
    ]
    spent, reserved = store.ledger.budget("finance-adding", period_key("month", utcnow()))
    assert (spent, reserved) == (Decimal("0.001"), 0)
    assert f'holon_live_calls_total{{capability="{CAPABILITY}",outcome="invalid_output"}} 2' in (
        metrics
    )
    assert _gauge(metrics, "holon_live_window_calls", AGENT) == "3"
    assert _gauge(metrics, "holon_live_window_violations", AGENT) == "2"
    assert _gauge(metrics, "holon_live_window_violation_rate", AGENT) == "0.666667"
    assert record.status_code == 200, record.text
    for view in (record.json(), as_author.json()):
        live = view["live"]
        assert (live["calls"], live["violations"], live["input_violations"]) == (3, 2, 0)
        assert live["rate"] == pytest.approx(0.666667)
        assert live["window_days"] == 7
        assert live["capabilities"][CAPABILITY]["violations"] == 2


@pytest.mark.slow
def test_unknown_body_keys_are_refused(store: Store, tmp_path: Path) -> None:
    adder = Adder()
    valid = {"capability": CAPABILITY, "input": {"a": 1, "b": 2}}
    with adder_gateway(store, tmp_path, adder) as gw:
        streamed = _invoke(gw, {**valid, "stream": True})
        routed = gw.call("POST", ROUTE, CALLER, json={**valid, "temperature": 0})
        hostile = _invoke(gw, {**valid, "k" * 5000: 1})
        rows = _rows(gw)
        reached = len(adder.requests)
        fine = _invoke(gw, valid)
    for answer, path in ((streamed, "$.stream"), (routed, "$.temperature")):
        assert answer.status_code == 400, answer.text
        error = answer.json()["error"]
        assert error["code"] == "unknown_key"
        assert error["details"] == {"path": path, "expected": list(INVOKE_KEYS)}
    assert hostile.status_code == 400
    assert len(hostile.json()["error"]["details"]["path"]) <= 80  # a hostile key, bounded
    assert rows == []  # refused before anything: no decision, no ledger row
    assert reached == 0
    assert fine.status_code == 200, fine.text


@pytest.mark.slow
def test_a_capability_without_a_suite_passes_unchecked(store: Store, tmp_path: Path) -> None:
    """No installed suite certifies math.add: no contract, so nothing to hold calls to."""
    adder = Adder(answer=lambda _input: {"sum": "<b>not a number</b>"})
    store.mandates.grant(adder_mandate())
    with (
        serving_adder(store, adder),
        running_gateway(store, tmp_path / "home", eval_workers=0, cells_ttl_s=0) as gw,
    ):
        answer = _invoke(gw, {"capability": CAPABILITY, "input": {"a": "x"}})
        _rows(gw)  # the settlement commits after the answer: wait for it
        metrics = gw.call("GET", "/metrics", "operator").text
    assert answer.status_code == 200, answer.text
    assert answer.json()["output"] == {"sum": "<b>not a number</b>"}
    assert [r["input"] for r in adder.requests] == [{"a": "x"}]
    # Counted as an answer, never as a violation.
    assert _gauge(metrics, "holon_live_window_calls", AGENT) == "1"
    assert _gauge(metrics, "holon_live_window_violations", AGENT) == "0"


def _deep(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = {"x": value}
    return value


@pytest.mark.slow
@pytest.mark.parametrize(
    "output",
    [
        {"sum": _deep(60)},  # as deep as the executor reads (64)
        {"sum": "x" * (3 * 1024 * 1024)},  # a 3 MiB string (the cap is 4 MiB)
        {"sum": 1, "more": [{"sum": "y"}] * 100_000},  # many values, one of them wrong-typed
        [{"sum": "z"}] * 100_000,  # not an object at all, and big
    ],
    ids=["deep", "long-string", "many-values", "big-array"],
)
def test_hostile_outputs_cannot_make_validation_slow_or_huge(
    store: Store, tmp_path: Path, output: Any
) -> None:
    with adder_gateway(store, tmp_path, Adder(answer=lambda _input: output)) as gw:
        started = time.perf_counter()
        answer = _invoke(gw, {"capability": CAPABILITY, "input": {"a": 1, "b": 2}})
        elapsed = time.perf_counter() - started
    if isinstance(output, dict) and output.get("sum") == 1:
        assert answer.status_code == 200, answer.text[:300]  # extra keys are allowed
        return
    assert answer.status_code == 502, answer.text[:300]
    assert answer.json()["error"]["code"] == "invalid_output"
    assert len(answer.content) < 4096  # the error never quotes the whole output
    assert elapsed < 10, elapsed  # megabytes moved over loopback; validation is a fraction


@pytest.mark.slow
@pytest.mark.parametrize(
    "value",
    [
        {"a": "x" * (1024 * 1024), "b": 1},
        {"a": _deep(60), "b": 1},
        {"a": 1, "b": 2, **{f"k{i}": i for i in range(50_000)}},
    ],
    ids=["long-string", "deep", "many-keys"],
)
def test_hostile_inputs_are_refused_bounded(store: Store, tmp_path: Path, value: Any) -> None:
    adder = Adder()
    with adder_gateway(store, tmp_path, adder) as gw:
        answer = _invoke(gw, {"capability": CAPABILITY, "input": value})
    assert answer.status_code == 400, answer.text[:300]
    assert answer.json()["error"]["code"] == "invalid_input"
    assert len(answer.content) < 4096
    assert adder.requests == []


# -- the contract itself, without a gateway --------------------------------------

FORMAT_SUITE = {
    "type": "object",
    "required": ["sum"],
    "properties": {"sum": {"type": "number"}, "email": {"type": "string", "format": "email"}},
}


@pytest.mark.parametrize(
    "output",
    [
        {"sum": 1},
        {"sum": 1.5},
        {"sum": "1"},
        {"sum": True},
        {},
        {"sum": 1, "email": "not an email"},  # formats annotate in a check: the eval passes it
        {"sum": 1, "email": 5},
        [],
        None,
    ],
)
def test_live_and_eval_accept_the_same_outputs(tmp_path: Path, output: Any) -> None:
    """The live output check is the suite's implicit output schema check: same verdicts."""
    suite = load_suite(write_adder_suite(tmp_path / "suite", FORMAT_SUITE, cases=1))
    contract = contract_from_files(suite.id, suite.version, suite.capability, suite_files(suite))
    document = {"input": {}, "output": output, "expected": {}, "usage": {}, "case": {}}
    graded = grade(suite.checks[:1], document)  # the output schema check alone
    assert graded.passed == (contract.output_violation(output) is None)


def test_the_contract_is_bounded_on_hostile_documents(tmp_path: Path) -> None:
    """Long strings against length and pattern rules, and thousands of errors: fast, and the
    violation says at most 300 printable characters (jsonschema's messages quote values)."""
    schema = {
        "type": "object",
        "properties": {
            "sum": {"type": "string", "maxLength": 10, "pattern": "^(a+)+$"},
            "items": {"type": "array", "items": {"type": "integer"}},
        },
    }
    suite = load_suite(write_adder_suite(tmp_path / "suite", schema, cases=1))
    contract = contract_from_files(suite.id, suite.version, suite.capability, suite_files(suite))
    hostile = [
        {"sum": "a" * 4_000_000 + "!"},  # catastrophic backtracking for a backtracking engine
        {"sum": "\x1b[31m" * 100_000},
        {"items": ["x"] * 200_000},
    ]
    for value in hostile:
        started = time.perf_counter()
        violation = contract.output_violation(value)
        elapsed = time.perf_counter() - started
        assert violation is not None
        assert len(violation.error) <= 300 and violation.error.isprintable()
        assert len(violation.path) <= 300
        assert elapsed < 2, elapsed
    assert contract.output_violation({"items": ["x"] * 200_000}).errors == "10+"  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("value", "big"),
    [
        ({"a": 1, "b": 2}, False),
        ("x" * (60 * 1024), False),
        ("x" * (70 * 1024), True),  # long text: a pattern over it takes milliseconds
        ({"k" * (70 * 1024): 1}, True),  # a long key too
        ([1] * 2000, False),
        ([1] * 2100, True),  # many values
        ([[1] * 1000, [1] * 1000, [1] * 1000], True),
        ({"a": [{"b": "c"}] * 1500}, True),
    ],
)
def test_heavy_documents_are_checked_off_the_loop(value: Any, big: bool) -> None:
    from gateway.live._contract import heavy

    assert heavy(value) is big
    # Deciding looks at a bounded part: a walk of all 12 million values here takes
    # seconds, deciding a few microseconds, so 1 s holds on the most loaded machine.
    started = time.perf_counter()
    assert heavy([[0, 0]] * 4_000_000)
    assert time.perf_counter() - started < 1


def test_a_cold_gateway_compiles_a_contract_once(store: Store, tmp_path: Path) -> None:
    """The first calls of a cold gateway, all missing the contract at once in their worker
    threads, share one compile: every one of them gets the same compiled contract."""
    install_tiny(store, tmp_path / "suite")
    lookups = Lookups(store)
    start = threading.Barrier(16)

    def first_call() -> Any:
        start.wait()
        return lookups.contract("ticket.classify")

    with ThreadPoolExecutor(16) as pool:
        found = list(pool.map(lambda _: first_call(), range(16)))
    assert found[0] is not None
    assert all(contract is found[0] for contract in found)


_small_values = st.recursive(
    st.none() | st.booleans() | st.integers(-9, 9) | st.text(max_size=400),
    lambda children: (
        st.lists(children, max_size=700)
        | st.dictionaries(st.text(max_size=40), children, max_size=50)
    ),
    max_leaves=1500,
)


@settings(max_examples=60, deadline=None)
@given(_small_values)
def test_an_output_shorter_than_large_nodes_is_never_heavy(value: Any) -> None:
    """check_output skips the walk for an output whose JSON is under LARGE_NODES bytes:
    every value and character takes at least a byte of it, so it cannot be heavy."""
    from gateway.live._contract import heavy

    if len(dumps(value).encode()) < LARGE_NODES:
        assert not heavy(value)

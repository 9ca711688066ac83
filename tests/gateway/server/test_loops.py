"""No item stops a background loop of the gateway, and /readyz says when a loop stopped.

Red team (issue 33): an agent registered at `http://0177.0.0.1:PORT/` made the
identity probe raise `AddressValueError` out of the probe task, which ended
with no log line; no agent of that process was probed again, and a certified
agent that switched version stayed fresh for minutes. Here one agent's probe
raises (the address parser itself is fixed elsewhere: the failure is injected
for one agent), and another certified agent's switch must still stale it.
Each loop gets a failure injected for one item: the loop goes on with the
others, logs the failure once with its item, counts it in /metrics, and
/readyz shows its last success; a loop made to stop makes /readyz 503.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

import evals
from gateway._loops import Loop
from gateway.live import LiveCalls
from gateway.server import _app, _probes
from gateway.service._store import StoreEvals
from records import AgentInfo, Store
from tests._servers import serve
from tests.gateway.server._agent import Recording, manifest, recording_agent, serving_recorder
from tests.gateway.server._doors import CALLER, INPUT, two_call_gateway
from tests.gateway.server._gateway import Gateway, install_tiny, mandate, running_gateway

pytestmark = pytest.mark.slow

CERTIFIED = "acme/drifter"
BROKEN = "acme/octal"  # its probe raises, as the octal endpoint's did
BODY = {"capability": "ticket.classify", "input": {"subject": "Refund", "body": "x"}}
FAST_PROBES = {"probe_interval_s": 0.2}


def _until(what: Callable[[], Any], ok: Callable[[Any], bool], within_s: float = 30) -> Any:
    deadline = time.monotonic() + within_s
    while True:
        answer = what()
        if ok(answer) or time.monotonic() > deadline:
            return answer
        time.sleep(0.05)


def _metric(gw: Gateway, name: str, loop: str) -> float | None:
    text = gw.call("GET", "/metrics", "operator").text
    match = re.search(rf'^{name}{{loop="{re.escape(loop)}"}} (\S+)$', text, re.MULTILINE)
    return None if match is None else float(match.group(1))


def _failures(gw: Gateway, loop: str) -> float:
    return _metric(gw, "holon_loop_failures_total", loop) or 0.0


@contextmanager
def _two_agents(store: Store, broken: Recording, certified: Recording) -> Iterator[None]:
    """BROKEN and CERTIFIED, real agents on loopback; BROKEN registered first, so a pass
    over the agents (or the evals) meets it before the other."""
    with (
        serve(recording_agent(BROKEN, "1.0.0", broken)) as first,
        serve(recording_agent(CERTIFIED, "1.0.0", certified)) as second,
    ):
        store.agents.register(manifest(BROKEN, first))
        store.agents.register(manifest(CERTIFIED, second))
        yield


def _first_call_fails(
    real: Callable[..., Any], exc: Exception, item: Callable[..., str]
) -> tuple[Callable[..., Any], list[str]]:
    """`real`, but its first call raises `exc`; the list gets the item that call was for."""
    failed: list[str] = []
    lock = threading.Lock()

    def once(*args: Any) -> Any:
        with lock:
            if not failed:
                failed.append(item(*args))
                raise exc
        return real(*args)

    return once, failed


def _succeeded(gw: Gateway, loop: str) -> dict[str, Any]:
    """The loop as /readyz shows it, once it has succeeded (or after 30 s)."""
    view: dict[str, Any] = _until(
        lambda: gw.call("GET", "/readyz").json()["loops"][loop],
        lambda state: state["last_success"] is not None,
    )
    return view


def _logged(caplog: pytest.LogCaptureFixture, item: str) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "gateway._loops" and item in r.getMessage()]


def _one_traceback(caplog: pytest.LogCaptureFixture, item: str) -> logging.LogRecord:
    """The one line the loops logged about `item`, with its traceback."""
    (logged,) = _logged(caplog, item)
    assert logged.exc_info is not None
    return logged


def test_one_agent_whose_probe_raises_does_not_stop_the_probes_of_the_others(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    public = [f"p{i}" for i in range(3)]
    from evals.suites import install_suite
    from tests.evals.suites._make import case, make_suite

    install_suite(
        store,
        make_suite(
            tmp_path,
            public=[case(c, f"Refund {c}", "billing") for c in public],
            holdout=[case(f"h{c}", f"Refund please {c}", "billing") for c in public],
        ),
    )
    raised: list[str] = []
    real = _probes.probe_agent

    async def probe_agent(shared: Any, executor: Any, agent: AgentInfo) -> Any:
        if agent.id == BROKEN:
            raised.append(agent.id)
            # What ipaddress said of http://0177.0.0.1/ (a leading zero in an octet).
            raise ipaddress.AddressValueError(
                "Leading zeros are not permitted in '0177' in '0177.0.0.1'"
            )
        return await real(shared, executor, agent)

    monkeypatch.setattr(_probes, "probe_agent", probe_agent)
    octal, drifter = Recording(), Recording()
    with _two_agents(store, octal, drifter):
        with running_gateway(store, tmp_path / "home", settings_changes=FAST_PROBES) as gw:
            done = gw.evaluate(CERTIFIED)
            assert done["record"]["eval_score"] == 1
            granted = gw.call("POST", "/v1/mandates", "operator", json=mandate(min_eval_score=0.5))
            assert granted.status_code == 201, granted.text

            def invoke() -> httpx.Response:
                return gw.call("POST", f"/v1/agents/{CERTIFIED}/invoke", CALLER, json=BODY)

            assert invoke().status_code == 200
            _until(lambda: len(raised), lambda n: n >= 2)
            assert len(raised) >= 2  # passes after the failure went on

            drifter.answers_version = "6.6.6"  # the certified agent switches version
            denied = _until(invoke, lambda r: r.status_code == 403)
            assert denied.status_code == 403, denied.text
            assert denied.json()["error"]["code"] == "eval_stale"

            assert _failures(gw, "probes") >= 2
            ready = gw.call("GET", "/readyz")
            assert ready.status_code == 200, ready.text
            probes = ready.json()["loops"]["probes"]
            assert probes["running"] is True and probes["failures"] >= 2
            assert probes["last_success"].endswith("+00:00")
            assert 0 <= probes["seconds_since_success"] < 30
            assert BROKEN not in ready.text and "acme" not in ready.text  # nothing per org
            last = _metric(gw, "holon_loop_last_success_timestamp_seconds", "probes")
            assert last is not None and abs(last - time.time()) < 30
            assert _metric(gw, "holon_loop_running", "probes") == 1
    assert octal.probes == 0  # its probe never got as far as the agent
    # Each failure logged once, with the agent and the exception's traceback.
    logged = _logged(caplog, f"agent {BROKEN}")
    assert len(logged) == len(raised)
    assert all(r.levelno == logging.ERROR and r.exc_info for r in logged)
    assert "AddressValueError" in logged[0].getMessage()


def test_a_probe_loop_that_stops_makes_readyz_503(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    async def probe_forever(*args: Any) -> None:
        raise RuntimeError("the probe loop fell over")

    monkeypatch.setattr(_app, "probe_forever", probe_forever)
    with running_gateway(store, tmp_path / "home", settings_changes=FAST_PROBES) as gw:
        answer = _until(lambda: gw.call("GET", "/readyz"), lambda r: r.status_code == 503)
        assert answer.status_code == 503, answer.text
        error = answer.json()["error"]
        assert error["code"] == "not_ready"
        assert error["message"] == "background loop probes has stopped"
        assert error["details"]["not_ready"] == ["probes"]
        assert error["details"]["loops"]["probes"]["running"] is False
        assert _metric(gw, "holon_loop_running", "probes") == 0
        assert _metric(gw, "holon_loop_ready", "probes") == 0
        assert gw.call("GET", "/healthz").status_code == 200  # alive, not ready
    (stopped,) = [r for r in caplog.records if "has stopped" in r.getMessage()]
    assert stopped.exc_info is not None and "fell over" in stopped.getMessage()
    # The dead loop does not cut the shutdown short: the eval workers stopped with the app
    # (left running, they went on polling a store the test had closed).
    assert not [t.name for t in threading.enumerate() if t.name.startswith("holon-eval-worker")]


def test_a_drain_that_fails_at_shutdown_still_stops_the_eval_workers(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def drain(self: LiveCalls) -> None:
        raise RuntimeError("the store went away as the gateway stopped")

    monkeypatch.setattr(LiveCalls, "drain", drain)
    with running_gateway(store, tmp_path / "home") as gw:
        assert gw.call("GET", "/readyz").status_code == 200
        assert [t for t in threading.enumerate() if t.name.startswith("holon-eval-worker")]
    assert not [t.name for t in threading.enumerate() if t.name.startswith("holon-eval-worker")]


def test_a_probe_loop_that_stops_succeeding_makes_readyz_503(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def stuck(*args: Any) -> None:
        await asyncio.Event().wait()  # never probes anything, never ends

    monkeypatch.setattr(_app, "probe_forever", stuck)
    monkeypatch.setattr(_app, "probe_loop", lambda interval_s: Loop("probes", stale_after_s=0.5))
    with running_gateway(store, tmp_path / "home", settings_changes=FAST_PROBES) as gw:
        answer = _until(lambda: gw.call("GET", "/readyz"), lambda r: r.status_code == 503)
        assert answer.status_code == 503, answer.text
        error = answer.json()["error"]
        assert error["message"].startswith("background loop probes has not succeeded for")
        loop = error["details"]["loops"]["probes"]
        assert loop["running"] is True and loop["last_success"] is None
        assert loop["stale_after_s"] == 0.5


def test_eval_workers_go_on_past_an_eval_that_raises(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    install_tiny(store, tmp_path)
    real = evals._worker.rebuild
    broken: list[str] = []

    def rebuild(store: Store, plan: Any, *, home: Path) -> Any:
        rebuilt = real(store, plan, home=home)
        if rebuilt.agent.id == BROKEN:
            broken.append(BROKEN)
            raise ValueError("a plan this worker cannot take")
        return rebuilt

    monkeypatch.setattr(evals._worker, "rebuild", rebuild)
    first, second = Recording(), Recording()
    with _two_agents(store, first, second):
        with running_gateway(store, tmp_path / "home") as gw:
            # The failing eval is the older, so each look at the running evals meets it first.
            started = gw.call("POST", "/v1/evals", "operator", json={"agent": BROKEN})
            assert started.status_code == 201, started.text
            stuck = started.json()["eval"]["id"]
            assert gw.evaluate(CERTIFIED)["status"] == "done"
            assert gw.call("GET", f"/v1/evals/{stuck}", "operator").json()["status"] == "running"
            assert _failures(gw, "eval-workers") == 1  # then left alone for a minute
            # The pass that finished the eval ends just after the eval is done.
            ready = _succeeded(gw, "eval-workers")
            assert ready["running"] is True and ready["failures"] == 1
            assert ready["last_success"] is not None
    assert len(broken) == 1 and not first.calls
    assert "cannot take" in _one_traceback(caplog, f"eval {stuck}").getMessage()


# The thread's end is the point: pytest reports what ended it, and here that is expected.
@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_eval_workers_whose_thread_ended_make_readyz_503(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def run_worker(*args: Any, **kwargs: Any) -> None:
        raise KeyboardInterrupt  # what no `except Exception` catches: the thread ends

    monkeypatch.setattr(evals, "run_worker", run_worker)
    with running_gateway(store, tmp_path / "home") as gw:
        answer = _until(lambda: gw.call("GET", "/readyz"), lambda r: r.status_code == 503)
        assert answer.status_code == 503, answer.text
        assert answer.json()["error"]["details"]["not_ready"] == ["eval-workers"]
        assert _metric(gw, "holon_loop_running", "eval-workers") == 0


def test_a_report_that_fails_to_render_ahead_is_counted_and_the_next_is_rendered(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    install_tiny(store, tmp_path)
    prerender, failed = _first_call_fails(
        StoreEvals.prerender, KeyError("a bug in a report"), lambda self, eval_id: eval_id
    )
    monkeypatch.setattr(StoreEvals, "prerender", prerender)
    recording = Recording()
    with serving_recorder(store, CERTIFIED, recording):
        with running_gateway(store, tmp_path / "home") as gw:
            started = gw.call("POST", "/v1/evals", "operator", json={"agent": CERTIFIED})
            assert started.status_code == 201, started.text
            _until(lambda: _failures(gw, "report-prerender"), lambda n: n == 1)
            assert _failures(gw, "report-prerender") == 1
            assert gw.evaluate(CERTIFIED)["status"] == "done"  # its reports rendered ahead
            # The reports are in the store just before the render returns.
            loop = _succeeded(gw, "report-prerender")
            assert loop["failures"] == 1 and loop["last_success"] is not None
    assert failed == [started.json()["eval"]["id"]]
    _one_traceback(caplog, f"the report of eval {failed[0]}")


def test_a_token_use_that_fails_to_be_written_is_counted_and_the_next_is_written(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    touch, failed = _first_call_fails(
        store.tokens.touch, ValueError("a bad timestamp"), lambda token_id, now: token_id
    )

    with running_gateway(store, tmp_path / "home", eval_workers=0) as gw:
        before = _failures(gw, "token-uses")  # the process's own: other tests count too
        monkeypatch.setattr(store.tokens, "touch", touch)
        assert gw.call("GET", "/v1/agents", "org:acme").status_code == 200
        assert gw.call("GET", "/v1/agents", "org:other").status_code == 200
        _until(lambda: _failures(gw, "token-uses"), lambda n: n == before + 1)
        assert _failures(gw, "token-uses") == before + 1
        listed = _until(
            lambda: store.tokens.list(),
            lambda tokens: sum(t.last_used_at is not None for t in tokens) >= 2,
        )
    used = {t.id for t in listed if t.last_used_at is not None}
    assert failed[0] not in used and len(used) >= 2  # the others' uses were written
    _one_traceback(caplog, f"the last use of token {failed[0]}")


def test_an_a2a_task_write_that_fails_is_counted_and_the_next_is_written(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    put_many, failed = _first_call_fails(
        store.a2a_tasks.put_many, ValueError("a task the store cannot take"), lambda w: w[0][0]
    )
    monkeypatch.setattr(store.a2a_tasks, "put_many", put_many)
    door = "/v1/capabilities/ticket.classify/a2a"
    message = {"messageId": "m", "role": "ROLE_USER", "parts": [{"data": INPUT}]}
    send = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": message}}
    with two_call_gateway(store, tmp_path) as gw:
        tasks = []
        for _ in range(2):
            answer = gw.call("POST", door, CALLER, json=send)
            assert answer.status_code == 200, answer.text
            tasks.append(answer.json()["result"]["task"]["id"])
        _until(lambda: _failures(gw, "a2a-tasks"), lambda n: n == 1)
        assert _failures(gw, "a2a-tasks") == 1

        def get(task_id: str) -> httpx.Response:
            rpc = {"jsonrpc": "2.0", "id": 2, "method": "GetTask", "params": {"id": task_id}}
            return gw.call("POST", door, CALLER, json=rpc)

        written = _until(lambda: get(tasks[1]), lambda r: "result" in r.json())
        assert written.json()["result"]["id"] == tasks[1], written.text
        assert "error" in get(tasks[0]).json()  # the failed write: not found
        # The write is read back just before its task ends.
        loop = _succeeded(gw, "a2a-tasks")
        assert loop["failures"] == 1 and loop["last_success"] is not None
    assert failed == [tasks[0]]
    _one_traceback(caplog, f"A2A task {tasks[0]}")


@pytest.mark.anyio
async def test_a_failed_batch_of_task_writes_reaches_every_writer_still_waiting() -> None:
    """A writer cancelled while its write was in a batch made the batch's failure raise
    `InvalidStateError` out of the flush: the writers after it waited forever."""
    from types import SimpleNamespace

    from gateway.server._a2a import _TaskWriter

    started = asyncio.Event()
    go_on = asyncio.Event()

    async def run(fn: Callable[..., Any], *args: Any) -> Any:
        started.set()
        await go_on.wait()
        return fn(*args)

    def put_many(writes: list[Any]) -> None:
        raise ValueError("a task the store cannot take")

    shared = SimpleNamespace(
        run=run, store=SimpleNamespace(a2a_tasks=SimpleNamespace(put_many=put_many))
    )
    writer = _TaskWriter(shared)  # type: ignore[arg-type]
    write = ("task", "caller", "door", "WORKING", {})
    leaving = asyncio.create_task(writer.write(write))
    staying = asyncio.create_task(writer.write(write))
    await started.wait()  # both in the batch being written
    leaving.cancel()
    await asyncio.gather(leaving, return_exceptions=True)
    go_on.set()
    with pytest.raises(ValueError, match="cannot take"):
        await asyncio.wait_for(staying, timeout=10)
    assert writer.flushing is not None
    await asyncio.gather(writer.flushing, return_exceptions=True)
    assert writer.flushing.exception() is None


def test_a_gateway_without_the_stores_key_is_not_ready(tmp_path: Path) -> None:
    """Its live calls may work, but it cannot sign a card or a record, nor read an agent's
    secret: /readyz says so (a balancer sends it nothing), /healthz still answers."""
    from records import open_store

    keyless = open_store(f"sqlite:///{tmp_path / 'keyless.db'}", auto_upgrade=True)
    try:
        with running_gateway(keyless, tmp_path / "home", eval_workers=0) as gw:
            ready = gw.call("GET", "/readyz")
            assert ready.status_code == 503
            error = ready.json()["error"]
            assert "HOLON_SECRET_KEY is not set" in error["message"]
            assert "store" in error["details"]["not_ready"]
            assert gw.call("GET", "/healthz").status_code == 200
    finally:
        keyless.close()

"""A spy agent answering one request at a time learns nothing of the holdout while its
eval runs: every view an author can read is the same before and after each holdout cell.

Through a real gateway on 127.0.0.1 and a real loopback agent. The agent holds each
request until the test lets it go, answers some holdout cases right and some wrong (so
the operator's view does move: the test can fail), and after each answer the test waits
for the cell to be recorded, then reads everything an org token may read.
"""

from __future__ import annotations

import contextlib
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from evals.suites import install_suite
from records import Store
from schema.jsontext import loads
from tests._servers import serve
from tests.evals.suites._make import case, make_suite
from tests.gateway.console._world import signed_in
from tests.gateway.server._agent import manifest
from tests.gateway.server._gateway import running_gateway

pytestmark = pytest.mark.slow

AGENT = "acme/spy"


class Spy:
    """One request at a time: each waits for `release()`; answers are scripted by subject."""

    def __init__(self) -> None:
        self.arrived = threading.Semaphore(0)
        self.go = threading.Semaphore(0)
        self.subjects: list[str] = []

    def app(self) -> Starlette:
        async def call(request: Request) -> Response:
            body = loads(await request.body())
            subject = str(body["input"]["subject"])
            self.subjects.append(subject)
            self.arrived.release()
            # Wait in a thread: the agent's event loop must keep serving identity probes.
            import anyio.to_thread

            await anyio.to_thread.run_sync(self.go.acquire)
            label = "wrong" if subject.endswith("!") else "billing"
            return JSONResponse({"output": {"label": label}})

        async def identity(request: Request) -> Response:
            return JSONResponse(
                {"id": AGENT, "version": "1.0.0", "capabilities": ["ticket.classify"]}
            )

        return Starlette(
            routes=[
                Route("/agent", call, methods=["POST"]),
                Route("/agent/.well-known/holon-agent", identity, methods=["GET"]),
            ]
        )


def _console_views(browser: httpx.Client, eval_id: str, cells: int) -> dict[str, Any]:
    """The console's pages of the eval as an author reads them: its page with the case
    explorer under each filter, and every cell's page (a holdout cell's: not found)."""
    page = f"/ui/evals/{eval_id}"
    paths = [
        page,
        *(f"{page}?{q}" for q in ("outcome=failures", "outcome=passes", "text=held", "tag=x")),
        *(f"{page}/cells/{idx}" for idx in range(cells + 1)),
        f"/ui/compare?base={eval_id}&candidate={eval_id}",
    ]
    out = {}
    for path in paths:
        response = browser.get(path)
        out[path] = (response.status_code, response.text)
    return out


def _author_views(gw: Any, eval_id: str) -> dict[str, Any]:
    paths = [
        f"/v1/evals/{eval_id}",
        f"/v1/evals?agent={AGENT}",
        f"/v1/evals/{eval_id}/report?format=json",
        f"/v1/evals/{eval_id}/report?format=md",
        f"/v1/evals/{eval_id}/report?format=html",
        f"/v1/evals/{eval_id}/compare/{eval_id}?format=json",
        f"/v1/records/{AGENT}",
        "/v1/suites/tiny",
        "/metrics",
    ]
    out = {}
    for path in paths:
        response = gw.call("GET", path, "org:acme")
        out[path] = (response.status_code, response.text)
    return out


def _recorded(gw: Any, eval_id: str, done: int) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        status = gw.call("GET", f"/v1/evals/{eval_id}", "operator").json()
        if status["progress"]["done"] >= done:
            return
        time.sleep(0.02)
    raise AssertionError(f"cell {done} was not recorded")


@pytest.mark.parametrize("pool", [False, True], ids=["file", "pool"])
def test_a_spy_agent_learns_nothing_while_its_eval_runs(
    store: Store, tmp_path: Path, pool: bool
) -> None:
    """A stored holdout of 4, and a pool of 8 in subsets of 4 (its second epoch's)."""
    from tests.integrity.test_pool import pool_yaml

    public = [case(f"p{i}", f"public {i}", "billing") for i in range(3)]
    # Holdout subjects ending in "!" get a wrong answer: passes and failures alternate.
    cases = 8 if pool else 4
    holdout = [case(f"h{i}", f"held {i}" + ("!" if i % 2 else ""), "billing") for i in range(cases)]
    text = {"suite_yaml": pool_yaml(4)} if pool else {}
    install_suite(store, make_suite(tmp_path, public=public, holdout=holdout, **text))
    if pool:
        store.suites.rotate_holdout("tiny")
    holdout = holdout[:4]  # what one eval grades (of a pool, its subset: as many)
    spy = Spy()
    with (
        contextlib.ExitStack() as stack,
        serve(spy.app()) as agent_url,
        running_gateway(store, tmp_path / "home") as gw,
    ):
        store.agents.register(manifest(AGENT, agent_url))
        started = gw.call("POST", "/v1/evals", "operator", json={"agent": AGENT, "concurrency": 1})
        assert started.status_code == 201, started.text
        eval_id = started.json()["eval"]["id"]
        gw.token("org:acme")
        browser = signed_in(gw, "org:acme")
        stack.callback(browser.close)
        cells = len(public) + len(holdout)

        def views() -> dict[str, Any]:
            return {**_author_views(gw, eval_id), **_console_views(browser, eval_id, cells)}

        before = views()
        operator_before = gw.call("GET", f"/v1/evals/{eval_id}", "operator").json()
        changed_by_holdout = []
        for done in range(1, len(public) + len(holdout) + 1):
            assert spy.arrived.acquire(timeout=30), "the agent was not called"
            holdout_cell = spy.subjects[-1].startswith("held")
            if done == len(public) + len(holdout):
                # The last answer completes the eval: from then on the holdout may show.
                operator_after = gw.call("GET", f"/v1/evals/{eval_id}", "operator").json()
                spy.go.release()
                break
            spy.go.release()
            _recorded(gw, eval_id, done)
            after = views()
            if holdout_cell:
                changed_by_holdout += [path for path in after if after[path] != before[path]]
            before = after
        assert spy.subjects[: len(public)] == [c["input"]["subject"] for c in public]
        assert changed_by_holdout == []
        # The explorer showed the public cells, and a holdout cell (index 3 on) as what an
        # index past the end gets: the comparison above can fail.
        cell = f"/ui/evals/{eval_id}/cells/"
        assert before[cell + "0"][0] == 200 and "p0 (public split" in before[cell + "0"][1]
        assert before[cell + "3"] == before[cell + str(cells)] and before[cell + "3"][0] == 404
        # The operator's view did move with the holdout cells: the comparison above can fail.
        assert operator_after["spent"]["passed"] > operator_before["spent"]["passed"]
        assert operator_after["progress"]["done"] == len(public) + len(holdout) - 1
        # Once complete, the author reads the holdout's rate with its interval, and no more.
        deadline = time.monotonic() + 30
        while gw.call("GET", f"/v1/evals/{eval_id}", "org:acme").json()["status"] == "running":
            assert time.monotonic() < deadline
            time.sleep(0.02)
        record = gw.call("GET", f"/v1/records/{AGENT}", "org:acme").json()
        graded = [s for s in spy.subjects if s.startswith("held")]
        assert len(graded) == 4
        shown = record["suites"]["tiny"]["holdout"]
        assert set(shown) == {"passed", "total", "rate", "ci95"}
        assert (shown["passed"], shown["total"]) == (sum(not s.endswith("!") for s in graded), 4)
        if not pool:
            assert shown == {"passed": 2, "total": 4, "rate": 0.5, "ci95": [0.15, 0.85]}
        status = gw.call("GET", f"/v1/evals/{eval_id}", "org:acme").json()
        assert status["progress_of"] == "public" and "plan_digest" not in status
        assert status["summary"]["cells"] == len(public)
        suite = gw.call("GET", "/v1/suites/tiny", "org:acme").json()
        operator_suite = gw.call("GET", "/v1/suites/tiny", "operator").json()
        assert suite["suite_digest"].startswith("hmac-sha256:")
        assert operator_suite["suite_digest"] not in str(suite)
        assert suite["digests"]["spec_digest"] == operator_suite["digests"]["spec_digest"]
        if pool:  # the epochs left tell the epoch: the operator's
            assert suite["holdout"]["pool"] == {"cases": 8, "epochs": 2}
            assert operator_suite["holdout"]["pool"]["remaining"] == 1

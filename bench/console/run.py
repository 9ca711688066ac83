"""The console's server-side rendering, as a ratio to the same data as plain JSON.

Two pages, each timed against `schema.jsontext.dumps` of exactly the data the
page shows, in the same run (the JSON listing an API client would be sent):

- the overview with 1,000 agents (`--agents`), each with a real record (the
  record of the eval below), grouped by capability: `overview.html` vs dumps;
- the eval page of a real 2,000-cell eval (`--cases` × `--repetitions`, the
  eval bench's suite and in-process agent): `eval.html` over the eval's status
  vs dumps of that status; and the report shown in the page (`render_html`)
  vs the JSON report (`render_json`) of the same `build_report` data.

Also shown: the store reads behind the overview (1,000 agents and their
current records), which the page and a JSON listing would share.

    .venv/bin/python bench/console/run.py [--json] [--agents 1000] [--runs 5]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench" / "eval"))

import bench_agent  # noqa: E402
import run as eval_bench  # noqa: E402

from evals import make_plan, start, work  # noqa: E402
from evals.reports import build_report, render_html, render_json  # noqa: E402
from evals.suites import install_suite  # noqa: E402
from gateway.client import StoreClient  # noqa: E402
from gateway.console._data import grouped, overview, record_row  # noqa: E402
from gateway.console._render import render  # noqa: E402
from gateway.server._auth import Bearer  # noqa: E402
from gateway.server._service import Service  # noqa: E402
from records import new_key, open_store  # noqa: E402
from schema.jsontext import dumps  # noqa: E402

OPERATOR = Bearer("operator", None)
GOAL_RATIO = 3.0
GOAL_MS = 100.0


def best_ms(runs: int, fn: Callable[[], Any]) -> float:
    times = []
    for _ in range(runs):
        began = time.perf_counter()
        fn()
        times.append(time.perf_counter() - began)
    return min(times) * 1000


def compare(runs: int, page: Callable[[], str], listing: Callable[[], str]) -> dict[str, Any]:
    page()  # warm: templates compiled once per process
    page_ms, json_ms = best_ms(runs, page), best_ms(runs, listing)
    return {
        "page_ms": round(page_ms, 2),
        "json_ms": round(json_ms, 2),
        "ratio": round(page_ms / json_ms, 2),
        "page_bytes": len(page()),
        "json_bytes": len(listing()),
        "meets_goal": page_ms / json_ms <= GOAL_RATIO and page_ms <= GOAL_MS,
    }


def measure(agents: int, cases: int, repetitions: int, runs: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        home = root / "home"
        store = open_store(
            f"sqlite:///{root / 'holon.db'}", secret_key=new_key(), auto_upgrade=True
        )
        try:
            install_suite(store, eval_bench.make_suite(root, cases, repetitions))
            store.agents.register(eval_bench.manifest("asgi:bench_agent:app"))
            plan = make_plan(store, bench_agent.AGENT_ID, home=home, concurrency=64)
            info = work(store, plan, start(store, plan), home=home)
            client = StoreClient(store, home)
            for i in range(agents - 1):
                manifest = eval_bench.manifest("http://127.0.0.1:9/agent")
                manifest["id"] = f"org{i % 20:02d}/agent-{i:04d}"
                store.agents.register(manifest)
            record = store.evals.current_record_with_staleness(
                bench_agent.AGENT_ID, bench_agent.VERSION, holdout_evals=False
            )
            assert record is not None
            infos = store.agents.list(include_disabled=True, limit=1000).items

            # The overview: every agent with the real record (the same dict for each).
            data = grouped([record_row(a, record) for a in infos], None)

            def overview_page() -> str:
                return render("overview.html", data=data, who=OPERATOR, csrf="0" * 64)

            overview_result = compare(runs, overview_page, lambda: dumps(data))
            svc = cast(Service, type("Svc", (), {"store": store})())
            gather = best_ms(runs, lambda: overview(svc, OPERATOR, None))

            # The eval page: its status, as the page and as the API's JSON.
            view = client.evals.status(info.id)

            def eval_page() -> str:
                return render(
                    "eval.html",
                    view=view,
                    audience="operator",
                    done_share=1.0,
                    who=OPERATOR,
                    csrf="0" * 64,
                )

            eval_result = compare(runs, eval_page, lambda: dumps(view))
            report = build_report(store, info.id, audience="operator")
            report_result = compare(runs, lambda: render_html(report), lambda: render_json(report))
        finally:
            store.close()
    return {
        "agents": len(infos),
        "cells": plan.cells_total,
        "overview": overview_result,
        "overview_store_reads_ms": round(gather, 1),
        "eval_page": eval_result,
        "eval_report": report_result,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=1000)
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--repetitions", type=int, default=2)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = measure(args.agents, args.cases, args.repetitions, args.runs)
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"{result['agents']} agents, a {result['cells']}-cell eval")
    for name in ("overview", "eval_page", "eval_report"):
        r = result[name]
        print(
            f"{name:12} page {r['page_ms']:8.2f} ms  json {r['json_ms']:8.2f} ms  "
            f"ratio {r['ratio']:5.2f}  ({r['page_bytes']} vs {r['json_bytes']} bytes)  "
            f"goal {'met' if r['meets_goal'] else 'NOT met'}"
        )
    print(f"overview store reads (shared by page and JSON): {result['overview_store_reads_ms']} ms")


if __name__ == "__main__":
    main()

"""The console's server-side rendering, as a ratio to the same data as plain JSON.

Each page is timed against exactly the data it shows as JSON (the listing an API
client would be sent), in the same run, interleaved:

- the overview with 1,000 agents (`--agents`), each with a real record (the
  record of the eval below), grouped by capability: `overview.html` vs
  `schema.jsontext.dumps` of its data;
- the eval page of a real 2,000-cell eval (`--cases` × `--repetitions`, the
  eval bench's suite and in-process agent: `bench._support.finished_eval`):
  `eval.html` over the eval's status and its case explorer's first page of
  cells vs dumps of both;
- as a request makes them, store reads included, against the same reads
  dumped as JSON: the case explorer's page of cells (`explorer_page`: the
  first page, the failures, and a text search that matches no cell, so every
  output is read), a cell's page (`explored_cell`) and the list of evals (a
  page of 50: the real eval and 49 more rows);
- the report shown in that page (its frame, `/ui/evals/{eval}/report?view=1`), as
  the gateway serves it: `StoreService.evals.report(form="html")` vs the same
  call with `form="json"` (`GET /v1/evals/{eval}/report`), each
  `build_report` + its renderer; cold (an empty report cache each time and
  nothing stored: the store read, the report built and rendered), cold process
  with the report stored (an empty report cache each time, as in a fresh gateway
  process, and the rendered text in the store's `eval_reports`: its key read,
  the text read back, `records.EvalReportRegistry`) and warm (a done eval's
  report kept in this process, `evals.reports.ReportCache`: its key read from
  the store, the text served); and the renderers alone over one built report.
  Also timed once: pre-rendering the eval's reports into the store
  (`StoreEvals.prerender`, what a gateway's eval worker does after the eval).

Every figure is the best of `--runs`, wall and CPU time (this process). Also
shown: the store reads behind the overview, which the page and a JSON listing
would share.

    .venv/bin/python bench/console/run.py [--json] [--agents 1000] [--runs 5]
        [--postgres ADMIN_URL]

`--postgres`: the store is a throwaway PostgreSQL database made through ADMIN_URL
(as the gateway's processes share one), not a SQLite file.
"""

from __future__ import annotations

import contextlib
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench" / "eval"))

import bench_agent  # noqa: E402
import run as eval_bench  # noqa: E402

from bench._args import bench_parser  # noqa: E402
from bench._support import finished_eval, postgres_url  # noqa: E402
from evals.reports import (  # noqa: E402  # noqa: E402
    CellQuery,
    ReportCache,
    build_report,
    explore,
    explored_cell,
    render_html,
    render_json,
)
from gateway.console._cell_pages import explorer_page  # noqa: E402
from gateway.console._data import grouped, overview, record_row  # noqa: E402
from gateway.console._eval_list import PAGE as EVALS_PAGE  # noqa: E402
from gateway.console._eval_list import STATUS_NOTES, STATUS_WORDS, eval_row  # noqa: E402
from gateway.console._render import render  # noqa: E402
from gateway.service import StoreService  # noqa: E402
from gateway.web import Bearer, Shared  # noqa: E402
from records import EvalFilter  # noqa: E402
from records import eval_id as new_eval_id  # noqa: E402
from records._models import EvalReportRow  # noqa: E402
from schema.jsontext import dumps  # noqa: E402

OPERATOR = Bearer("operator", None)
GOAL_RATIO = 3.0
GOAL_MS = 100.0


def best_ms(runs: int, fn: Callable[[], Any]) -> tuple[float, float]:
    """The best wall and the best CPU milliseconds of `runs` calls."""
    walls, cpus = [], []
    for _ in range(runs):
        began, began_cpu = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - began)
        cpus.append(time.process_time() - began_cpu)
    return min(walls) * 1000, min(cpus) * 1000


def compare(runs: int, page: Callable[[], str], listing: Callable[[], str]) -> dict[str, Any]:
    """The page against its JSON, interleaved: one call of each per round."""
    page()  # warm: templates compiled once per process
    listing()
    rounds = [(best_ms(1, page), best_ms(1, listing)) for _ in range(runs)]
    page_ms = min(r[0][0] for r in rounds)
    page_cpu = min(r[0][1] for r in rounds)
    json_ms = min(r[1][0] for r in rounds)
    json_cpu = min(r[1][1] for r in rounds)
    return {
        "page_ms": round(page_ms, 2),
        "page_cpu_ms": round(page_cpu, 2),
        "json_ms": round(json_ms, 2),
        "json_cpu_ms": round(json_cpu, 2),
        "ratio": round(page_ms / json_ms, 2),
        "page_bytes": len(page()),
        "json_bytes": len(listing()),
        "meets_goal": page_ms / json_ms <= GOAL_RATIO and page_ms <= GOAL_MS,
    }


def measure(
    agents: int, cases: int, repetitions: int, runs: int, postgres: str | None = None
) -> dict[str, Any]:
    with contextlib.ExitStack() as stack:
        url = stack.enter_context(postgres_url(postgres)) if postgres else None
        return _measure(stack.enter_context(finished_eval(cases, repetitions, url)), agents, runs)


def _measure(done: Any, agents: int, runs: int) -> dict[str, Any]:
    store, eval_id = done.store, done.eval_id
    client = StoreService(store, done.home)
    for i in range(agents - 1):
        manifest = eval_bench.manifest("http://127.0.0.1:9/agent")
        manifest["id"] = f"org{i % 20:02d}/agent-{i:04d}"
        store.agents.register(manifest)
    record = store.evals.current_record_with_staleness(
        bench_agent.AGENT_ID, bench_agent.VERSION, holdout_evals=False
    )
    assert record is not None
    infos = store.agents.list(include_disabled=True, limit=1000).items
    for _ in range(EVALS_PAGE - 1):  # a full page of evals beside the real one
        store.evals.create(
            eval_id=new_eval_id(),
            agent_id=bench_agent.AGENT_ID,
            agent_version=bench_agent.VERSION,
            plan={"agent": bench_agent.AGENT_ID, "suites": []},
            plan_digest="0" * 64,
            full_plan=False,
            cells=[],
        )

    # The overview: every agent with the real record (the same one for each).
    data = grouped([record_row(a, record) for a in infos], None)

    def overview_page() -> str:
        return render("overview.html", data=data, live=None, who=OPERATOR, csrf="0" * 64)

    overview_result = compare(runs, overview_page, lambda: dumps(data))
    shared = cast(Shared, type("Svc", (), {"store": store})())
    gather = best_ms(runs, lambda: overview(shared, OPERATOR, None))[0]

    # The eval page: its status and its case explorer's first page of cells, as the page
    # and as the API's JSON.
    view = client.evals.status(eval_id)

    def eval_page(cells: dict[str, Any]) -> str:
        return render(
            "eval.html",
            view=view,
            audience="operator",
            done_share=1.0,
            status_word=STATUS_WORDS[view["status"]],  # as the console's eval page
            status_note=STATUS_NOTES.get(view["status"], ""),
            cells=cells,
            who=OPERATOR,
            csrf="0" * 64,
        )

    first = explorer_page(store, OPERATOR, eval_id, CellQuery(), None)
    eval_result = compare(runs, lambda: eval_page(first), lambda: dumps({**view, "cells": first}))

    # The case explorer with its store read: a page of cells under filters, read and
    # rendered, against the same read written as JSON (what an API of it would send).
    def explorer(query: CellQuery) -> dict[str, Any]:
        result = compare(
            runs,
            lambda: eval_page(explorer_page(store, OPERATOR, eval_id, query, None)),
            lambda: dumps({**view, "cells": explorer_page(store, OPERATOR, eval_id, query, None)}),
        )
        return {"filters": query.params(), **result}

    explorers = {
        "first_page": explorer(CellQuery()),
        "failures": explorer(CellQuery(outcome="failures")),
        # Text found nowhere: every cell's output read and searched (the bounded scan).
        "search_everything": explorer(CellQuery(text="no such text")),
    }
    failed = explore(store, eval_id, CellQuery(outcome="failures"), operator=True)["rows"]
    one = failed[0]["idx"] if failed else 0

    def cell(form: Callable[[dict[str, Any]], str]) -> Callable[[], str]:
        return lambda: form(explored_cell(store, eval_id, one, CellQuery(), operator=True))

    cell_result = compare(
        runs,
        cell(lambda c: render("cell.html", cell=c, query="", who=OPERATOR, csrf="0" * 64)),
        cell(dumps),
    )

    # The list of evals: a page of 50, read (each row's store reads too) and rendered.
    def listing(form: Callable[[list[dict[str, Any]]], str]) -> Callable[[], str]:
        def call() -> str:
            page = store.evals.search(EvalFilter(), cursor=None, limit=EVALS_PAGE)
            return form([eval_row(store, OPERATOR, info) for info in page.items])

        return call

    def evals_html(rows: list[dict[str, Any]]) -> str:
        return render(
            "evals.html",
            rows=rows,
            filters={},
            statuses=list(STATUS_WORDS.items()),
            next_page=None,
            first_page=None,
            refresh_s=None,
            who=OPERATOR,
            csrf="0" * 64,
        )

    list_result = compare(runs, listing(evals_html), listing(dumps))

    # The report in the page's frame, as the gateway serves it.
    # `fresh`: the cache this process would start with (None: keep the one there).
    def served(form: str, fresh: Callable[[], ReportCache] | None) -> Callable[[], str]:
        def call() -> str:
            if fresh is not None:
                client.evals._reports = fresh()
            return client.evals.report(eval_id, audience="operator", form=form)

        return call

    def unstored() -> ReportCache:
        return ReportCache(stored=False)

    cold = compare(runs, served("html", unstored), served("json", unstored))
    began, began_cpu = time.perf_counter(), time.process_time()
    prerendered = client.evals.prerender(eval_id)
    prerender_ms = (time.perf_counter() - began) * 1000
    prerender_cpu_ms = (time.process_time() - began_cpu) * 1000
    assert prerendered == 4, prerendered
    stored = compare(runs, served("html", ReportCache), served("json", ReportCache))
    assert client.evals.reports.renders == 0  # read from the store, never rendered
    with store.read() as session:
        stored_bytes = {
            form: len(session.get(EvalReportRow, (eval_id, "operator", form)).body)
            for form in ("html", "json")
        }
    client.evals._reports = ReportCache()
    warm = compare(runs, served("html", None), served("json", None))
    report = build_report(store, eval_id, audience="operator")
    renderers = compare(runs, lambda: render_html(report), lambda: render_json(report))
    return {
        "agents": len(infos),
        "cells": done.cells,
        "overview": overview_result,
        "overview_store_reads_ms": round(gather, 1),
        "eval_page": eval_result,
        "case_explorer": explorers,
        "cell_page": cell_result,
        "eval_list": list_result,
        "report_cold": cold,
        "report_stored": stored,
        "report_warm": warm,
        "stored_bytes": stored_bytes,
        "prerender_ms": round(prerender_ms, 1),
        "prerender_cpu_ms": round(prerender_cpu_ms, 1),
        "report_renderers": renderers,
    }


def main() -> None:
    parser = bench_parser(__doc__)
    parser.add_argument("--agents", type=int, default=1000)
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--repetitions", type=int, default=2)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--postgres", metavar="ADMIN_URL", default=None)
    args = parser.parse_args()
    result = measure(args.agents, args.cases, args.repetitions, args.runs, args.postgres)
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"{result['agents']} agents, a {result['cells']}-cell eval")
    names = ("overview", "eval_page", "cell_page", "eval_list", "report_cold", "report_stored")
    shown = {name: result[name] for name in (*names, "report_warm", "report_renderers")}
    shown.update({f"explorer {k}": v for k, v in result["case_explorer"].items()})
    for name, r in shown.items():
        print(
            f"{name:26} page {r['page_ms']:8.2f} ms (cpu {r['page_cpu_ms']:8.2f})  "
            f"json {r['json_ms']:8.2f} ms (cpu {r['json_cpu_ms']:8.2f})  "
            f"ratio {r['ratio']:5.2f}  ({r['page_bytes']} vs {r['json_bytes']} bytes)  "
            f"goal {'met' if r['meets_goal'] else 'NOT met'}"
        )
    print(f"overview store reads (shared by page and JSON): {result['overview_store_reads_ms']} ms")
    print(f"stored (zlib) operator report: {result['stored_bytes']} bytes")
    print(
        f"pre-rendering the eval's reports into the store (HTML and JSON, both audiences, "
        f"once): {result['prerender_ms']} ms (cpu {result['prerender_cpu_ms']})"
    )


if __name__ == "__main__":
    main()

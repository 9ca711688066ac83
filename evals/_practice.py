"""`holon test SUITE --endpoint URL`: a practice run, an agent author's run on the public split.

No store, no registration: the agent is described by its endpoint alone, and
runs through the same executor and grading as an eval. Only public cases are
ever run or shown (the holdout is the operator's).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from functools import cached_property
from typing import Any
from xml.etree import ElementTree as ET

from agents import Executor, Manifest, Outcome, manifest_from_dict, printable, run_loop
from evals._cell import (
    CellResult,
    PreparedCase,
    call_limits,
    grade_cell,
    prepare,
    stored_output,
)
from evals._responses import ResponseCache
from evals._stats import nearest_rank, rounded, rounded_ms, wilson
from evals._visible import xml_text
from evals.checks import PdfPool, open_pdf_pool, render_result
from evals.fixtures import FixtureCache
from evals.suites import Case, Suite
from schema import make_validator, quick_validity
from schema.errors import UsageError, checked

Progress = Callable[[int, int, int], None]  # (cells done, cells total, cells passed)

AGENT_UNDER_TEST = "local/agent-under-test"


def practice_agent(endpoint: str, protocol: str | None, capability: str) -> Manifest:
    """A manifest for an unregistered agent, validated like any other (`--endpoint` named)."""
    if protocol is None:
        protocol = "asgi" if endpoint.startswith("asgi:") else "holon-http"
    return manifest_from_dict(
        {
            "schema_version": 1,
            "id": AGENT_UNDER_TEST,
            "version": "0",
            "protocol": protocol,
            "endpoint": endpoint,
            "capabilities": [capability],
        },
        "--endpoint",
    )


def manifest_agent(manifest: Manifest, endpoint: str | None, protocol: str | None) -> Manifest:
    """The author's own manifest, optionally pointed at another endpoint (a local run).

    Its declared limits travel as headers, exactly as on live and eval calls.
    """
    if endpoint is None and protocol is None:
        return manifest
    data = manifest.to_json()
    if endpoint is not None:
        data["endpoint"] = endpoint
        data["protocol"] = protocol or ("asgi" if endpoint.startswith("asgi:") else "holon-http")
    elif protocol is not None:
        data["protocol"] = protocol
    return manifest_from_dict(data, "--manifest")


@dataclass(frozen=True)
class CaseScore:
    case: Case
    cells: tuple[CellResult, ...]

    @property
    def passes(self) -> int:
        return sum(1 for c in self.cells if c.passed)

    @property
    def score(self) -> Fraction:
        return Fraction(self.passes, len(self.cells))


@dataclass(frozen=True)
class PracticeReport:
    suite: Suite
    agent: Manifest
    cases: tuple[CaseScore, ...]
    seconds: float

    @cached_property  # the summary, the verdict and the lines each read it
    def x(self) -> Fraction:
        # One Fraction per number of cells a case has (its repetitions), not one per case:
        # adding a thousand Fractions normalises a thousand times.
        passes: Counter[int] = Counter()
        for case in self.cases:
            passes[len(case.cells)] += case.passes
        return sum((Fraction(p, n) for n, p in passes.items()), Fraction(0))

    @property
    def n(self) -> int:
        return len(self.cases)

    @property
    def rate(self) -> Fraction:
        return self.x / self.n if self.n else Fraction(0)

    @property
    def passed(self) -> bool:
        return self.n > 0 and self.rate >= Fraction(self.suite.threshold)

    @property
    def exit_code(self) -> int:
        return checked(self.passed)

    @property
    def unreachable(self) -> str | None:
        """Why the agent was never reached, when no cell reached it (None otherwise): then
        nothing was graded, and one environment error says so instead of a FAIL a case."""
        cells = list(self._cells())
        if not cells or any(c.outcome.code != "unreachable" for c in cells):
            return None
        return cells[0].outcome.error or "unreachable"

    def _cells(self) -> Iterator[CellResult]:
        for case in self.cases:
            yield from case.cells

    def summary(self) -> dict[str, Any]:
        cells = list(self._cells())
        low, high = wilson(self.x, self.n) if self.n else (Decimal(0), Decimal(0))
        latencies = sorted(c.outcome.latency_ms for c in cells)
        outcomes = Counter(c.outcome.code for c in cells)
        return {
            "cases": self.n,
            "passed": rounded(self.x, 4) if self.x.denominator != 1 else int(self.x),
            "rate": rounded(self.rate),
            "ci95": [rounded(low), rounded(high)],
            "threshold": self.suite.threshold,
            "meets_threshold": self.passed,
            "cells": len(cells),
            "outcomes": dict(sorted(outcomes.items())),
            # Cells graded on a kept answer (`--cache`): the agent was not called for them.
            "cached": sum(1 for c in cells if c.cached),
            # What this run's calls cost: a kept answer was paid for when it was given.
            "cost_usd": str(sum((c.outcome.cost_usd for c in cells if not c.cached), Decimal(0))),
            "latency_ms": {
                "p50": rounded_ms(nearest_rank(latencies, 50)),
                "p95": rounded_ms(nearest_rank(latencies, 95)),
                "max": latencies[-1] if latencies else None,
            },
            "seconds": round(self.seconds, 3),
        }

    def to_json(self) -> dict[str, Any]:
        return {
            "suite": {
                "id": self.suite.id,
                "version": self.suite.version,
                "capability": self.suite.capability,
                "split": "public",
            },
            "agent": {"endpoint": self.agent.endpoint, "protocol": self.agent.protocol},
            "summary": self.summary(),
            "cases": [
                {
                    "id": score.case.id,
                    "tags": list(score.case.tags),
                    # As the suite's case file holds it (fixture references unexpanded).
                    "input": score.case.input,
                    "passed": score.passes == len(score.cells),
                    "score": rounded(score.score),
                    "cells": [_cell_json(cell) for cell in score.cells],
                }
                for score in self.cases
            ],
        }

    def lines(self) -> list[str]:
        out: list[str] = []
        for score in self.cases:
            for cell in score.cells:
                if cell.passed:
                    continue
                out.extend(_failure_lines(cell))
                out.append("")
        s = self.summary()
        low, high = s["ci95"]
        verdict = "PASS" if self.passed else "FAIL"
        out.append(
            f"{self.suite.id} v{self.suite.version} public: "
            f"{s['passed']}/{s['cases']} cases passed ({_pct(s['rate'])}, "
            f"95% CI {_pct(low)}-{_pct(high)}); "
            f"threshold {_pct(self.suite.threshold)}: {verdict}"
        )
        counts = ", ".join(f"{k} {v}" for k, v in s["outcomes"].items())
        cached = f" ({s['cached']} from the cache)" if s["cached"] else ""
        out.append(
            f"outcomes: {counts}{cached}; cost ${s['cost_usd']}; "
            f"latency p50 {s['latency_ms']['p50']} ms, "
            f"p95 {s['latency_ms']['p95']} ms; {s['seconds']} s"
        )
        return out

    def html(self) -> str:
        """The run as one self-contained HTML page (`--html FILE`)."""
        # Imported here: the reports package loads `records` (SQLAlchemy), which
        # a practice run on a suite directory otherwise never needs.
        from evals.reports._practice_html import render_practice_html

        return render_practice_html(self.to_json())

    def junit(self) -> str:
        """JUnit XML for CI systems: one testcase per cell, failures with their detail."""
        cells = list(self._cells())
        failures = sum(1 for c in cells if not c.passed)
        suite = ET.Element(
            "testsuite",
            name=self.suite.id,
            tests=str(len(cells)),
            failures=str(failures),
            errors="0",
            time=f"{self.seconds:.3f}",
        )
        for cell in cells:
            name = (
                cell.case.id if self.suite.repetitions == 1 else f"{cell.case.id}#{cell.repetition}"
            )
            case = ET.SubElement(
                suite,
                "testcase",
                classname=f"{self.suite.id}.public",
                name=xml_text(name),
                time=f"{cell.outcome.latency_ms / 1000:.3f}",
            )
            if not cell.passed:
                lines = _failure_lines(cell)
                failure = ET.SubElement(case, "failure", message=xml_text(lines[0]))
                failure.text = xml_text("\n".join(lines[1:]))
        root = ET.Element("testsuites")
        root.append(suite)
        ET.indent(root)
        return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def _pct(value: Decimal | Fraction) -> str:
    number = Decimal(value.numerator) / value.denominator if isinstance(value, Fraction) else value
    return f"{(number * 100).quantize(Decimal('0.1'))}%"


def _cell_json(cell: CellResult) -> dict[str, Any]:
    out: dict[str, Any] = {
        "repetition": cell.repetition,
        "passed": cell.passed,
        "outcome": cell.outcome.code,
        "latency_ms": round(cell.outcome.latency_ms, 1),
        "cost_usd": str(cell.outcome.cost_usd),  # money is decimal text in every JSON
        "cost_source": cell.outcome.cost_source,
        "cached": cell.cached,
    }
    if cell.outcome.ok:
        # Bounded as an eval cell stores it: a placeholder past 256 KiB.
        out["output"] = stored_output(cell.outcome)
    if cell.outcome.error:
        out["error"] = cell.outcome.error
    if cell.grade is not None:
        out["checks"] = [r.to_json() for r in cell.grade.results]
    return out


def _failure_lines(cell: CellResult) -> list[str]:
    case = cell.case
    tags = f" [{', '.join(case.tags)}]" if case.tags else ""
    where = (
        f" ({case.source.file.rsplit('/', 1)[-1]}:{case.source.line})" if case.source.file else ""
    )
    if cell.cached:
        where += " [cached answer]"
    if cell.grade is None:
        detail = printable(cell.outcome.error or "", 200)
        status = f" (HTTP {cell.outcome.http_status})" if cell.outcome.http_status else ""
        return [f"FAIL {case.id}{tags}{where}: {cell.outcome.code}{status} {detail}".rstrip()]
    out = [f"FAIL {case.id}{tags}{where}"]
    for result in cell.grade.results:
        if not result.passed:
            out.extend("  " + line for line in render_result(result))
    return out


def select_cases(suite: Suite, case_ids: Sequence[str] | None) -> tuple[Case, ...]:
    if not case_ids:
        return suite.public
    known = {c.id: c for c in suite.public}
    missing = [i for i in case_ids if i not in known]
    if missing:
        raise UsageError(
            f"no public case {missing[0]!r} in {suite.id}",
            hint=f"public cases: {', '.join(list(known)[:10])}{', …' if len(known) > 10 else ''}",
        )
    return tuple(known[i] for i in dict.fromkeys(case_ids))


async def _run(
    suite: Suite,
    agent: Manifest,
    prepared: list[PreparedCase],
    *,
    concurrency: int,
    pdf: PdfPool | None,
    progress: Progress | None,
    responses: ResponseCache | None,
) -> list[CellResult]:
    total = len(prepared) * suite.repetitions
    done = passed = 0
    gate = asyncio.Semaphore(concurrency)
    results: list[CellResult] = []
    limits = call_limits(suite)
    async with Executor() as executor:

        async def ask(item: PreparedCase) -> Outcome:
            return await executor.execute(
                agent, suite.capability, item.input, limits, output_schema=suite.output_schema
            )

        async def answer(item: PreparedCase, repetition: int) -> tuple[Outcome, bool]:
            if responses is None:
                return await ask(item), False
            key = responses.key(agent, suite.capability, item.input, repetition)
            # The cache's files are small but a disk may be slow: off the loop,
            # so the cells in flight keep their deadlines.
            kept = await asyncio.to_thread(responses.get, key)
            if kept is not None:
                return kept, True
            outcome = await ask(item)
            await asyncio.to_thread(responses.put, key, outcome)
            return outcome, False

        async def one(item: PreparedCase, repetition: int) -> None:
            nonlocal done, passed
            async with gate:
                outcome, cached = await answer(item, repetition)
                cell = await grade_cell(
                    item, outcome, repetition=repetition, pdf=pdf, cached=cached
                )
            results.append(cell)
            done += 1
            passed += cell.passed
            if progress is not None:
                progress(done, total, passed)

        await asyncio.gather(*(one(item, r) for item in prepared for r in range(suite.repetitions)))
    return results


def practice(
    suite: Suite,
    agent: Manifest,
    *,
    case_ids: Sequence[str] | None = None,
    concurrency: int = 8,
    cache: FixtureCache | None = None,
    progress: Progress | None = None,
    responses: ResponseCache | None = None,
) -> PracticeReport:
    """Run the public split (or the named cases) against `agent`, grade, and summarise."""
    if concurrency < 1:
        raise UsageError("--concurrency must be at least 1")
    cases = select_cases(suite, case_ids)
    started = time.monotonic()
    # The input's checkers, built once for every case (a validator per case was a
    # quarter of a small case's preparation).
    checker, quick = make_validator(suite.input_schema), quick_validity(suite.input_schema)
    prepared = [
        prepare(suite, case, cache, input_validator=checker, input_quick=quick) for case in cases
    ]
    uses_pdf = any(check.uses_pdf for case in cases for check in case.checks)
    with open_pdf_pool() if uses_pdf else contextlib.nullcontext() as pdf:
        cells = run_loop(
            _run(
                suite,
                agent,
                prepared,
                concurrency=concurrency,
                pdf=pdf,
                progress=progress,
                responses=responses,
            )
        )
    by_case: dict[str, list[CellResult]] = {}
    for cell in cells:
        by_case.setdefault(cell.case.id, []).append(cell)
    scores = tuple(
        CaseScore(case, tuple(sorted(by_case[case.id], key=lambda c: c.repetition)))
        for case in cases
    )
    return PracticeReport(suite, agent, scores, time.monotonic() - started)

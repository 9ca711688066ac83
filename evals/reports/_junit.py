"""The report as JUnit XML, for CI systems, rendered from the canonical JSON and nothing else.

One `<testsuite>` a suite. Each case row of the report is a `<testcase>` a
cell (`case#repetition` when a suite repeats): a cell whose checks failed is
a `<failure>` naming the failed checks; a cell whose call did not end `ok`
is an `<error>` (the agent, not the answer: timeout, agent_error, ...), and
so is a cell on which a check raised (`check_error`: the grading, not the answer); a
cell never run (a cancelled eval) is `<skipped>`. Each suite ends with one
testcase for its gate, `score`, failed when the suite does not meet its
threshold, so a CI job fails where `holon eval` exits 1.

The audience is the report's: an author report has public case rows only,
and the holdout appears as the `score` line's rate, as in every other
format. Every text is made visible (`_visible`) and kept within XML 1.0,
which cannot hold most control characters or U+FFFE/U+FFFF even escaped.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any
from xml.etree import ElementTree as ET

from evals._visible import xml_text
from evals.reports._format import imported_text, metric_rows
from evals.reports._policies import policy_lines
from records import CellStatus

__all__ = ["junit_chunks", "render_junit"]

# What one <failure> lists at most: a case with hundreds of failed checks (an
# invoice's line items) stays a readable entry.
MAX_LISTED_CHECKS = 20


def _text(value: Any) -> str:
    return xml_text(str(value))


# Where a suite's testcases go in the document written around them (`junit_chunks`).
_MARK = "holon-testcases"
# A testcase's place: inside a <testsuite> inside <testsuites>, as ET.indent lays it out.
_LEVEL = 2
_INDENT = "  "


def render_junit(report: dict[str, Any]) -> str:
    return "".join(junit_chunks(report))


def junit_chunks(report: dict[str, Any]) -> Iterator[str]:
    """`render_junit`'s text in pieces, a testcase at a time.

    A suite's counts come first in its element, so its cells are gone over
    twice: once to count, once to write. The document around the testcases
    is laid out whole (`ET.indent`) with a mark where each suite's go, and
    each testcase is laid out alone as `ET.indent` would lay it there."""
    imported = imported_text(report.get("imported"))
    name = f"holon eval {report['eval']['id']}" + ("" if imported is None else " (imported)")
    root = ET.Element("testsuites", name=_text(name))
    for suite in report["suites"]:
        element = _suite(suite, repeated=suite["settings"]["repetitions"] > 1)
        _statements(element, suite, report.get("policies"))
        if imported is not None:
            properties = element.find("properties")
            assert properties is not None  # _suite writes it first
            ET.SubElement(properties, "property", name="imported", value=_text(imported))
        root.append(element)
    tests = failures = errors = skipped = 0
    for element in root:
        tests += int(element.get("tests", "0"))
        failures += int(element.get("failures", "0"))
        errors += int(element.get("errors", "0"))
        skipped += int(element.get("skipped", "0"))
    root.set("tests", str(tests))
    root.set("failures", str(failures))
    root.set("errors", str(errors))
    root.set("skipped", str(skipped))
    ET.indent(root, space=_INDENT)
    text = ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"
    # The mark's tail is the indentation before the gate's testcase, which every
    # testcase's tail is too: the mark and its tail give way to the testcases.
    mark = f"<{_MARK} />" + "\n" + _INDENT * _LEVEL
    pieces = text.split(mark)
    assert len(pieces) == len(report["suites"]) + 1  # one mark a suite
    for suite, piece in zip(report["suites"], pieces, strict=False):
        yield piece
        repeated = suite["settings"]["repetitions"] > 1
        for testcase, _, _ in _testcases(suite, repeated):
            ET.indent(testcase, space=_INDENT, level=_LEVEL)
            testcase.tail = "\n" + _INDENT * _LEVEL
            yield ET.tostring(testcase, encoding="unicode")
    yield pieces[-1]


def _testcases(
    suite: dict[str, Any], repeated: bool
) -> Iterator[tuple[ET.Element, str | None, float]]:
    """Each cell's testcase, the JUnit kind it counts as (None: passed) and its seconds."""
    for case in suite["cases"]:
        for cell in case["cells"]:
            name = f"{case['case_id']}#{cell['repetition']}" if repeated else case["case_id"]
            seconds = _seconds(cell["latency_ms"])
            testcase = ET.Element(
                "testcase",
                classname=_text(f"{suite['id']}.{case['split']}"),
                name=_text(name),
                time=f"{seconds:.3f}",
            )
            yield testcase, _cell_result(testcase, cell), seconds


def _suite(suite: dict[str, Any], *, repeated: bool) -> ET.Element:
    """The suite's element, counted, its testcases' place marked (`junit_chunks`)."""
    element = ET.Element("testsuite", name=_text(f"{suite['id']} v{suite['version']}"))
    properties = ET.SubElement(element, "properties")
    ET.SubElement(properties, "property", name="capability", value=_text(suite["capability"]))
    ET.SubElement(
        properties,
        "property",
        name="license",
        value=_text(suite["license"] or "not stated by the suite"),
    )
    counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    seconds = 0.0
    for _, kind, time in _testcases(suite, repeated):
        seconds += time
        counts["tests"] += 1
        if kind is not None:
            counts[kind] += 1
    ET.SubElement(element, _MARK)
    gate = ET.SubElement(element, "testcase", classname=_text(suite["id"]), name="score")
    counts["tests"] += 1
    if not suite["meets_threshold"]:
        counts["failures"] += 1
        message = (
            "no verdict: the eval is incomplete"
            if suite["meets_threshold"] is None
            else f"score {_rate(suite['score'])} is below the threshold "
            f"{suite['settings']['threshold']}"
        )
        ET.SubElement(gate, "failure", message=_text(message)).text = _text(
            _splits(suite["splits"])
        )
    for key, value in counts.items():
        element.set(key, str(value))
    element.set("time", f"{seconds:.3f}")
    return element


def _statements(element: ET.Element, suite: dict[str, Any], policies: Any) -> None:
    """The suite's metrics (with unit and direction) and the policies that judged it, as
    properties: a CI system shows them beside the suite's testcases."""
    properties = element.find("properties")
    assert properties is not None  # _suite writes it first
    for split, check, name, unit, direction, n, mean, ci95, _, _ in metric_rows(suite):
        ET.SubElement(
            properties,
            "property",
            name=_text(f"metric {split} {check} {name}"),
            value=_text(f"mean {mean} over {n} cases, 95% CI {ci95}; {unit}, {direction}"),
        )
    for policy, statement in policy_lines(policies):
        ET.SubElement(properties, "property", name=f"policy {policy}", value=_text(statement))


def _cell_result(testcase: ET.Element, cell: dict[str, Any]) -> str | None:
    """Marks `testcase` with its cell's result; the JUnit kind counted (None: passed)."""
    if cell["status"] != CellStatus.DONE:
        ET.SubElement(testcase, "skipped", message="not run: the eval ended before this cell")
        return "skipped"
    if cell["outcome"] != "ok":
        error = ET.SubElement(testcase, "error", type=_text(cell["outcome"]))
        error.set("message", _text(f"{cell['outcome']}: {cell['error'] or 'no detail'}"))
        return "errors"
    if cell["passed"]:
        return None
    failed = [c for c in cell["checks"] or () if not c["passed"]]
    # A check that raised is an error of the grading, not a failure of the answer.
    raised = [c for c in failed if c["status"] == "error"]
    named = raised or failed
    failure = ET.SubElement(
        testcase,
        "error" if raised else "failure",
        message=_text(", ".join(_name(c) for c in named[:MAX_LISTED_CHECKS]) or "failed"),
    )
    if raised:
        failure.set("type", "check_error")
    lines = [_check_line(c) for c in failed[:MAX_LISTED_CHECKS]]
    if len(failed) > MAX_LISTED_CHECKS:
        lines.append(f"... and {len(failed) - MAX_LISTED_CHECKS} more failed checks")
    failure.text = _text("\n".join(lines))
    return "errors" if raised else "failures"


def _check_line(check: dict[str, Any]) -> str:
    """One failed check: its name, detail, and what was expected and found (as the report
    holds them: long strings already cut)."""
    line = f"{_name(check)}: {check['detail'] or 'failed'}"
    if check["expected"] is not None or check["actual"] is not None:
        line += f" (expected {check['expected']}, actual {check['actual']})"
    return line


def _name(check: dict[str, Any]) -> str:
    # A stored result may have lost its name (the report keeps it as null).
    return "(unnamed check)" if check["name"] is None else str(check["name"])


def _seconds(latency_ms: Any) -> float:
    # A report's numbers are exact decimals (None for a cell never run), and a stored
    # value may be anything: a time that is no finite number counts as none.
    seconds = 0.0 if latency_ms is None else float(latency_ms) / 1000
    return seconds if math.isfinite(seconds) else 0.0


def _rate(value: Any) -> str:
    return "none" if value is None else str(value)


def _splits(splits: dict[str, Any]) -> str:
    parts = []
    for name, split in splits.items():
        if split is None:
            continue
        parts.append(f"{name}: {split.get('passed')}/{split.get('n')} ({_rate(split.get('rate'))})")
    return "; ".join(parts)

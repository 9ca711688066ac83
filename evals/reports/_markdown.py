"""The report as Markdown, rendered from the canonical JSON and nothing else.

Every value is escaped as text (HTML's `&<>` as entities, Markdown's
punctuation with backslashes, newlines folded), so an agent's output can
neither inject markup into a page that renders the Markdown nor break a
table; a character that hides or reorders text (a bidi control, a
zero-width space, NUL: `_visible`) shows as its escape, `\\u202e`, whose
backslash CommonMark keeps. The record is a fenced JSON block whose fence is
longer than any run of backticks inside it, its unsafe characters escaped
the same way.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from evals._visible import visible, visible_runs
from evals.reports._format import (
    AUDIENCE,
    attempt_text,
    cell_payloads,
    check_header,
    check_rows,
    cost_text,
    failed_checks,
    imported_text,
    interval,
    json_text,
    latency_text,
    metric_header,
    metric_rows,
    number,
    outcome_header,
    outcome_rows,
    overview_pairs,
    record_note,
    split_header,
    split_rows,
    split_text,
    suite_pairs,
    tag_header,
    tag_rows,
    threshold_text,
    usage_text,
)
from evals.reports._policies import policy_lines

__all__ = ["fence", "markdown_chunks", "md", "render_markdown", "table", "table_lines"]

_MD_SPECIAL = "\\`*_[]|#~!"


def _plain(text: str) -> str:
    """Text with no unsafe character as inline Markdown that renders as exactly that text."""
    text = html.escape(text, quote=False)
    out = []
    for i, ch in enumerate(text):
        # An underscore inside a word emphasises nothing (CommonMark), so
        # `agent_error` stays greppable; one at a word's edge is escaped.
        inner = ch == "_" and 0 < i < len(text) - 1 and text[i - 1].isalnum()
        inner = inner and text[i + 1].isalnum()
        out.append("\\" + ch if ch in _MD_SPECIAL and not inner else ch)
    # Newlines fold (a table row is one line); `\r` and the other line breaks
    # are unsafe characters, escaped before this.
    return "".join(out).replace("\n", " ")


def md(value: Any) -> str:
    """Any value as inline Markdown text that renders as exactly that text, made visible."""
    text = value if isinstance(value, str) else number(value)
    # An escape run is ASCII backslashes, letters and digits: a backslash
    # before a letter is literal in CommonMark, so it goes in as it is.
    return "".join(piece if escape else _plain(piece) for piece, escape in visible_runs(text))


def table(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> list[str]:
    return list(table_lines(header, rows))


def table_lines(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> Iterator[str]:
    """`table`'s lines, a row at a time."""
    yield "| " + " | ".join(md(h) for h in header) + " |"
    yield "|" + "|".join("---" for _ in header) + "|"
    for row in rows:
        yield "| " + " | ".join(md(cell) for cell in row) + " |"


def fence(text: str, info: str = "") -> list[str]:
    longest = run = 0
    for ch in text:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    marks = "`" * max(3, longest + 1)
    return [marks + info, text, marks]


def _summary(report: dict[str, Any]) -> list[str]:
    return table(["", ""], overview_pairs(report))


def _metric_rows(suite: dict[str, Any]) -> list[str]:
    rows = metric_rows(suite)
    if not rows:
        return []
    intro = (
        "Metrics per check: the case is the unit (its graded cells' mean); unit and "
        "direction as the check's predicate declares them."
    )
    return ["", "#### Check metrics", "", intro, "", *table(list(metric_header), rows)]


def _overfit(suite: dict[str, Any]) -> list[str]:
    o = suite["overfit"]
    lines = [
        f"- verdict: **{md(o['verdict'])}** (delta {md(o['delta'])}, gap {md(o['gap'])}, "
        f"Fisher p {md(o['p_value'])}, Holm-adjusted {md(o['p_holm'])}, "
        f"Newcombe 95% CI {md(interval(o['newcombe_ci95']))})",
        f"- {md(o['detail'])}",
    ]
    if o["advice"]:
        lines.append(f"- {md(o['advice'])}")
    return lines


def _case_row(case: dict[str, Any]) -> tuple[Any, ...]:
    outcomes = ", ".join(number(cell["outcome"]) for cell in case["cells"])
    return (
        case["case_id"],
        case["case_digest"][:12],
        case["split"],
        ", ".join(case["tags"]) or "-",
        case["runs"],
        case["passed"],
        case["score"],
        outcomes,
        ", ".join(failed_checks(case)) or "-",
    )


def _case_rows(cases: Iterable[dict[str, Any]]) -> Iterator[str]:
    header = ["case", "digest", "split", "tags", "runs", "passed", "score", "outcomes"]
    header.append("failed checks")
    return table_lines(header, (_case_row(case) for case in cases))


def _failure_details(cases: Iterable[dict[str, Any]]) -> Iterator[str]:
    for case in cases:
        for cell in case["cells"]:
            if cell["passed"] is not False:
                continue
            yield (
                f"- **{md(case['case_id'])}** ({md(case['split'])}, repetition "
                f"{cell['repetition']}, digest {md(case['case_digest'])}): outcome "
                f"{md(cell['outcome'])}"
                + (f", error: {md(cell['error'])}" if cell["error"] else "")
            )
            if len(cell["attempt_log"]) > 1:  # one attempt: the outcome and error say it all
                yield from (f"  - {md(attempt_text(a))}" for a in cell["attempt_log"])
            yield from (f"  - {label}: {md(text)}" for label, text in cell_payloads(case, cell))
            for check in cell["checks"] or []:
                if check["passed"]:
                    continue
                yield (
                    f"  - check {md(check['name'])} ({md(check['predicate'])} at "
                    f"{md(check['path'])}): {md(check['status'])}; expected "
                    f"{md(check['expected'])}, actual {md(check['actual'])}: "
                    f"{md(check['detail'])}"
                )


def _suite(suite: dict[str, Any], operator: bool) -> Iterator[str]:
    settings = suite["settings"]
    lines = [
        "",
        f"## Suite {md(suite['id'])} v{suite['version']}: {md(suite['title'])}",
        "",
        *(f"- {md(label)}: {md(value)}" for label, value in suite_pairs(suite)),
    ]
    lines += [
        f"- settings: repetitions {settings['repetitions']}, cap per case "
        f"${md(settings['max_cost_usd'])}, timeout {md(settings['timeout_s'])} s, threshold "
        f"{md(settings['threshold'])}, overfit delta {md(settings['overfit_delta'])}",
        f"- score: **{md(suite['score'])}**, " + threshold_text(suite["meets_threshold"]),
        f"- public: {md(split_text(suite['splits']['public']))}",
        f"- holdout: {md(split_text(suite['splits']['holdout']))}",
        "",
        "### Splits",
        "",
        *table(split_header, split_rows(suite)),
        "",
        "### Checks",
        "",
        "Only graded cells (outcome ok) count: graded n of N.",
        "",
        *table(check_header, check_rows(suite)),
        *_metric_rows(suite),
        "",
        "### Tags (public)",
        "",
        *table(tag_header, tag_rows(suite["tags"]["public"])),
    ]
    if "holdout" in suite["tags"]:
        holdout = tag_rows(suite["tags"]["holdout"])
        lines += ["", "### Tags (holdout)", "", *table(tag_header, holdout)]
    lines += [
        "",
        "### Outcomes",
        "",
        *table(outcome_header, outcome_rows(suite)),
        "",
        f"- latency: {md(latency_text(suite['latency_ms']))}",
        f"- grading: {md(latency_text(suite['grading_ms']))}",
        f"- usage: {md(usage_text(suite['usage']))}",
        f"- cost: {md(cost_text(suite['cost']))}",
        "",
        "### Overfit",
        "",
        *_overfit(suite),
        "",
        "### Cases" + ("" if operator else " (public)"),
        "",
    ]
    yield from lines
    # The case rows twice (made anew each time: evals.reports._model.CaseRows).
    yield from _case_rows(suite["cases"])
    details = _failure_details(suite["cases"])
    first = next(details, None)
    if first is not None:
        yield from ("", "#### Failures", "", first)
        yield from details


def render_markdown(report: dict[str, Any]) -> str:
    """The report as one Markdown document (ends with a newline)."""
    return "".join(markdown_chunks(report))


def markdown_chunks(report: dict[str, Any]) -> Iterator[str]:
    """`render_markdown`'s text a line at a time."""
    return (line + "\n" for line in _lines(report))


def _lines(report: dict[str, Any]) -> Iterator[str]:
    agent = report["agent"]
    operator = report["audience"] == "operator"
    lines = [
        f"# Eval report: {md(agent['id'])} {md(agent['version'])}",
        "",
        f"Audience: {md(AUDIENCE[report['audience']])}.",
        "",
    ]
    imported = imported_text(report.get("imported"))
    if imported is not None:
        lines += [f"**{md(imported)}**", ""]
    lines += [
        *_summary(report),
    ]
    if report["warnings"]:
        lines += ["", "## Warnings", ""]
        lines += [
            f"- {md(w['code'])}: {md(w['suite'])}: {md(w['detail'])}" for w in report["warnings"]
        ]
    yield from lines
    for suite in report["suites"]:
        yield from _suite(suite, operator)
    lines = []
    policies = policy_lines(report.get("policies"))
    if policies:
        lines += ["", "## Policies", "", *table(["policy", "rule"], policies)]
    lines += ["", "## Record", ""]
    record = report["record"]
    lines.append(record_note(report))
    if record is not None:
        lines += ["", *fence(visible(json_text(record["value"])), "json")]
    yield from lines

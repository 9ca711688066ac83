"""Plain-text pieces shared by the Markdown and HTML renderers (and comparisons).

They turn values of the canonical JSON into text, never computing a number
anew: a rate is printed as the JSON has it (`0.7800`), so every format shows
the same digits, and any number as `display_number` writes it (bounded, so
10^1000000 is `1E+1000000`, never a megabyte of zeros). Escaping is the
renderers' job: these return raw text (`_visible` makes it visible).
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from typing import Any

from evals.reports._values import bounded, display_number
from schema.jsontext import dumps

__all__ = [
    "AUDIENCE",
    "OUTCOME_ORDER",
    "SPLITS",
    "attempt_text",
    "cell_payloads",
    "check_header",
    "check_rows",
    "failed_checks",
    "outcome_header",
    "outcome_rows",
    "split_header",
    "split_rows",
    "tag_header",
    "tag_rows",
    "cost_text",
    "imported_text",
    "interval",
    "json_text",
    "latency_text",
    "NO_DIRECTION",
    "direction_text",
    "metric_header",
    "metric_rows",
    "number",
    "outcomes_text",
    "percent",
    "sample_text",
    "split_text",
    "suite_pairs",
    "yes_no",
]

# Who a report is for, as its header says it (a report is an author's or an operator's).
AUDIENCE = {
    "author": "author: public cases in full; the holdout as aggregates only",
    "operator": "operator: everything, the holdout's cases included",
}
OUTCOME_ORDER = ("ok", "agent_error", "timeout", "invalid_response", "cost_exceeded", "unreachable")
DASH = "-"


def number(value: Any) -> str:
    """Any value of the report as short text: a dash for None, yes/no, a bounded number."""
    if value is None:
        return DASH
    if isinstance(value, bool):
        return yes_no(value)
    if isinstance(value, int | Decimal | float):
        return display_number(value)
    if isinstance(value, str):
        return value
    return json_text(bounded(value))


def yes_no(value: Any) -> str:
    return "yes" if value else "no"


def percent(rate: Any) -> Decimal:
    """A rate in [0, 1] as a percentage for a bar's width (0 when there is none)."""
    if rate is None:
        return Decimal(0)
    value = Decimal(str(rate)) * 100
    return min(Decimal(100), max(Decimal(0), value)).quantize(Decimal("0.01"))


def interval(value: Any) -> str:
    if not value:
        return DASH
    return f"[{number(value[0])}, {number(value[1])}]"


def sample_text(block: dict[str, Any]) -> str:
    return f"n {block['n']}, missing {block['missing']}"


def split_text(block: dict[str, Any] | None) -> str:
    """`x/n cases, rate r [l, u]` for a rate block."""
    if block is None or block.get("rate") is None:
        return DASH if block is None else f"no case recorded ({block['cases']} planned)"
    return f"{block['passed']}/{block['n']} cases, rate {block['rate']} {interval(block['ci95'])}"


def outcomes_text(block: dict[str, Any]) -> str:
    counts = block["counts"]
    return ", ".join(f"{code} {counts.get(code, 0)}" for code in OUTCOME_ORDER)


def latency_text(block: dict[str, Any]) -> str:
    if block["n"] == 0:
        return f"none recorded ({sample_text(block)})"
    return (
        f"p50 {block['p50']} ms, p95 {block['p95']} ms, max {block['max']} ms "
        f"({sample_text(block)})"
    )


def usage_text(block: dict[str, Any]) -> str:
    if block["reported"] == 0:
        return f"none reported ({block['n']} cells recorded)"
    return (
        f"{block['input_tokens']} input and {block['output_tokens']} output tokens, reported "
        f"by {block['reported']} of {block['n']} recorded cells"
    )


def cost_text(block: dict[str, Any]) -> str:
    sources = block["sources"]
    by = ", ".join(f"{name} {sources[name]}" for name in ("priced", "reported", "none"))
    return f"${block['usd']} ({number(block['source'])}: {by}; {sample_text(block)})"


def attempt_text(attempt: dict[str, Any]) -> str:
    """One attempt of a cell, on one line (Markdown escapes it)."""
    text = (
        f"attempt {number(attempt['number'])} at {attempt['started_at'] or 'unknown'}: "
        f"{attempt['outcome'] or 'unknown'} (HTTP {number(attempt['http_status'])}), "
        f"{number(attempt['latency_ms'])} ms, span {attempt['span_id'] or 'unknown'}"
    )
    return text + (f": {attempt['error']}" if attempt["error"] else "")


def json_text(value: Any) -> str:
    """A value of the report (bounded already) as compact JSON text."""
    return dumps(value)


def threshold_text(meets: bool | None) -> str:
    if meets is None:
        return "no verdict: the eval is incomplete"
    return "meets its threshold" if meets else "below its threshold"


def overview_pairs(report: dict[str, Any]) -> list[tuple[str, Any]]:
    """The report's overview as (label, text) pairs, shared by Markdown and HTML.

    An absent value is None; each renderer shows it its own way.
    """
    ev, agent, summary, settings = (
        report["eval"],
        report["agent"],
        report["summary"],
        report["settings"],
    )
    pairs: list[tuple[str, Any]] = [
        ("eval", ev["id"]),
        ("status", f"{ev['status']} ({'complete' if ev['complete'] else 'incomplete'})"),
        ("started", ev["created_at"]),
        ("finished", ev["finished_at"]),
        ("plan", _plan_text(ev["full_plan"], report.get("imported") is not None)),
    ]
    if "plan_digest" in ev:
        pairs.append(("plan digest", ev["plan_digest"]))
    pairs += [
        ("claimed capabilities", ", ".join(agent["claimed_capabilities"]) or None),
        ("eval score", f"{number(summary['eval_score'])} {interval(summary['eval_score_ci95'])}"),
        ("weakest suite", summary["weakest_suite"]),
        ("unverified capabilities", ", ".join(summary["unverified_capabilities"]) or None),
        (
            "meets thresholds",
            summary["verdict_withheld"]
            if summary["meets_thresholds"] is None
            else yes_no(summary["meets_thresholds"]),
        ),
        (
            "cells",
            f"{summary['cells']['n']} recorded, {summary['cells']['missing']} missing; "
            f"{summary['passed_cells']} passed, {summary['errors']} with a check that raised",
        ),
        ("outcomes", outcomes_text(summary["outcomes"])),
        ("latency", latency_text(summary["latency_ms"])),
        ("grading", latency_text(summary["grading_ms"])),
        ("usage", usage_text(summary["usage"])),
        ("cost", cost_text(summary["cost"])),
        (
            "settings",
            f"concurrency {number(settings['concurrency'])}, infrastructure retries "
            f"{number(settings['infrastructure_retries'])}, pace {settings['pace_s']} s, "
            f"{settings['cells']} cells, worst case ${settings['worst_case_usd']}",
        ),
    ]
    return pairs


def suite_pairs(suite: dict[str, Any]) -> list[tuple[str, Any]]:
    """What a suite of the report is, as (label, value) pairs shared by Markdown and HTML:
    its capability, licence and digests, and its holdout epoch where the report has it
    (an operator's)."""
    pairs: list[tuple[str, Any]] = [
        ("capability", suite["capability"]),
        ("data licence", suite["license"] or "not stated by the suite"),
        ("suite digest", suite["suite_digest"]),
    ]
    pairs += [
        (name.replace("_", " "), value)
        for name, value in (suite["digests"] or {}).items()
        if name != "suite_digest"
    ]
    if "holdout_epoch" in suite:
        pairs.append(("holdout epoch", suite["holdout_epoch"]))
    return pairs


# -- the report's tables, one declaration of each row for Markdown and HTML alike ------

SPLITS = ("public", "holdout")

split_header = (
    "split",
    "cases",
    "scored (n)",
    "missing",
    "passed (x)",
    "rate",
    "95% CI",
    "stability",
    "cells recorded",
    "cells missing",
)


def split_rows(suite: dict[str, Any]) -> list[tuple[Any, ...]]:
    """One row per split: its cases, its sample and what is missing of it, its rate."""
    return [
        (
            name,
            b["cases"],
            b["n"],
            b["missing"],
            b["passed"],
            b["rate"],
            interval(b["ci95"]),
            b["stability"],
            b["cells"]["n"],
            b["cells"]["missing"],
        )
        for name, b in ((n, suite["splits"][n]) for n in SPLITS)
    ]


check_header = ("split", "check", "scope", "critical", "passed", "errors", "graded", "rate")


def check_rows(suite: dict[str, Any]) -> list[tuple[Any, ...]]:
    """One row per (split, check); only graded cells (outcome ok) count."""
    return [
        (
            split,
            row["name"],
            row["scope"],
            yes_no(row["critical"]),
            row["passed"],
            row["errors"],  # the check raised: neither passed nor failed
            f"graded {row['n']} of {row['n'] + row['missing']}",
            row["rate"],
        )
        for split in SPLITS
        for row in suite["checks"].get(split, ())  # an author's report has the public split's
    ]


tag_header = ("tag", "cases", "passed", "rate", "95% CI", "missing")


def tag_rows(rows: Sequence[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """One split's tag slices, a row each."""
    return [
        (r["tag"], r["cases"], r["passed"], r["rate"], interval(r["ci95"]), r["missing"])
        for r in rows
    ]


outcome_header = ("cells", "n", "missing", *OUTCOME_ORDER)


def outcome_rows(suite: dict[str, Any]) -> list[tuple[Any, ...]]:
    """One row per group of cells: how many ended with each outcome."""
    return [
        (name, b["n"], b["missing"], *(b["counts"][c] for c in OUTCOME_ORDER))
        for name, b in suite["outcomes"].items()
    ]


def cell_payloads(case: dict[str, Any], cell: dict[str, Any]) -> list[tuple[str, str]]:
    """A cell's JSON that a report shows, as (label, JSON text) pairs shared by Markdown
    and HTML: the case's input where the report has it, the output of an `ok` cell (a
    `null` one too), and the metadata the agent returned, if any."""
    pairs = []
    if case["input"] is not None:
        pairs.append(("input", json_text(case["input"])))
    if cell["outcome"] == "ok":
        pairs.append(("output", json_text(cell["output"])))
    if cell["metadata"] is not None:
        pairs.append(("metadata", json_text(cell["metadata"])))
    return pairs


def failed_checks(case: dict[str, Any]) -> list[str]:
    """The names of the checks that failed in any of a case's cells, sorted."""
    return sorted(
        {
            check["name"]
            for cell in case["cells"]
            for check in cell["checks"] or []
            if not check["passed"] and check["name"] is not None
        }
    )


# The per-check metrics table (F1, similarity …), shared by Markdown and HTML.
metric_header = (
    "split",
    "check",
    "metric",
    "unit",
    "direction",
    "cases",
    "mean",
    "95% CI",
    "min",
    "max",
)
NO_DIRECTION = "no direction"


def direction_text(direction: Any) -> str:
    """A metric's direction as every format shows it (a measurement has none)."""
    return NO_DIRECTION if direction is None else str(direction)


def metric_rows(suite: dict[str, Any]) -> list[tuple[Any, ...]]:
    """One row per (split, check, metric), in the report's order; empty when no check has one."""
    return [
        (
            split,
            row["name"],
            name,
            m.get("unit") or "",
            direction_text(m.get("direction")),
            m["n"],
            m["mean"],
            interval(m["ci95"]),
            m["min"],
            m["max"],
        )
        for split in SPLITS
        for row in suite["checks"].get(split, ())
        for name, m in row.get("metrics", {}).items()
    ]


def record_note(report: dict[str, Any]) -> str:
    """What the report's record section says of its record, in every format."""
    record = report["record"]
    if record is None:
        withheld = report["summary"].get("verdict_withheld") or ""
        if withheld.startswith("public cases only"):
            return "No record: public cases only, so no verdict."
        return "No record: the eval has not finished."
    if record["written"]:
        return "Written as the agent's record."
    if imported_text(report.get("imported")) is not None:
        return "Computed where the eval ran, not written here (an imported eval)."
    return "Computed, not written (a narrowed eval writes no record)."


def imported_text(imported: dict[str, Any] | None) -> str | None:
    """The label of an imported eval's report or comparison: where it ran, when it came
    here, and what an import proves; None for an eval run on this store."""
    if imported is None:
        return None
    origin = imported.get("origin") or {}
    made = origin.get("generated_by") or {}
    source = origin.get("source")
    return (
        f"Imported {imported.get('imported_at')}: eval {origin.get('eval_id')} run elsewhere, "
        f"reported by holon {made.get('holon')}"
        + (f", from {source}" if source else "")
        + ". Its numbers were recomputed from its cells here; that proves the report "
        "consistent, not that the agent was called. It wrote no record here."
    )


def _plan_text(full: bool, imported: bool) -> str:
    if imported:  # it wrote a record where it ran, if anywhere; never here
        return ("full" if full else "narrowed") + ": imported, no record here"
    return "full: writes the agent record" if full else "narrowed: no record"

"""A comparison as Markdown, rendered from its JSON alone (values escaped as in reports)."""

from __future__ import annotations

from typing import Any

from evals.reports._format import imported_text, interval, number
from evals.reports._markdown import md, table

__all__ = ["render_compare_markdown"]

SPLITS = ("public", "holdout")


def _count(value: int | None) -> str:
    """A count, or "not shown" where an author's view withholds it (docs/integrity.md)."""
    return "not shown" if value is None else str(value)


def _signed(value: Any) -> str:
    if value is None:
        return "-"
    text = str(value)
    return text if text.startswith("-") or not value else "+" + text


def _side(side: dict[str, Any] | None) -> str:
    if side is None:
        return "-"
    return f"v{side['version']}, score {number(side['score'])}"


def _cost(cost: dict[str, Any]) -> str:
    def side(block: dict[str, Any] | None) -> str:
        return "-" if block is None else f"${block['usd']} ({block['source'] or 'none'})"

    delta = (
        f"delta ${cost['usd_delta']}"
        if cost["usd_delta"] is not None
        else f"no delta: {cost['delta_withheld']}"
    )
    return f"base {side(cost['base'])}, candidate {side(cost['candidate'])}; {delta}"


def _latency(latency: dict[str, Any]) -> str:
    def side(block: dict[str, Any] | None) -> str:
        return "-" if block is None else f"p50 {block['p50']} ms, p95 {block['p95']} ms"

    return (
        f"base {side(latency['base'])}; candidate {side(latency['candidate'])}; "
        f"delta p50 {_signed(latency['p50_delta'])} ms, p95 {_signed(latency['p95_delta'])} ms"
    )


def render_compare_markdown(comparison: dict[str, Any]) -> str:
    """The comparison as Markdown, from its JSON alone (values escaped as in reports)."""
    base, cand = comparison["base"], comparison["candidate"]
    gate = comparison["gate"]
    lines = [
        f"# Comparison: {md(base['id'])} against {md(cand['id'])}",
        "",
        f"Audience: {md(comparison['audience'])}. "
        + (
            "Matched: same suite digests, holdout epochs and grading rules."
            if comparison["matched"]
            else "**Unmatched**: the evals do not measure the same thing (see below)."
        ),
        "",
        *table(
            ["", "eval", "agent", "status", "started", "finished"],
            [
                (
                    role,
                    e["id"],
                    f"{e['agent']} {e['agent_version']}",
                    e["status"]
                    + ("" if e["complete"] else " (incomplete)")
                    + ("" if e.get("imported") is None else " (imported)"),
                    e["created_at"],
                    e["finished_at"],
                )
                for role, e in (("base", base), ("candidate", cand))
            ],
        ),
    ]
    for role, e in (("base", base), ("candidate", cand)):
        imported = imported_text(e.get("imported"))
        if imported is not None:
            lines += ["", f"The {role}: {md(imported)}"]
    if comparison["mismatches"]:
        lines += ["", "## Mismatches", ""]
        lines += [f"- {md(m['message'])}" for m in comparison["mismatches"]]
    regressions = gate["critical_regressions"]
    lines += [
        "",
        "## Gate: " + ("passed" if gate["passed"] else "**FAILED**"),
        "",
        f"Rule: {md(gate['rule'])}. Critical cases regressed: public "
        f"{regressions['public']}, holdout {_count(regressions['holdout'])}.",
    ]
    if gate["cases"]:
        lines += [""] + table(
            ["suite", "split", "case", "base", "candidate", "delta"],
            [
                (
                    r["suite"],
                    r["split"],
                    r["case_id"],
                    r["base_score"],
                    r["candidate_score"],
                    _signed(r["delta"]),
                )
                for r in gate["cases"]
            ],
        )
    for suite in comparison["suites"]:
        b, c = suite["base"], suite["candidate"]
        lines += [
            "",
            f"## Suite {md(suite['id'])}",
            "",
            f"- base: {md(_side(b))}",
            f"- candidate: {md(_side(c))}",
            f"- score delta: {md(_signed(suite['score_delta']))}",
            f"- cost: {md(_cost(suite['cost']))}",
            f"- latency: {md(_latency(suite['latency_ms']))}",
            "",
        ]
        rows = []
        for split in SPLITS:
            s = suite["splits"][split]

            def rate_of(block: dict[str, Any] | None) -> str:
                if block is None or block["rate"] is None:
                    return "-"
                return f"{block['passed']}/{block['n']} {block['rate']} {interval(block['ci95'])}"

            rows.append(
                (
                    split,
                    rate_of(s["base"]),
                    rate_of(s["candidate"]),
                    _signed(s["rate_delta"]),
                    "-"
                    if s["paired"] is None
                    else f"{s['paired']['cases']} cases, {s['paired']['cells']} cells",
                    _count(s["improved"]),
                    _count(s["regressed"]),
                    _count(s["unchanged"]),
                )
            )
        lines += table(
            ["split", "base", "candidate", "delta", "paired", "improved", "regressed", "same"],
            rows,
        )
        for change, title in (("regressed", "Regressions"), ("improved", "Improvements")):
            cases = [ch for ch in suite["cases"] if (ch["delta"] < 0) == (change == "regressed")]
            if not cases:
                continue
            lines += ["", f"### {title}", ""]
            lines += table(
                ["case", "split", "critical", "tags", "runs", "base", "candidate", "delta"],
                [
                    (
                        ch["case_id"],
                        ch["split"],
                        "yes" if ch["critical"] else "no",
                        ", ".join(ch["tags"]) or "-",
                        ch["runs"],
                        ch["base"]["score"],
                        ch["candidate"]["score"],
                        _signed(ch["delta"]),
                    )
                    for ch in cases
                ],
            )
        if suite["checks"]:
            lines += ["", "### Checks", "", "Pass rates over graded cells.", ""]
            lines += table(
                ["split", "check", "scope", "base", "candidate", "delta"],
                [
                    (
                        r["split"],
                        r["name"],
                        r["scope"],
                        "-" if r["base"] is None else f"{r['base']['passed']}/{r['base']['n']}",
                        "-"
                        if r["candidate"] is None
                        else f"{r['candidate']['passed']}/{r['candidate']['n']}",
                        _signed(r["delta"]),
                    )
                    for r in suite["checks"]
                ],
            )
        unpaired = suite["unpaired"]
        counted = {role: unpaired[role]["counts"] for role in ("base", "candidate")}
        if any(n for role in counted.values() for n in role.values() if n is not None):
            lines += ["", "### Unpaired cells", ""]
            for role in ("base", "candidate"):
                n = counted[role]
                lines.append(f"- {role}: public {n['public']}, holdout {_count(n['holdout'])}")
                lines += [
                    f"  - {md(u['split'])} {md(u['case_id'])} repetition {u['repetition']} "
                    f"({md(u['status'])}, outcome {md(u['outcome'])})"
                    for u in unpaired[role]["cells"]
                ]
    return "\n".join(lines) + "\n"

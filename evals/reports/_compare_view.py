"""A comparison laid out once, as headings, paragraphs, tables and lists, for every format.

The Markdown and HTML renderings of a comparison show the same rows in the
same order: they are built here, from the comparison's JSON alone, as raw
text (`_format`), and each renderer only escapes and marks them up. A
`Span` is a piece of text, `strong` where the rendering emphasises it (a
failed gate, an unmatched comparison).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from evals.reports._format import direction_text, imported_text, interval, number

__all__ = ["Block", "Heading", "Item", "Items", "Para", "Span", "Table", "compare_blocks"]

SPLITS = ("public", "holdout")
METRIC_HEADER = (
    "split",
    "check",
    "metric",
    "unit",
    "direction",
    "base",
    "candidate",
    "delta",
    "change",
)


@dataclass(frozen=True)
class Span:
    text: str
    strong: bool = False


@dataclass(frozen=True)
class Heading:
    level: int
    spans: tuple[Span, ...]


@dataclass(frozen=True)
class Para:
    spans: tuple[Span, ...]


@dataclass(frozen=True)
class Table:
    header: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]


@dataclass(frozen=True)
class Item:
    text: str
    sub: tuple[str, ...] = field(default_factory=tuple)


@dataclass(frozen=True)
class Items:
    items: tuple[Item, ...]


Block = Heading | Para | Table | Items


def _plain(text: str) -> tuple[Span, ...]:
    return (Span(text),)


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


def _metric_counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{n} {change}" for change, n in counts.items())


def _rate(block: dict[str, Any] | None) -> str:
    if block is None or block["rate"] is None:
        return "-"
    return f"{block['passed']}/{block['n']} {block['rate']} {interval(block['ci95'])}"


def _head(comparison: dict[str, Any]) -> list[Block]:
    base, cand = comparison["base"], comparison["candidate"]
    matched = comparison["matched"]
    audience = f"Audience: {comparison['audience']}. "
    blocks: list[Block] = [
        Heading(1, _plain(f"Comparison: {base['id']} against {cand['id']}")),
        Para(
            (
                Span(audience),
                Span("Matched: same suite digests, holdout epochs and grading rules."),
            )
            if matched
            else (
                Span(audience),
                Span("Unmatched", strong=True),
                Span(": the evals do not measure the same thing (see below)."),
            )
        ),
        Table(
            ("", "eval", "agent", "status", "started", "finished"),
            tuple(
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
            ),
        ),
    ]
    for role, e in (("base", base), ("candidate", cand)):
        imported = imported_text(e.get("imported"))
        if imported is not None:
            blocks.append(Para(_plain(f"The {role}: {imported}")))
    if comparison["mismatches"]:
        blocks += [
            Heading(2, _plain("Mismatches")),
            Items(tuple(Item(m["message"]) for m in comparison["mismatches"])),
        ]
    return blocks


def _gate(gate: dict[str, Any]) -> list[Block]:
    regressions = gate["critical_regressions"]
    blocks: list[Block] = [
        Heading(
            2, (Span("Gate: "), Span("passed") if gate["passed"] else Span("FAILED", strong=True))
        ),
        Para(
            _plain(
                f"Rule: {gate['rule']}. Critical cases regressed: public "
                f"{regressions['public']}, holdout {_count(regressions['holdout'])}."
            )
        ),
    ]
    if gate["cases"]:
        blocks.append(
            Table(
                ("suite", "split", "case", "base", "candidate", "delta"),
                tuple(
                    (
                        r["suite"],
                        r["split"],
                        r["case_id"],
                        r["base_score"],
                        r["candidate_score"],
                        _signed(r["delta"]),
                    )
                    for r in gate["cases"]
                ),
            )
        )
    return blocks


def _suite(suite: dict[str, Any]) -> list[Block]:
    b, c = suite["base"], suite["candidate"]
    blocks: list[Block] = [
        Heading(2, _plain(f"Suite {suite['id']}")),
        Items(
            (
                Item(f"base: {_side(b)}"),
                Item(f"candidate: {_side(c)}"),
                Item(f"score delta: {_signed(suite['score_delta'])}"),
                Item(f"cost: {_cost(suite['cost'])}"),
                Item(f"latency: {_latency(suite['latency_ms'])}"),
                Item(f"check metrics: {_metric_counts(suite['metric_changes'])}"),
            )
        ),
        Table(
            ("split", "base", "candidate", "delta", "paired", "improved", "regressed", "same"),
            tuple(
                (
                    split,
                    _rate(s["base"]),
                    _rate(s["candidate"]),
                    _signed(s["rate_delta"]),
                    "-"
                    if s["paired"] is None
                    else f"{s['paired']['cases']} cases, {s['paired']['cells']} cells",
                    _count(s["improved"]),
                    _count(s["regressed"]),
                    _count(s["unchanged"]),
                )
                for split, s in ((name, suite["splits"][name]) for name in SPLITS)
            ),
        ),
    ]
    for change, title in (("regressed", "Regressions"), ("improved", "Improvements")):
        cases = [ch for ch in suite["cases"] if (ch["delta"] < 0) == (change == "regressed")]
        if not cases:
            continue
        blocks += [
            Heading(3, _plain(title)),
            Table(
                ("case", "split", "critical", "tags", "runs", "base", "candidate", "delta"),
                tuple(
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
                ),
            ),
        ]
    if suite["checks"]:
        blocks += [
            Heading(3, _plain("Checks")),
            Para(_plain("Pass rates over graded cells.")),
            Table(
                ("split", "check", "scope", "base", "candidate", "delta"),
                tuple(
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
                ),
            ),
        ]
    metrics = [
        (r["split"], r["name"], name, m)
        for r in suite["checks"]
        for name, m in r["metrics"].items()
    ]
    if metrics:
        blocks += [
            Heading(3, _plain("Check metrics")),
            Para(
                _plain(
                    "Means over cases; a change counts by the metric's direction "
                    "(maximize: up is better, minimize: down is better)."
                )
            ),
            Table(
                METRIC_HEADER,
                tuple(
                    (
                        split,
                        check,
                        name,
                        m["unit"] or "-",
                        direction_text(m["direction"]),
                        "-" if m["base"] is None else m["base"],
                        "-" if m["candidate"] is None else m["candidate"],
                        _signed(m["delta"]),
                        m["change"] or "-",
                    )
                    for split, check, name, m in metrics
                ),
            ),
        ]
    unpaired = suite["unpaired"]
    counted = {role: unpaired[role]["counts"] for role in ("base", "candidate")}
    if any(n for role in counted.values() for n in role.values() if n is not None):
        blocks += [
            Heading(3, _plain("Unpaired cells")),
            Items(
                tuple(
                    Item(
                        f"{role}: public {counted[role]['public']}, "
                        f"holdout {_count(counted[role]['holdout'])}",
                        tuple(
                            f"{u['split']} {u['case_id']} repetition {u['repetition']} "
                            f"({u['status']}, outcome {u['outcome']})"
                            for u in unpaired[role]["cells"]
                        ),
                    )
                    for role in ("base", "candidate")
                )
            ),
        ]
    return blocks


def compare_blocks(comparison: dict[str, Any]) -> list[Block]:
    """The comparison's layout, from its JSON alone."""
    blocks = _head(comparison) + _gate(comparison["gate"])
    for suite in comparison["suites"]:
        blocks += _suite(suite)
    return blocks

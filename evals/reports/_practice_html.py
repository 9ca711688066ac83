"""`holon test --html FILE`: a practice run as one self-contained page.

Rendered from the run's JSON document (`PracticeReport.to_json`) and nothing
else, with the eval report's page, style sheet, CSP and escaping (`_html`):
the agent under test is the author's own, but its answers are still
untrusted text in a browser.
"""

from __future__ import annotations

from typing import Any

from evals.reports._format import json_text
from evals.reports._html import checks_table, esc, fields_table, page

__all__ = ["render_practice_html"]


def _cell(cell: dict[str, Any]) -> str:
    verdict = "passed" if cell["passed"] else "failed"
    cached = ", a cached answer" if cell["cached"] else ""
    parts = [
        f"<details{' open' if not cell['passed'] else ''}><summary>repetition "
        f'{esc(cell["repetition"])}: <span class="{"pass" if cell["passed"] else "fail"}">'
        f"{esc(verdict)}</span>, outcome {esc(cell['outcome'])}, {esc(cell['latency_ms'])} ms, "
        f"${esc(cell['cost_usd'])} ({esc(cell['cost_source'])}){esc(cached)}</summary>"
    ]
    if cell.get("error"):
        parts.append(fields_table([("error", cell["error"])]))
    if cell["outcome"] == "ok":
        parts.append(f"<p>output</p><pre>{esc(json_text(cell.get('output')))}</pre>")
    if cell.get("checks"):
        parts.append(checks_table(cell["checks"]))
    parts.append("</details>")
    return "".join(parts)


def _case(case: dict[str, Any]) -> str:
    klass = "pass" if case["passed"] else "fail"
    return (
        f"<tr><td>{esc(case['id'])}</td><td>{esc(', '.join(case['tags']) or None)}</td>"
        f'<td class="num {klass}">{esc("pass" if case["passed"] else "fail")}</td>'
        f'<td class="num">{esc(case["score"])}</td>'
        f"<td><details><summary>input</summary><pre>{esc(json_text(case.get('input')))}"
        f"</pre></details>{''.join(_cell(cell) for cell in case['cells'])}</td></tr>"
    )


def render_practice_html(run: dict[str, Any]) -> str:
    suite, agent, summary = run["suite"], run["agent"], run["summary"]
    title = f"holon test: {suite['id']} v{suite['version']} ({suite['split']})"
    low, high = summary["ci95"]
    pairs: list[tuple[str, Any]] = [
        ("suite", f"{suite['id']} v{suite['version']} ({suite['capability']})"),
        ("split", suite["split"]),
        ("agent", f"{agent['endpoint']} ({agent['protocol']})"),
        ("cases passed", f"{summary['passed']}/{summary['cases']}"),
        ("pass rate", f"{summary['rate']} (95% CI {low}–{high})"),
        ("threshold", summary["threshold"]),
        ("meets threshold", "yes" if summary["meets_threshold"] else "no"),
        ("cells", summary["cells"]),
        ("outcomes", ", ".join(f"{k} {v}" for k, v in summary["outcomes"].items()) or None),
        ("cached answers", summary["cached"]),
        ("cost", f"${summary['cost_usd']}"),
        (
            "latency p50 / p95 / max (ms)",
            " / ".join(str(summary["latency_ms"][k]) for k in ("p50", "p95", "max")),
        ),
        ("seconds", summary["seconds"]),
    ]
    failing = [case for case in run["cases"] if not case["passed"]]
    passing = [case for case in run["cases"] if case["passed"]]
    head = "".join(f"<th>{h}</th>" for h in ("case", "tags", "verdict", "score", "input, runs"))

    def table(cases: list[dict[str, Any]]) -> str:
        rows = "".join(_case(case) for case in cases)
        return f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"

    body = [
        f"<header><h1>{esc(title)}</h1>",
        '<p class="muted">Public cases only: a practice run never sees the holdout.</p></header>',
        '<section id="summary"><h2>Summary</h2>',
        fields_table(pairs),
        "</section>",
        f'<section id="failing"><h2>Failing cases ({len(failing)})</h2>',
        table(failing) if failing else "<p>None.</p>",
        "</section>",
        f'<section id="passing"><h2>Passing cases ({len(passing)})</h2>',
        table(passing) if passing else "<p>None.</p>",
        "</section>",
    ]
    return page(title, body)

"""The report as one self-contained HTML page, rendered from the canonical JSON.

Agents are untrusted (docs/evals.md, "Reports"): every value goes through `esc`
(`html.escape`, quotes included) on its way into the page, or `attr` into an
attribute, and markup comes only from the constants here. A character that
hides or reorders text (a bidi control, a zero-width space, NUL:
`_visible`) shows as its escape, `\\u202e`, styled as one in the page, so
neither an override nor an invisible character reaches the reader.

No script, no external asset: one inline style sheet, and a
Content-Security-Policy that forbids scripts and fetches anyway, so even a
value that slipped its escaping could not run or call out. Each suite has a
pass/fail bar per split, drawn with CSS widths.
"""

from __future__ import annotations

import functools
import html
import re  # noqa: TID251  (a fixed class, no author pattern: as evals._visible)
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from evals._visible import UNSAFE, UNSAFE_CLASS, visible, visible_runs
from evals.reports._format import (
    AUDIENCE,
    SPLITS,
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
    percent,
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

__all__ = [
    "attr",
    "checks_table",
    "esc",
    "fields_table",
    "html_chunks",
    "page",
    "page_chunks",
    "render_html",
    "table_html",
]

# What `esc` changes: an unsafe character (`_visible`) or one `html.escape` replaces.
NEEDS_ESCAPE = re.compile(f"[{UNSAFE_CLASS}&<>\"']")

CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; form-action 'none'"

STYLE = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:2rem auto;
max-width:72rem;padding:0 1rem;color:#1d1f23;background:#fff}
h1{font-size:1.6rem;margin-bottom:.2rem}h2{margin-top:2.4rem;border-bottom:1px solid #ccd;
padding-bottom:.2rem}h3{margin-top:1.6rem}
table{border-collapse:collapse;margin:.6rem 0;font-size:13px}
th,td{border:1px solid #d5d8de;padding:.25rem .5rem;text-align:left;vertical-align:top}
th{background:#f2f4f7}td.num{text-align:right;font-variant-numeric:tabular-nums}
code,pre{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12px}
pre{background:#f6f8fa;padding:.6rem;overflow-x:auto;white-space:pre-wrap;word-break:break-all}
.muted{color:#5b616b}.pass{color:#156a2d}.fail{color:#a4161a}
.bar{display:flex;width:28rem;max-width:100%;height:1.1rem;border-radius:3px;overflow:hidden;
background:#e4e7eb;margin:.15rem 0}
.bar .passed{background:#2f9e44}.bar .failed{background:#e03131}
.bars td{border:none;padding:.1rem .5rem .1rem 0}
.verdict-warn{color:#a4161a;font-weight:600}.verdict-inconclusive{color:#9c5b00;font-weight:600}
details{margin:.2rem 0}summary{cursor:pointer}
.esc{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.9em;
color:#a4161a;background:#fff0f0;border-radius:2px;padding:0 1px}
"""


def esc(value: Any) -> str:
    """Any value as HTML text: `None` as a dash, everything escaped, quotes included.

    Unsafe characters become their escapes in a `<span class="esc">`, one
    span per run of them (a page of bidi controls grows by about six
    characters each, not thirty).
    """
    # A str subclass (a StrEnum) as the plain str of its characters, as a slice would be.
    text = str.__str__(value) if isinstance(value, str) else number(value)
    # A 2,000-cell report escapes 125,000 values, 5,000 of them distinct ("pass",
    # "equals", a path): short ones are remembered (a few hundred KB at most).
    if len(text) <= MEMO_CHARS:
        return _esc_short(text)
    return _esc_text(text)


MEMO_CHARS = 64


@functools.lru_cache(maxsize=8192)
def _esc_short(text: str) -> str:
    return _esc_text(text)


def _esc_text(text: str) -> str:
    # Nearly every value is plain: one search for anything to escape, then
    # `html.escape` alone when nothing is unsafe (the same text).
    if NEEDS_ESCAPE.search(text) is None:
        return text
    if UNSAFE.search(text) is None:
        return html.escape(text, quote=True)
    return "".join(
        f'<span class="esc">{piece}</span>' if escape else html.escape(piece, quote=True)
        for piece, escape in visible_runs(text)
    )


def attr(value: Any) -> str:
    """Any value as an attribute's text (or a title's): escapes as plain text, no markup."""
    text = value if isinstance(value, str) else number(value)
    return html.escape(visible(text), quote=True)


def table_html(
    header: Sequence[str], rows: Iterable[Sequence[Any]], numeric: Sequence[int] = ()
) -> str:
    head = "".join(f"<th>{esc(h)}</th>" for h in header)
    body = []
    for row in rows:
        cells = "".join(
            f'<td class="num">{esc(v)}</td>' if i in numeric else f"<td>{esc(v)}</td>"
            for i, v in enumerate(row)
        )
        body.append(f"<tr>{cells}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def fields_table(pairs: Sequence[tuple[str, Any]]) -> str:
    rows = "".join(f"<tr><th>{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in pairs)
    return f"<table><tbody>{rows}</tbody></table>"


def _bar(suite_id: str, split: str, block: dict[str, Any]) -> str:
    """A pass/fail bar: passed share green, the rest of the scored cases red."""
    scored = block["rate"] is not None
    passed = percent(block["rate"])
    failed = (100 - passed) if scored else 0
    label = split_text(block)
    return (
        f'<tr><td>{esc(split)}</td><td><div class="bar" role="img" '
        f'data-suite="{attr(suite_id)}" data-split="{attr(split)}" aria-label="{attr(label)}">'
        f'<div class="passed" style="width:{passed}%"></div>'
        f'<div class="failed" style="width:{failed}%"></div></div></td>'
        f"<td>{esc(label)}</td></tr>"
    )


def _summary(report: dict[str, Any]) -> str:
    return fields_table(overview_pairs(report))


def checks_table(checks: Sequence[dict[str, Any]]) -> str:
    rows = "".join(
        f'<tr><td class="{"pass" if c["passed"] else "fail"}">{esc(c["status"])}</td>'
        f"<td>{esc(c['name'])}</td><td>{esc(c['predicate'])}</td><td><code>{esc(c['path'])}"
        f"</code></td><td><code>{esc(c['expected'])}</code></td><td><code>{esc(c['actual'])}"
        f"</code></td><td>{esc(c['detail'])}</td></tr>"
        for c in checks
    )
    head = "".join(
        f"<th>{h}</th>"
        for h in ("status", "check", "predicate", "path", "expected", "actual", "detail")
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"


def attempts_table(attempts: Sequence[dict[str, Any]]) -> str:
    """Each try at reaching the agent: the same request id, a span id of its own."""
    keys = ("number", "started_at", "outcome", "http_status", "latency_ms", "span_id", "error")
    rows = "".join(
        "<tr>" + "".join(f"<td>{esc(a[k])}</td>" for k in keys) + "</tr>" for a in attempts
    )
    head = "".join(
        f"<th>{h}</th>" for h in ("attempt", "started", "outcome", "HTTP", "ms", "span id", "error")
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"


def _cell(case: dict[str, Any], cell: dict[str, Any]) -> str:
    verdict = "passed" if cell["passed"] else "failed" if cell["passed"] is False else "pending"
    parts = [
        f"<details><summary>repetition {esc(cell['repetition'])}: "
        f'<span class="{"pass" if cell["passed"] else "fail"}">{esc(verdict)}</span>, outcome '
        f"{esc(cell['outcome'])}, {esc(cell['latency_ms'])} ms, ${esc(cell['cost_usd'])} "
        f"({esc(cell['cost_source'])}), {esc(cell['attempts'])} attempt(s)</summary>",
        fields_table(
            [
                ("case digest", case["case_digest"]),
                ("request id", cell["request_id"]),
                ("HTTP status", cell["http_status"]),
                ("error", cell["error"]),
            ]
        ),
    ]
    if cell["attempt_log"]:
        parts.append(attempts_table(cell["attempt_log"]))
    parts += [f"<p>{label}</p><pre>{esc(text)}</pre>" for label, text in cell_payloads(case, cell)]
    if cell["checks"]:
        parts.append(checks_table(cell["checks"]))
    parts.append("</details>")
    return "".join(parts)


def _cases(cases: Iterable[dict[str, Any]]) -> Iterator[str]:
    """The case table, a row (a case and its cells) at a time."""
    head = "".join(
        f"<th>{h}</th>"
        for h in ("case", "split", "tags", "passed", "score", "failed checks", "runs")
    )
    yield f"<table><thead><tr>{head}</tr></thead><tbody>"
    for case in cases:
        failed = failed_checks(case)
        klass = "pass" if case["n"] and case["passed"] == case["n"] else "fail"
        yield (
            f"<tr><td>{esc(case['case_id'])}</td><td>{esc(case['split'])}</td>"
            f"<td>{esc(', '.join(case['tags']) or None)}</td>"
            f'<td class="num {klass}">{esc(case["passed"])}/{esc(case["n"])}</td>'
            f'<td class="num">{esc(case["score"])}</td>'
            f"<td>{esc(', '.join(failed) or None)}</td>"
            f"<td>{''.join(_cell(case, cell) for cell in case['cells'])}</td></tr>"
        )
    yield "</tbody></table>"


def _suite(suite: dict[str, Any], operator: bool) -> Iterator[str]:
    sid = suite["id"]
    settings = suite["settings"]
    pairs = suite_pairs(suite)
    pairs += [
        (
            "settings",
            f"repetitions {settings['repetitions']}, cap per case ${settings['max_cost_usd']}, "
            f"timeout {settings['timeout_s']} s, threshold {settings['threshold']}, "
            f"overfit delta {settings['overfit_delta']}",
        ),
        (
            "score",
            f"{number(suite['score'])}: " + threshold_text(suite["meets_threshold"]),
        ),
        ("latency", latency_text(suite["latency_ms"])),
        ("grading", latency_text(suite["grading_ms"])),
        ("usage", usage_text(suite["usage"])),
        ("cost", cost_text(suite["cost"])),
    ]
    splits = suite["splits"]
    bars = "".join(_bar(sid, name, splits[name]) for name in ("public", "holdout"))
    o = suite["overfit"]
    parts = [
        f'<section class="suite" id="suite-{attr(sid)}">',
        f"<h2>Suite {esc(sid)} v{esc(suite['version'])}: {esc(suite['title'])}</h2>",
        f'<table class="bars"><tbody>{bars}</tbody></table>',
        fields_table(pairs),
        "<h3>Splits</h3>",
        table_html(split_header, split_rows(suite), numeric=(1, 2, 3, 4, 5, 7, 8, 9)),
        "<h3>Checks</h3>",
        '<p class="muted">Only graded cells (outcome ok) count: graded n of N.</p>',
        table_html(check_header, check_rows(suite), numeric=(4, 5, 7)),
    ]
    metrics = metric_rows(suite)
    if metrics:
        parts += [
            "<h4>Check metrics</h4>",
            '<p class="muted">The case is the unit (its graded cells\' mean); unit and '
            "direction as the check's predicate declares them.</p>",
            table_html(metric_header, metrics, numeric=(5, 6, 8, 9)),
        ]
    for split in SPLITS:
        if split in suite["tags"]:
            parts += [
                f"<h3>Tags ({esc(split)})</h3>",
                table_html(tag_header, tag_rows(suite["tags"][split]), numeric=(1, 2, 3, 5)),
            ]
    parts += [
        "<h3>Outcomes</h3>",
        table_html(outcome_header, outcome_rows(suite), numeric=range(1, 9)),
        "<h3>Overfit</h3>",
        f'<p>verdict: <span class="verdict-{attr(o["verdict"])}">{esc(o["verdict"])}</span> '
        f"(delta {esc(o['delta'])}, gap {esc(o['gap'])}, Fisher p {esc(o['p_value'])}, "
        f"Holm-adjusted {esc(o['p_holm'])}, Newcombe 95% CI {esc(interval(o['newcombe_ci95']))})"
        "</p>",
        f"<p>{esc(o['detail'])}</p>",
    ]
    if o["advice"]:
        parts.append(f"<p>{esc(o['advice'])}</p>")
    parts.append(f"<h3>Cases{'' if operator else ' (public)'}</h3>")
    yield "".join(parts)
    yield from _cases(suite["cases"])
    yield "</section>"


def render_html(report: dict[str, Any]) -> str:
    """The report as one HTML document (ends with a newline)."""
    return "".join(html_chunks(report))


def html_chunks(report: dict[str, Any]) -> Iterator[str]:
    """`render_html`'s text in pieces, a suite's case table a case at a time."""
    agent = report["agent"]
    operator = report["audience"] == "operator"
    title = f"Eval report: {agent['id']} {agent['version']} ({report['eval']['id']})"
    imported = imported_text(report.get("imported"))
    if imported is not None:
        title += " (imported)"
    audience = AUDIENCE["operator" if operator else "author"]
    parts: list[str | Iterable[str]] = [
        f"<header><h1>Eval report: {esc(agent['id'])} {esc(agent['version'])}</h1>",
        f'<p class="muted">Audience: {esc(audience)}.</p>',
        "" if imported is None else f'<p class="imported"><strong>{esc(imported)}</strong></p>',
        "</header>",
        '<section id="summary"><h2>Summary</h2>',
        _summary(report),
    ]
    if report["warnings"]:
        parts.append("<h3>Warnings</h3><ul>")
        parts += [
            f"<li>{esc(w['code'])}: {esc(w['suite'])}: {esc(w['detail'])}</li>"
            for w in report["warnings"]
        ]
        parts.append("</ul>")
    parts.append("</section>")
    parts += [_suite(suite, operator) for suite in report["suites"]]
    policies = policy_lines(report.get("policies"))
    if policies:
        parts += ['<section id="policies"><h2>Policies</h2>', fields_table(policies), "</section>"]
    parts.append('<section id="record"><h2>Record</h2>')
    record = report["record"]
    parts.append(f"<p>{esc(record_note(report))}</p>")
    if record is not None:
        parts.append(f"<pre>{esc(json_text(record['value']))}</pre>")
    parts.append("</section>")
    return page_chunks(title, parts)


def page(title: str, body: Sequence[str]) -> str:
    """One self-contained HTML document (ends with a newline): the style sheet, the CSP, `body`."""
    return "".join(page_chunks(title, body))


def page_chunks(title: str, body: Iterable[str | Iterable[str]]) -> Iterator[str]:
    """`page`'s text in pieces: a line for each part of `body`, a part given as pieces
    (an iterable of text) written as they come."""
    head = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{attr(CSP)}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{attr(title)}</title><style>{STYLE}</style></head><body>",
    ]
    yield "\n".join(head) + "\n"
    for part in body:
        if isinstance(part, str):
            yield part
        else:
            yield from part
        yield "\n"
    yield "</body></html>\n"

"""The case explorer's rows as HTML, made in Python: the one place the console writes
markup outside a template.

The eval's page shows 100 cells, each row nine values; written by the template, every
value is a Jinja output with its own escape and filter call, and those calls were most
of the page's time (docs/performance.md, "Console"). Here each row is one string: every
value escaped by markupsafe's `escape`, the very function autoescape applies, after
`show` made it visible and bounded as the template's filter does. Nothing is trusted
as markup but these strings (tests/gateway/console/test_rows.py holds them byte for
byte to the template they replace, hostile values included).
"""

from __future__ import annotations

from typing import Any

from markupsafe import Markup, escape

from gateway.console._render import show

__all__ = ["explorer_rows"]

# The status's class on its cell (pass: ok, fail: warn, error: error).
STATUS_CLASS = {"pass": "ok", "fail": "warn", "error": "error"}
NONE = "—"


def _number(value: Any) -> Markup:
    return escape(NONE if value is None else value)


def explorer_rows(rows: list[dict[str, Any]], base_path: str, query: str) -> Markup:
    """The explorer's table rows: each cell's index (a link to its page under `query`),
    suite, case id, split, repetition, status (and a call's outcome other than ok),
    latency, cost and the names of its failed checks."""
    link = escape(base_path) + Markup("/cells/")
    suffix = escape("?" + query) if query else Markup("")
    out = []
    for c in rows:
        idx = escape(c["idx"])
        outcome = c["outcome"]
        status = escape(c["status"])
        if outcome and outcome != "ok":
            status += Markup(" (") + escape(show(outcome, 40)) + Markup(")")
        failed = c["failed"]
        checks = escape(", ".join(show(f, 80) for f in failed) if failed else NONE)
        out.append(
            f'<tr><td><a href="{link}{idx}{suffix}">{idx}</a></td>\n'
            f"<td>{escape(show(c['suite'], 63))}</td><td>{escape(show(c['case_id']))}</td>"
            f"<td>{escape(c['split'])}</td><td>{escape(c['repetition'])}</td>\n"
            f'<td class="{STATUS_CLASS.get(c["status"], "")}">{status}</td>\n'
            f"<td>{_number(c['latency_ms'])}</td><td>{_number(c['cost_usd'])}</td>\n"
            f"<td>{checks}</td></tr>\n"
        )
    return Markup("".join(out))

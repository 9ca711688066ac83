"""The case explorer's rows written in Python (gateway/console/_rows.py) are the rows the
template wrote, byte for byte, whatever the values hold: markup, quotes, ampersands,
invisible characters, values past their bound, missing numbers, unknown statuses."""

from __future__ import annotations

from typing import Any

from gateway.console._render import environment
from gateway.console._rows import explorer_rows

# The template's own rows, as _explorer.html wrote them before they moved to Python.
TEMPLATE = """\
{% set css = {'pass': 'ok', 'fail': 'warn', 'error': 'error'} %}
{% set suffix = ("?" ~ query) if query else "" %}
{% for c in rows %}
<tr><td><a href="{{ base_path }}/cells/{{ c['idx'] }}{{ suffix }}">{{ c['idx'] }}</a></td>
<td>{{ c['suite'] | show(63) }}</td><td>{{ c['case_id'] | show }}</td><td>{{ c['split'] }}</td><td>{{ c['repetition'] }}</td>
<td class="{{ css.get(c['status'], '') }}">{{ c['status'] }}{% if c['outcome'] and c['outcome'] != "ok" %} ({{ c['outcome'] | show(40) }}){% endif %}</td>
<td>{{ "—" if c['latency_ms'] is none else c['latency_ms'] }}</td><td>{{ "—" if c['cost_usd'] is none else c['cost_usd'] }}</td>
<td>{{ c['failed'] | map("show", 80) | join(", ") if c['failed'] else "—" }}</td></tr>
{% endfor %}
"""  # noqa: E501  (the template's lines as they were)

HOSTILE = "<script>alert(\"x\")</script> & 'quoted' \u202edesrever\u200b \x00"


def _row(idx: int, **changes: Any) -> dict[str, Any]:
    row = {
        "idx": idx,
        "suite": "tiny",
        "case_id": "p1",
        "split": "public",
        "repetition": 0,
        "status": "pass",
        "outcome": "ok",
        "latency_ms": 12,
        "cost_usd": "0.001",
        "failed": [],
    }
    return {**row, **changes}


ROWS = [
    _row(0),
    _row(1, status="fail", failed=["label", HOSTILE, "x" * 300], latency_ms=12.5),
    _row(2, status="error", outcome="timeout", latency_ms=None, cost_usd=None),
    _row(3, status="pending", outcome=None, failed=None),
    _row(4, status="running", outcome=HOSTILE * 5),
    _row(5, suite=HOSTILE * 10, case_id=HOSTILE, split="<b>", repetition="<i>"),
    _row(6, status="<odd>", outcome="ok"),
]


def _template(rows: list[dict[str, Any]], base_path: str, query: str) -> str:
    return environment().from_string(TEMPLATE).render(rows=rows, base_path=base_path, query=query)


def test_the_rows_are_the_templates_byte_for_byte() -> None:
    for base_path, query in [
        ("/ui/evals/ev_01", ""),
        ("/ui/evals/ev_01", "outcome=failures&text=%3Cb%3E"),
        ('/ui/evals/"><x>&', "tag=<a>&check='"),
    ]:
        for rows in (ROWS, ROWS[:1], []):
            assert str(explorer_rows(rows, base_path, query)) == _template(rows, base_path, query)


def test_nothing_hostile_comes_out_as_markup() -> None:
    written = str(explorer_rows(ROWS, "/ui/evals/ev_01", "a=<b>"))
    assert "<script>" not in written and "<b>" not in written and "<i>" not in written
    assert "&lt;script&gt;" in written and "\\u202e" in written and "\u202e" not in written
    assert "more characters)" in written

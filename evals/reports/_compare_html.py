"""A comparison as one self-contained HTML page, from its layout (`_compare_view`).

The eval report's page, style sheet, CSP and escaping (`_html`): every value
goes through `esc`, markup comes only from here.
"""

from __future__ import annotations

from typing import Any

from evals.reports._compare_view import Heading, Items, Para, Span, Table, compare_blocks
from evals.reports._html import esc, page, table_html

__all__ = ["render_compare_html"]


def _spans(spans: tuple[Span, ...]) -> str:
    return "".join(
        f'<strong class="fail">{esc(s.text)}</strong>' if s.strong else esc(s.text) for s in spans
    )


def render_compare_html(comparison: dict[str, Any]) -> str:
    """The comparison as one HTML document (ends with a newline)."""
    base, cand = comparison["base"], comparison["candidate"]
    parts: list[str] = []
    for block in compare_blocks(comparison):
        if isinstance(block, Heading):
            level = min(block.level, 4)
            parts.append(f"<h{level}>{_spans(block.spans)}</h{level}>")
        elif isinstance(block, Para):
            parts.append(f"<p>{_spans(block.spans)}</p>")
        elif isinstance(block, Table):
            parts.append(table_html(block.header, block.rows))
        elif isinstance(block, Items):
            items = "".join(
                f"<li>{esc(item.text)}"
                + (
                    "<ul>" + "".join(f"<li>{esc(s)}</li>" for s in item.sub) + "</ul>"
                    if item.sub
                    else ""
                )
                + "</li>"
                for item in block.items
            )
            parts.append(f"<ul>{items}</ul>")
    return page(f"Comparison: {base['id']} against {cand['id']}", parts)

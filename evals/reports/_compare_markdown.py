"""A comparison as Markdown, rendered from its layout (`_compare_view`), values escaped."""

from __future__ import annotations

from typing import Any

from evals.reports._compare_view import Heading, Items, Para, Span, Table, compare_blocks
from evals.reports._markdown import md, table

__all__ = ["render_compare_markdown"]


def _spans(spans: tuple[Span, ...]) -> str:
    return "".join(f"**{md(s.text)}**" if s.strong else md(s.text) for s in spans)


def render_compare_markdown(comparison: dict[str, Any]) -> str:
    """The comparison as Markdown, from its JSON alone (values escaped as in reports)."""
    lines: list[str] = []
    for block in compare_blocks(comparison):
        if lines:
            lines.append("")
        if isinstance(block, Heading):
            lines.append("#" * block.level + " " + _spans(block.spans))
        elif isinstance(block, Para):
            lines.append(_spans(block.spans))
        elif isinstance(block, Table):
            lines += table(block.header, block.rows)
        elif isinstance(block, Items):
            for item in block.items:
                lines.append(f"- {md(item.text)}")
                lines += [f"  - {md(sub)}" for sub in item.sub]
    return "\n".join(lines) + "\n"

"""Each format a comparison renders to, with the media type it is served as."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from evals.reports._compare_html import render_compare_html
from evals.reports._compare_markdown import render_compare_markdown
from evals.reports._values import render_json

__all__ = ["COMPARE_FORMATS", "render_comparison"]

COMPARE_FORMATS = {"json": "application/json", "md": "text/markdown", "html": "text/html"}

_RENDERERS: dict[str, Callable[[dict[str, Any]], str]] = {
    "json": render_json,
    "md": render_compare_markdown,
    "html": render_compare_html,
}


def render_comparison(comparison: dict[str, Any], form: str) -> str:
    """The comparison in `form` (one of COMPARE_FORMATS)."""
    return _RENDERERS[form](comparison)

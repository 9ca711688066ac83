"""Each report format's renderer, by the format's name in the API and the CLI."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from evals.reports._html import render_html
from evals.reports._junit import render_junit
from evals.reports._markdown import render_markdown
from evals.reports._model import REPORT_FORMATS
from evals.reports._values import render_json

RENDERERS: dict[str, Callable[[dict[str, Any]], str]] = {
    "json": render_json,
    "md": render_markdown,
    "html": render_html,
    "junit": render_junit,
}
assert RENDERERS.keys() == REPORT_FORMATS.keys()  # one renderer for each format served

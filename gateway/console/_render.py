"""Templates: Jinja2 with autoescape on everything, and agent text made visible and bounded.

Every value a page shows may be an agent's or an author's (hostile): it is
HTML-escaped by autoescape (no template marks anything safe), its invisible
characters (bidi controls, zero-width, NUL: evals._visible) shown as escapes,
and cut at a bound (`show`), so a megabyte of output is a line, not a page.
"""

from __future__ import annotations

import functools
import json
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

from evals import visible
from gateway.console._data import interval_bar

__all__ = ["SHOW_LIMIT", "render", "show"]

SHOW_LIMIT = 200  # characters of one value on a page (the downloads have it whole)


def show(value: Any, limit: int = SHOW_LIMIT) -> str:
    """A value as a page shows it: text, visible, at most `limit` characters."""
    if value is None:
        return "—"
    text = value if isinstance(value, str) else str(value)
    if len(text) > limit:
        more = len(text) - limit
        text = text[:limit]
        return visible(text) + f"… ({more} more characters)"
    return visible(text)


def as_json(value: Any) -> str:
    """A JSON value as indented text (Decimals as numbers' text), for a <pre>."""
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


@functools.cache
def environment() -> Environment:
    env = Environment(
        loader=PackageLoader("gateway.console", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        # The templates ship in the package: no stat of each one on every render
        # (six a page: a fifth of the eval page's time; CHANGELOG.md, "Performance work").
        auto_reload=False,
    )
    env.filters["show"] = show
    env.globals["interval_bar"] = interval_bar
    env.filters["json"] = as_json
    from gateway.console._rows import explorer_rows  # it uses `show`, defined here

    env.globals["explorer_rows"] = explorer_rows
    return env


def render(template: str, **context: Any) -> str:
    return environment().get_template(template).render(**context)

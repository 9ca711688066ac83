"""Eval reports and comparisons (docs/evals.md, "Reports"), from the database only.

`build_report` makes the canonical report (`schema/report.schema.json`) of
one eval for an audience; `render_markdown`, `render_html` and
`render_junit` render that JSON and nothing else; `render_json` writes it
(or a comparison) as JSON text. `write_report` writes a report a piece at a
time (`CHUNKS`, each format's pieces): its cells counted in one pass and its
case rows made as they are written, so a report of any size is never held
whole. `ReportCache` keeps the rendered reports of done evals, keyed by a
digest of what each is made of (`report_key`). `compare_evals` pairs the
cells of two evals and gates on critical cases; `render_compare_markdown`
and `render_compare_html` render it (`render_comparison` by format). The
case explorer (`explore`, `explored_cell`, `changed_cells`) reads an eval's
cells a page at a time under filters. Whatever a store holds, every
renderer finishes, bounded, with unsafe characters shown as escapes
(`_values`, `_visible`).
"""

from evals.reports._cache import ReportCache, report_key
from evals.reports._compare import COMPARE_VERSION, compare_evals
from evals.reports._compare_formats import COMPARE_FORMATS, render_comparison
from evals.reports._compare_html import render_compare_html
from evals.reports._compare_markdown import render_compare_markdown
from evals.reports._explore import NO_CELL, CellQuery, changed_cells, explore, explored_cell
from evals.reports._html import render_html
from evals.reports._junit import render_junit
from evals.reports._markdown import render_markdown
from evals.reports._model import (
    AUDIENCES,
    REPORT_FORMATS,
    REPORT_VERSION,
    Audience,
    build_report,
)
from evals.reports._renderers import CHUNKS, RENDERERS, write_report
from evals.reports._values import render_json

__all__ = [
    "AUDIENCES",
    "Audience",
    "CHUNKS",
    "COMPARE_FORMATS",
    "COMPARE_VERSION",
    "CellQuery",
    "NO_CELL",
    "RENDERERS",
    "REPORT_FORMATS",
    "REPORT_VERSION",
    "ReportCache",
    "build_report",
    "changed_cells",
    "compare_evals",
    "explore",
    "explored_cell",
    "render_compare_html",
    "render_compare_markdown",
    "render_comparison",
    "render_html",
    "render_json",
    "render_junit",
    "render_markdown",
    "report_key",
    "write_report",
]

"""Each report format's renderer, by the format's name in the API and the CLI.

A format's text comes in pieces (`CHUNKS`), so a report written out
(`write_report`) is never held whole, its case rows made as they are
written; `RENDERERS` joins them, for a text served as one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from agents import frozen_gc
from evals.reports._data import open_eval
from evals.reports._html import html_chunks
from evals.reports._junit import junit_chunks
from evals.reports._markdown import markdown_chunks
from evals.reports._model import REPORT_FORMATS, check_audience, report_of
from evals.reports._values import json_chunks
from records import Store

__all__ = ["CHUNKS", "RENDERERS", "Chunks", "Render", "write_report"]

Chunks = Callable[[dict[str, Any]], Iterator[str]]
Render = Callable[[dict[str, Any]], str]

CHUNKS: dict[str, Chunks] = {
    "json": json_chunks,
    "md": markdown_chunks,
    "html": html_chunks,
    "junit": junit_chunks,
}
assert CHUNKS.keys() == REPORT_FORMATS.keys()  # one renderer for each format served


def _joined(chunks: Chunks) -> Render:
    return lambda report: "".join(chunks(report))


RENDERERS: dict[str, Render] = {form: _joined(chunks) for form, chunks in CHUNKS.items()}


def write_report(
    store: Store, eval_id: str, *, audience: str, form: str, write: Callable[[str], object]
) -> None:
    """Write the report of `eval_id` for `audience` in `form` to `write`, a piece at a
    time: its cells counted in one pass, its case rows read again as they are written,
    a page of cells at a time. NotFound for an unknown eval.

    The collector leaves the heap alive before it alone (agents.frozen_gc, as the runner
    does): a report makes many small containers, and collections that rescanned
    everything else took a quarter of a 10,000-cell report's CPU."""
    chosen = check_audience(audience)
    with frozen_gc():
        for chunk in CHUNKS[form](report_of(open_eval(store, eval_id), chosen)):
            write(chunk)

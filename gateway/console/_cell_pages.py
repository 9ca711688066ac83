"""The case explorer's console side: the filters and page of cells shown on an eval's page,
and a cell's own page (evals.reports._explore reads them, an author the public cells only).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from starlette.responses import Response

from evals.reports import NO_CELL, CellQuery, explore, explored_cell
from gateway.console._web import Web
from gateway.operations import own_eval
from gateway.web import Bearer
from records import Store
from schema.errors import NotFound, UsageError

__all__ = ["cell_page", "cells_of", "explorer_page", "explorer_query"]

INDEX_DIGITS = 9  # an index longer than this is no eval's (a plan is far smaller)


def explorer_query(web: Web) -> CellQuery:
    """The explorer's filters from the page's query string (400 for a bad one)."""
    return CellQuery.read(web.request.query_params, operator=web.who.is_operator)


def _index(text: str, eval_id: str) -> int:
    """A cell index from the path; anything else is "no such cell" (404), as a holdout
    cell is to an author."""
    if not _is_index(text):
        raise NotFound(NO_CELL.format(eval_id=eval_id))
    return int(text)


def _is_index(text: str) -> bool:
    return text.isdigit() and text.isascii() and len(text) <= INDEX_DIGITS


def cells_of(web: Web, eval_id: str, query: CellQuery) -> dict[str, Any]:
    """The explorer's page of the eval's cells (run in the service's thread: a store read)."""
    after_text = web.request.query_params.get("after", "")
    if after_text and not _is_index(after_text):
        raise UsageError("after must be a cell index (a whole number)")
    after = int(after_text) if after_text else None
    return explorer_page(web.shared.store, web.who, eval_id, query, after)


def explorer_page(
    store: Store, who: Bearer, eval_id: str, query: CellQuery, after: int | None
) -> dict[str, Any]:
    """A page of cells as the eval's page shows it, with its links' query strings."""
    page = explore(store, eval_id, query, operator=who.is_operator, after=after)
    keep = query.params()
    page["next_page"] = (
        None if page["next_after"] is None else urlencode({**keep, "after": page["next_after"]})
    )
    page["first_page"] = urlencode(keep) if after is not None else None
    page["query"] = urlencode(keep)
    return page


async def cell_page(web: Web) -> Response:
    """One cell whole: its case's input, each check's result, its output, its attempts,
    with the cells before and after it under the explorer's filters."""
    eval_id = web.request.path_params["eval"]
    query = explorer_query(web)
    shared = web.shared

    def load() -> dict[str, Any]:
        own_eval(shared.service, web.who, eval_id)
        idx = _index(web.request.path_params["idx"], eval_id)
        return explored_cell(shared.store, eval_id, idx, query, operator=web.who.is_operator)

    cell = await shared.run(load)
    return web.page("cell.html", cell=cell, query=urlencode(query.params()))

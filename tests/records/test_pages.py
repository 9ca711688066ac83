"""A listing's page from the `limit + 1` rows it read: the extra row says a next page exists,
and the cursor names the last row the page holds, never the extra one."""

from __future__ import annotations

import pytest

from records import Page
from records._pages import decode_cursor, page_of


@pytest.mark.parametrize(
    ("read", "page"),
    [
        ([], Page([], None)),
        (["a", "b"], Page(["a", "b"], None)),  # a full page, nothing after it: the last
        (["a", "b", "c"], Page(["a", "b"], "b")),
    ],
)
def test_a_page_has_a_cursor_only_when_a_row_was_left_over(
    read: list[str], page: Page[str]
) -> None:
    got = page_of(read, 2, lambda item: item.upper())
    assert got.items == page.items
    cursor = None if got.next_cursor is None else decode_cursor(got.next_cursor)
    assert cursor == (None if page.next_cursor is None else page.next_cursor.upper())

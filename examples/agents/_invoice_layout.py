"""Layout primitives of the invoice reader: lines split into positioned cells.

pypdf's layout mode keeps each text run at its horizontal position, so a
line splits into *cells* at runs of two or more spaces, and a cell's start
and end column say which table column it belongs to. Also the label
patterns that both the header and the totals readers need.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import re2

__all__ = ["ID_WORD", "TAX_ID", "Cell", "Line", "rx", "split_lines"]

_CELL = re2.compile(r"\S+(?: \S+)*")


@dataclass(frozen=True)
class Cell:
    start: int
    end: int
    text: str


@dataclass
class Line:
    page: int
    cells: list[Cell]
    used: bool = False  # consumed by the table (an item, a continuation or a header)

    @property
    def text(self) -> str:
        return "  ".join(cell.text for cell in self.cells)


def split_lines(pages: list[str]) -> list[Line]:
    """Every line of every page, split into cells at runs of 2+ spaces.

    Blank lines stay (with no cells): they end address blocks.
    """
    lines: list[Line] = []
    for page, text in enumerate(pages):
        for raw in text.splitlines():
            cells = [Cell(m.start(), m.end(), m.group(0)) for m in _CELL.finditer(raw)]
            lines.append(Line(page, cells))
    return lines


def rx(pattern: str) -> Any:
    """A case-insensitive RE2 pattern."""
    return re2.compile("(?i)" + pattern)


# "Customer no.", "VAT ID": a label word that introduces an identifier, not a name or amount.
ID_WORD = rx(r"^(?:no\b|no\.|number|id\b|#|ref|account|vat|tax|reg)")
TAX_ID = rx(
    r"^(?:vat\s*(?:id|no\.?|number|reg(?:istration)?\.?(?:\s*no\.?)?)|tax\s*(?:id|no\.?|number)|"
    r"ein|abn|tin|gst\s*(?:no\.?|number)|ust-?id(?:nr)?\.?|company\s+(?:no\.?|number))"
    r"\s*[:.#]?\s*(.+)$"
)

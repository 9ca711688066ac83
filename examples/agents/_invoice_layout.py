"""Layout primitives of the invoice reader: lines of positioned cells.

A page becomes lines (top to bottom) of *cells* (left to right): a cell is
text that stands apart from its neighbours, with its left and right edge in
points and its font size, so that "under that header" and "right-aligned
with that column" can be decided in the page's own geometry.

Lines come from positioned text runs (`_pdf_text`): runs on one baseline
make a line, and runs closer than half an em join into one cell (a word
gap), farther ones start a new cell. A vertical gap of about two lines
between lines becomes a blank line, which ends address blocks. For a page
whose fonts `_pdf_text` cannot measure, lines come from pypdf's layout text
instead (`split_lines`), split into cells at runs of two or more spaces, with
one character taken as half an em of a 10-point font.

Also the label patterns that both the header and the totals readers need.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import re2

from examples.agents._pdf_text import TextRun

__all__ = [
    "ID_WORD",
    "TAX_ID",
    "Cell",
    "Line",
    "lines_from_runs",
    "rx",
    "split_lines",
]

_CELL = re2.compile(r"\S+(?: \S+)*")
# Fallback geometry for layout text: one character column is 5 points, 10-point type.
_CHAR_POINTS = 5.0
_CHAR_SIZE = 10.0
_WORD_GAP = 0.5  # ems: runs closer than this are words of one cell
_SAME_LINE = 0.4  # ems: baselines closer than this are one line
_BLANK_LINE = 1.9  # ems: a vertical gap this large is a blank line


@dataclass(frozen=True)
class Cell:
    start: float  # left edge, points
    end: float  # right edge, points
    text: str
    size: float = _CHAR_SIZE  # font size, points: an em

    @property
    def middle(self) -> float:
        return (self.start + self.end) / 2


@dataclass
class Line:
    page: int
    cells: list[Cell]
    y: float = 0.0  # baseline, points from the page's bottom (lines run top to bottom)
    used: bool = False  # consumed by the table (an item, a continuation or a header)

    @property
    def text(self) -> str:
        return "  ".join(cell.text for cell in self.cells)

    @property
    def em(self) -> float:
        """The line's typical font size (its first cell's)."""
        return self.cells[0].size if self.cells else _CHAR_SIZE


def split_lines(text: str, page: int) -> list[Line]:
    """Lines of one page's pypdf layout text, split into cells at runs of 2+ spaces.

    Blank lines stay (with no cells): they end address blocks.
    """
    lines: list[Line] = []
    for number, raw in enumerate(text.splitlines()):
        cells = [
            Cell(m.start() * _CHAR_POINTS, m.end() * _CHAR_POINTS, m.group(0))
            for m in _CELL.finditer(raw)
        ]
        lines.append(Line(page, cells, y=-1.2 * _CHAR_SIZE * number))
    return lines


def lines_from_runs(runs: list[TextRun], page: int) -> list[Line]:
    """The page's lines, top to bottom, each a list of cells left to right."""
    rows: list[list[TextRun]] = []
    for run in sorted(runs, key=lambda r: (-r.y, r.x0)):
        if not run.text.strip() or run.size <= 0:
            continue
        if rows:
            head = rows[-1][0]
            if abs(head.y - run.y) < _SAME_LINE * min(head.size, run.size):
                rows[-1].append(run)
                continue
        rows.append([run])
    lines: list[Line] = []
    previous: TextRun | None = None
    for row in rows:
        head = row[0]
        if previous is not None:
            gap = previous.y - head.y
            if gap > _BLANK_LINE * max(previous.size, head.size):
                lines.append(Line(page, [], y=(previous.y + head.y) / 2))
        lines.append(Line(page, _cells(sorted(row, key=lambda r: r.x0)), y=head.y))
        previous = head
    return lines


def _cells(row: list[TextRun]) -> list[Cell]:
    cells: list[Cell] = []
    for run in row:
        text = " ".join(run.text.split())
        if cells:
            last = cells[-1]
            gap = run.x0 - last.end
            if gap < _WORD_GAP * min(last.size, run.size):
                joiner = "" if gap < 0.1 * run.size else " "
                cells[-1] = Cell(
                    last.start, max(last.end, run.x1), last.text + joiner + text, last.size
                )
                continue
        cells.append(Cell(run.x0, run.x1, text, run.size))
    return cells


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

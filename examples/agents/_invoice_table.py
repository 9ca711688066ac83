"""The line-item table of an invoice, read in the geometry of its header row.

- **The header row** is a line whose every cell (at most one aside) names a
  column: a position (`#`, `Pos.`, `No.`, `Line`), an item code (`SKU`,
  `Art. No.`, `Part No.`, `Product code`, `Ref.`), a description
  (`Description`, `Details`), an ambiguous text column (`Item`, `Product`,
  `Article`), a quantity (`Qty`, `Units`, `Hours`), a unit of measure
  (`UoM`, `Unit`), a unit price (`Price`, `Rate`, `Each`, `Unit cost`), a
  line amount (`Amount`, `Total`, `Ext. price`) or a tax rate (`VAT %`).
  Currency notes such as `(EUR)` are ignored.
- **Each row's cells go to columns** by an order-keeping alignment: cells
  left to right map to columns left to right, a number only to a numeric
  column (and each numeric column takes one cell), and among the mappings
  that allow, the one whose cells sit closest to their header cells (by left
  edge, right edge or middle, whichever fits: text is left-aligned, numbers
  right-aligned, some tables centre) wins. Several cells may share a text
  column. So an all-digit SKU stays in its code column, and a price a few
  points off its header still lands in the price column.
- **Ambiguous columns are settled by their content**, once the table is
  read: small whole numbers counting up are positions, single code-shaped
  tokens (`KO-1180`, `43001`) are SKUs, several words are the description.
- A text-only line under a text column continues the row above it (a
  wrapped description); the header may repeat on every page, and a page
  without one continues the previous page's table; a totals label ends it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal

import re2

from examples.agents._invoice_layout import Cell, Line, rx
from examples.agents._invoice_values import CURRENCY_CODES, NumberStyle, parse_amount

__all__ = ["Item", "read_table"]

_HEADER_KINDS = [
    ("pos", rx(r"^(?:#|no\.?|nr\.?|n°|pos\.?|position|line|ln\.?|line\s*no\.?|s/?n)$")),
    (
        "sku",
        rx(
            r"^(?:sku|item\s*(?:no\.?|number|code|#|id|ref\.?)|code|product\s*(?:code|no\.?|id|#)|"
            r"art(?:icle)?\.?\s*(?:no\.?|number|#|nr\.?|code)|part\s*(?:no\.?|number|#)|"
            r"ref\.?|reference|cat(?:alog(?:ue)?)?\.?\s*(?:no\.?|#)|model|ean|upc|barcode)$"
        ),
    ),
    (
        "description",
        rx(
            r"^(?:description|(?:item|product|article|service)\s+(?:description|details)|details|"
            r"designation|services?|particulars|description\s+of\s+(?:goods|services))$"
        ),
    ),
    ("text", rx(r"^(?:items?|products?|articles?|goods|name|(?:item|product)\s+name)$")),
    (
        "qty",
        rx(
            r"^(?:qty\.?|quantity|quant\.?|units|hours|hrs\.?|no\.\s*of\s*units|count|pcs\.?|days)$"
        ),
    ),
    ("unit", rx(r"^(?:unit|uom|u/m|unit\s+of\s+measure|measure)$")),
    (
        "price",
        rx(
            r"^(?:unit\s*price|price(?:\s*(?:/|per)\s*unit)?|rate|unit\s*cost|cost|each|unit\s*net|"
            r"net\s*price|unit\s*rate|hourly\s*rate|price\s*each|list\s*price)$"
        ),
    ),
    (
        "amount",
        rx(
            r"^(?:amount|line\s*total|total|net\s*amount|net|sum|ext\.?\s*price|extended(?:\s*price)?|"
            r"ext\.?\s*amount|line\s*amount|total\s*price|net\s*total|value|net\s*value|subtotal)$"
        ),
    ),
    (
        "rate",
        rx(
            r"^(?:vat|tax|vat\s*%|tax\s*%|vat\s*rate|tax\s*rate|%|gst|gst\s*%|disc\.?\s*%?|"
            r"discount\s*%?)$"
        ),
    ),
]
_HEADER_NOISE = re2.compile(
    r"\s*(?:\([^)]*\)|\b(?:" + "|".join(sorted(CURRENCY_CODES)) + r")\b|[$\x{20ac}\x{a3}])\s*"
)
_NUMERIC = frozenset({"qty", "price", "amount", "rate"})
_TEXTUAL = frozenset({"pos", "sku", "description", "text", "other"})
_PERCENT = re2.compile(r"^[-+]?\d{1,3}(?:[.,]\d+)?\s?%$")
_CODE = re2.compile(r"^[A-Za-z0-9][A-Za-z0-9._/#:-]*$")
_SMALL_INT = re2.compile(r"^\d{1,3}\.?$")
_SKU_PREFIX = re2.compile(r"^([A-Z0-9][A-Z0-9._/-]*\d[A-Z0-9._/-]*)\s+(\S.*)$")
_NOISE = rx(
    r"^(?:\(?continued|page\s+\d+|carried\s+forward|brought\s+forward|transfer|"
    r"subtotal\s+(?:this|page)|balance\s+(?:carried|brought))"
)
# A totals label ("Subtotal", "Loyalty discount", "plus VAT 20%", "Balance due"): a short
# cell with one of these words ends the table (unless its line is a full item row).
_TOTALS = rx(
    r"\b(?:sub[\s-]?total|total|amount\s+due|balance\s+due|discount|rebate|credit|"
    r"vat|tax|gst|hst|sales\s+tax)\b"
)
_MAX_LABEL_WORDS = 6
_INF = float("inf")


@dataclass(frozen=True)
class _Column:
    kind: str
    start: float
    end: float

    @property
    def middle(self) -> float:
        return (self.start + self.end) / 2


@dataclass
class Item:
    sku: str | None
    description: str
    quantity: Decimal | None
    unit_price: Decimal | None
    amount: Decimal | None
    extra_lines: list[str] = field(default_factory=list)  # a wrapped description's rest


@dataclass
class _Row:
    """One printed row: each column's texts, as assigned."""

    table: _Table
    cells: dict[int, list[str]]
    numbers: dict[str, Decimal]
    extra: dict[int, list[str]] = field(default_factory=dict)


@dataclass
class _Table:
    columns: list[_Column]

    @property
    def signature(self) -> tuple[str, ...]:
        return tuple(column.kind for column in self.columns)


def _header_kind(text: str) -> str | None:
    label = " ".join(_HEADER_NOISE.sub(" ", text).split()) or text.strip()
    return next((kind for kind, pattern in _HEADER_KINDS if pattern.search(label)), None)


def _header(line: Line) -> list[_Column] | None:
    if len(line.cells) < 3:
        return None
    columns: list[_Column] = []
    unknown = 0
    for cell in line.cells:
        kind = _header_kind(cell.text)
        if kind is None:
            unknown += 1
            kind = "other"
        columns.append(_Column(kind, cell.start, cell.end))
    kinds = {c.kind for c in columns}
    if unknown > (1 if len(columns) >= 5 else 0):
        return None
    if "amount" not in kinds or not kinds & {"qty", "price"}:
        return None
    if not kinds & {"sku", "description", "text", "pos"}:
        return None
    return columns


def _is_totals_line(line: Line) -> bool:
    return any(
        len(cell.text.split()) <= _MAX_LABEL_WORDS and _TOTALS.search(cell.text)
        for cell in line.cells[:3]
    )


def _fits(cell: Cell, column: _Column, style: NumberStyle) -> bool:
    """Whether `cell` can stand in `column`: a numeric column takes only a number."""
    text = cell.text
    if column.kind == "rate":
        return bool(_PERCENT.match(text)) or parse_amount(text, style) is not None
    if column.kind in _NUMERIC:
        return parse_amount(text, style, allow_unit=column.kind == "qty") is not None
    if column.kind == "unit":
        return len(text) <= 12 and not any(ch.isdigit() for ch in text)
    return True


def _distance(cell: Cell, column: _Column) -> float:
    em = max(cell.size, 1.0)
    edges = min(
        abs(cell.start - column.start), abs(cell.end - column.end), abs(cell.middle - column.middle)
    )
    return edges / em


def _assign(
    cells: Sequence[Cell], columns: Sequence[_Column], style: NumberStyle
) -> list[int] | None:
    """The cheapest order-keeping map of cells to columns (see the module doc), or None."""
    n, m = len(cells), len(columns)
    fits = [[_fits(cell, column, style) for column in columns] for cell in cells]
    numbers = [parse_amount(cell.text, style) is not None for cell in cells]
    cost = [
        [
            _INF
            if not fits[i][k]
            else _distance(cells[i], columns[k])
            # a bare number rarely is a description: a small nudge towards code columns
            + (0.5 if numbers[i] and columns[k].kind == "description" else 0.0)
            for k in range(m)
        ]
        for i in range(n)
    ]
    # best[i][k]: the cost of placing cells[:i+1] with cell i in column k
    best = [[_INF] * m for _ in range(n)]
    back = [[-1] * m for _ in range(n)]
    for k in range(m):
        best[0][k] = cost[0][k]
    for i in range(1, n):
        for k in range(m):
            if cost[i][k] == _INF:
                continue
            shared = columns[k].kind in _TEXTUAL and best[i - 1][k] < _INF
            options = [(best[i - 1][j], j) for j in range(k) if best[i - 1][j] < _INF]
            if shared:
                options.append((best[i - 1][k], k))
            if not options:
                continue
            value, j = min(options)
            best[i][k], back[i][k] = value + cost[i][k], j
    final = min(range(m), key=lambda k: best[n - 1][k])
    if best[n - 1][final] == _INF:
        return None
    path = [final]
    for i in range(n - 1, 0, -1):
        path.append(back[i][path[-1]])
    path.reverse()
    return path


def _row(line: Line, table: _Table, style: NumberStyle) -> _Row | None:
    path = _assign(line.cells, table.columns, style)
    if path is None:
        return None
    row = _Row(table, {}, {})
    for cell, index in zip(line.cells, path, strict=True):
        column = table.columns[index]
        if column.kind in _NUMERIC:
            if column.kind != "rate":
                number = parse_amount(cell.text, style, allow_unit=column.kind == "qty")
                if number is not None:
                    row.numbers[column.kind] = number
        elif column.kind != "unit":
            row.cells.setdefault(index, []).append(cell.text)
    if "amount" not in row.numbers or not row.cells:
        return None
    if any(_NOISE.search(" ".join(texts)) for texts in row.cells.values()):
        return None
    return row


def _continuation(line: Line, row: _Row, style: NumberStyle) -> bool:
    """A text-only line whose cells start under text columns continues `row`."""
    columns = row.table.columns
    placed: list[tuple[int, str]] = []
    for cell in line.cells:
        if parse_amount(cell.text, style) is not None or _NOISE.search(cell.text):
            return False
        near = [
            (abs(cell.start - column.start), index)
            for index, column in enumerate(columns)
            if column.kind in _TEXTUAL and column.kind != "pos"
        ]
        if not near:
            return False
        distance, index = min(near)
        if distance > 1.5 * cell.size:
            return False
        placed.append((index, cell.text))
    for index, text in placed:
        row.extra.setdefault(index, []).append(text)
    return bool(placed)


def read_table(lines: list[Line], style: NumberStyle) -> list[Item]:
    rows: list[_Row] = []
    table: _Table | None = None
    open_table = False
    page = -1
    for line in lines:
        if line.page != page:
            page = line.page
            if not open_table:
                table = None
        header = _header(line)
        if header is not None:
            table, open_table = _Table(header), True
            line.used = True
            continue
        if not open_table or table is None or not line.cells:
            continue
        row = _row(line, table, style)
        full = row is not None and len(row.numbers.keys() & {"qty", "price", "amount"}) == 3
        # A full row (quantity, price, amount) is an item even if its text starts
        # like a totals label ("Discount vouchers, pack of 10"); otherwise a totals
        # label ends the table.
        if row is not None and (full or not _is_totals_line(line)):
            rows.append(row)
            line.used = True
        elif _is_totals_line(line):
            open_table = False
        elif rows and rows[-1].table is table and _continuation(line, rows[-1], style):
            line.used = True
    return _items(rows)


# -- settling the columns by content -------------------------------------------------


def _share(values: list[str], test: Callable[[str], bool]) -> float:
    return sum(1 for value in values if test(value)) / len(values) if values else 0.0


def _coded(value: str) -> bool:
    """Shaped like an item code: one token with a digit ("KO-1180", "43001", "FX631841")."""
    return bool(_CODE.match(value)) and any(ch.isdigit() for ch in value)


def _wordy(value: str) -> bool:
    return len(value.split()) >= 2 and any(ch.isalpha() for ch in value)


def _roles(rows: list[_Row]) -> dict[int, str]:
    """For one table (rows under headers of the same kinds): column index -> pos, sku, description.

    A header's own word decides where it is unambiguous ("SKU", "Description");
    the content decides the rest: small numbers counting up are positions, the
    most code-like column is the SKU, the wordiest the description.
    """
    columns = rows[0].table.columns
    textual = [i for i, c in enumerate(columns) if c.kind in _TEXTUAL]
    values = {i: [" ".join(r.cells[i]) for r in rows if i in r.cells] for i in textual}
    roles: dict[int, str] = {}
    for index in textual:
        found = values[index]
        if _share(found, lambda v: bool(_SMALL_INT.match(v))) >= 0.8 and _counts_up(found):
            roles[index] = "pos"
    candidates = [i for i in textual if i not in roles]
    skus = [i for i in candidates if columns[i].kind == "sku"]
    descriptions = [i for i in candidates if columns[i].kind == "description"]
    if not skus:
        coded = [
            i for i in candidates if i not in descriptions and _share(values[i], _coded) >= 0.6
        ]
        coded.sort(key=lambda i: (-_share(values[i], _coded), _share(values[i], _wordy)))
        skus = coded[:1]
    if skus:
        roles[skus[0]] = "sku"
    if not descriptions:
        wordy = [i for i in candidates if i not in roles and columns[i].kind != "other"]
        wordy.sort(key=lambda i: -_share(values[i], _wordy))
        descriptions = wordy[:1]
    for index in descriptions[:1]:
        roles[index] = "description"
    return roles


def _counts_up(values: list[str]) -> bool:
    numbers = [int(v.rstrip(".")) for v in values if v.rstrip(".").isdigit()]
    return len(numbers) >= 1 and all(b > a for a, b in zip(numbers, numbers[1:], strict=False))


def _items(rows: list[_Row]) -> list[Item]:
    groups: dict[tuple[str, ...], list[_Row]] = {}
    for row in rows:
        groups.setdefault(row.table.signature, []).append(row)
    roles = {signature: _roles(group) for signature, group in groups.items()}
    items: list[Item] = []
    for row in rows:
        role = roles[row.table.signature]
        sku_index = next((i for i, r in role.items() if r == "sku"), None)
        description_index = next((i for i, r in role.items() if r == "description"), None)
        sku = " ".join(row.cells.get(sku_index, [])) if sku_index is not None else ""
        description = (
            " ".join(row.cells.get(description_index, [])) if description_index is not None else ""
        )
        extra = row.extra.get(description_index, []) if description_index is not None else []
        if not sku and description and sku_index is None:
            split = _SKU_PREFIX.match(description)
            if split:
                sku, description = split.group(1), split.group(2)
        if not (sku or description):
            continue
        numbers = row.numbers
        item = Item(
            sku or None,
            description,
            numbers.get("qty"),
            numbers.get("price"),
            numbers["amount"],
            extra_lines=list(extra),
        )
        items.append(_complete(item))
    return items


def _complete(item: Item) -> Item:
    """Fill a missing quantity or unit price from the other numbers on the line."""
    qty, price, amount = item.quantity, item.unit_price, item.amount
    assert amount is not None
    if qty is None and price:
        ratio = amount / price
        qty = ratio if ratio == ratio.to_integral_value() else Decimal(1)
    if price is None and qty:
        price = (amount / qty).quantize(Decimal("0.01"))
    item.quantity, item.unit_price = qty if qty is not None else Decimal(1), price or amount
    return item
